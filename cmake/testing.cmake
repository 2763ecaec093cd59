# Test helpers: one function per tier so every test gets its label, timeout and MPI settings
# from one place.
include(GoogleTest)
find_package(GTest QUIET)
st_require(GTest_FOUND "GoogleTest" "Install libgtest-dev, or set GTest_ROOT.")

# One thread per test process (OMP_NUM_THREADS=1: libtorch's intra-op threads, shardtune's
# cpu_threads_per_rank, and OpenBLAS's pool, which OpenBLAS sizes from it as it loads), set by
# st_claim_cores: a test claims one core of ctest's, or two for 2+ ranks, which take one each. With a
# thread per core each process also started OpenBLAS's pool, whose idle workers poll between GEMMs
# and hold the core the test beside needs: oracle_models_smollm2_train_export alone used 81 s of
# CPU in 60 s, and 61 s in 60 s with one OpenBLAS thread (2026-12-03).
# OMP_WAIT_POLICY=PASSIVE: an OpenMP worker that spins after its region holds a core that the
# process's OpenBLAS threads, or the other test, wait for. Measured on 2 cores: one SmolLM2 DPO step
# (512 tokens) 26 s spinning, 15 s passive (where processes ran a thread per core).
set(ST_TEST_THREADS_ENVIRONMENT OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE)
# Open MPI as root (CI containers) and more ranks than cores (2-core CI machines). The ob1 PML:
# the test machines have no Omni-Path or libfabric, so the cm PML is never chosen, but probing its
# MTLs made every rank's MPI_Init wait 0.22 s (one pins itself and naps to calibrate a clock;
# with ob1 named, 0.02-0.04 s; docs/performance.md, "Start-up"). Users' launches keep Open MPI's
# own choice.
set(ST_MPI_TEST_ENVIRONMENT
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_pml=ob1)

# Bit-identity claims run twice: with the kernels this machine's OpenBLAS picks, and with
# another core type (OPENBLAS_CORETYPE), so a claim that holds for one set of kernels only
# cannot pass. The other: Haswell where OpenBLAS picks an AVX-512 kernel, Nehalem where it picks
# Sandybridge, else Sandybridge (AVX without FMA, so rounding unlike any FMA kernel's). Set
# ST_OTHER_BLAS_CORETYPE to choose (empty: no second run). "This machine's" core is the one the
# tests inherit: an OPENBLAS_CORETYPE already set in the environment (a site's or a shell's pin)
# counts, since ctest passes it on to every first run.
function(st_detect_blas_cores python)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env OPENBLAS_VERBOSE=2 ${python} -c "import torch"
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX MATCH "Core: ([A-Za-z0-9_]+)" found "${out}${err}")
  set(default "${CMAKE_MATCH_1}")
  # Where OpenBLAS fell back to its generic kernels, shardtune restarts on the best core the CPU
  # runs (lib/util/blas_kernels.h, the same rule), unless OPENBLAS_CORETYPE is set: that is the
  # default its tests run, and the second core must differ from it.
  if(default STREQUAL "Prescott" AND NOT DEFINED ENV{OPENBLAS_CORETYPE} AND EXISTS /proc/cpuinfo)
    file(STRINGS /proc/cpuinfo _st_flags REGEX "^flags" LIMIT_COUNT 1)
    set(_st_units "")
    foreach(unit avx2 fma avx512f avx512cd avx512bw avx512dq avx512vl)
      if(_st_flags MATCHES " ${unit}( |$)")
        list(APPEND _st_units ${unit})
      endif()
    endforeach()
    list(LENGTH _st_units _st_count)
    if(_st_count EQUAL 7)
      set(default SkylakeX)
    elseif("avx2" IN_LIST _st_units AND "fma" IN_LIST _st_units)
      set(default Haswell)
    endif()
    if(NOT default STREQUAL "Prescott")
      set(default_source " (shardtune's choice: OpenBLAS alone runs Prescott)")
      # The test programs that are not the shardtune binary (gtest, MPI tests) run it too.
      set(ST_MPI_TEST_ENVIRONMENT ${ST_MPI_TEST_ENVIRONMENT} OPENBLAS_CORETYPE=${default} PARENT_SCOPE)
      set(ST_BLAS_TEST_ENVIRONMENT OPENBLAS_CORETYPE=${default} PARENT_SCOPE)
    endif()
  endif()
  if(default MATCHES "^(SkylakeX|Cooperlake|SapphireRapids)$")
    set(other Haswell)
  elseif(default STREQUAL "Sandybridge")
    set(other Nehalem)
  elseif(default)
    set(other Sandybridge)
  else()
    set(other "")
    message(STATUS "BLAS: not OpenBLAS (no 'Core:' line), so bit-identity tests run once")
  endif()
  set(ST_DEFAULT_BLAS_CORETYPE "${default}" PARENT_SCOPE)
  # Not cached unless given with -D: a reconfigure in another environment picks again.
  if(DEFINED CACHE{ST_OTHER_BLAS_CORETYPE})
    set(other "$CACHE{ST_OTHER_BLAS_CORETYPE}")
  else()
    set(ST_OTHER_BLAS_CORETYPE "${other}" PARENT_SCOPE)
  endif()
  if(DEFINED ENV{OPENBLAS_CORETYPE})
    set(default_source " (pinned by OPENBLAS_CORETYPE=$ENV{OPENBLAS_CORETYPE} in this environment)")
  endif()
  message(STATUS "BLAS: OpenBLAS core ${default}${default_source}; bit-identity tests also run under '${other}'")
endfunction()

# The names a test is registered under: <name>, and <name>_other_blas when it is BIT_EXACT and
# a second core type is set (its properties get the label other_blas and that core type).
function(st_test_variants out name bit_exact)
  set(names ${name})
  if(bit_exact AND ST_OTHER_BLAS_CORETYPE)
    list(APPEND names ${name}_other_blas)
  endif()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

# Labels <label> (+ bit_exact) and, on the twin, OPENBLAS_CORETYPE.
function(st_label_variant test label bit_exact)
  set_property(TEST ${test} PROPERTY LABELS ${label})
  if(bit_exact)
    set_property(TEST ${test} APPEND PROPERTY LABELS bit_exact)
  endif()
  if(test MATCHES "_other_blas$")
    set_property(TEST ${test} APPEND PROPERTY LABELS other_blas)
    set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT OPENBLAS_CORETYPE=${ST_OTHER_BLAS_CORETYPE})
  endif()
endfunction()

function(st_add_test_executable target)
  add_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE shardtune_lib GTest::gtest)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  st_precompiled_headers(${target})
endfunction()

# Unit tests: one ctest entry per executable, its GoogleTest cases run in one process. One entry
# per case (gtest_discover_tests, until 2026-12-03) paid a process start per case, libtorch loaded
# each time (~0.45 s): 194 s of the tier's 227 s of test time for 409 cases. Each run writes
# GoogleTest's report (gtest-reports/<entry>.xml), from which test.sh counts the cases that passed,
# failed and skipped (scripts/tier_summary.py); a failing run's output names its failed cases.
# BIT_EXACT <gtest filter>: the cases that assert bit-identity, also run as one entry
# <target>_bit_exact_other_blas under the other core type.
set(ST_GTEST_REPORTS ${CMAKE_BINARY_DIR}/gtest-reports)

# The cores a test keeps busy, as ctest's resource `cpus` (./scripts/test.sh gives ctest one slot
# per core): 1, or 2 for a test of 2+ ranks (at most 2, so that any machine test.sh runs on has
# the slots); and its processes' threads (ST_TEST_THREADS_ENVIRONMENT). Every test is registered
# through it but the cuda tier's discovered cases, which name their claim (tests/cuda). The Slurm
# lane (st_slurm_lane) claims none: its tests mostly wait on Slurm's timers and run beside the
# CPU-bound ones. Without a resource spec (a plain `ctest -jN`) ctest ignores it.
function(st_claim_cores test cores)
  if(cores GREATER 2)
    set(cores 2)
  endif()
  set_tests_properties(${test} PROPERTIES RESOURCE_GROUPS "cpus:${cores}")
  set_property(TEST ${test} APPEND PROPERTY ENVIRONMENT ${ST_TEST_THREADS_ENVIRONMENT})
endfunction()

# The Slurm lane: the tests that start a real Slurm (one node, or several test hosts), one at a
# time (one cluster), started first (COST) and claiming no core. At -j2 with no resources one of
# the two slots sat in Slurm's waits (about 660 s of the lane, 3 cores in 4 busy).
function(st_slurm_lane)
  set_property(TEST ${ARGN} PROPERTY RESOURCE_GROUPS)
  set_tests_properties(${ARGN} PROPERTIES RESOURCE_LOCK slurm COST 1000 SKIP_RETURN_CODE 77)
endfunction()

# st_add_gtest(<entry> <target> <bit_exact> <environment> [arguments...])
function(st_add_gtest name target bit_exact environment)
  add_test(NAME ${name} COMMAND ${target} --gtest_output=xml:${ST_GTEST_REPORTS}/${name}.xml ${ARGN})
  set_tests_properties(${name} PROPERTIES TIMEOUT 300 ENVIRONMENT "${environment}")
  st_claim_cores(${name} 1)
  st_label_variant(${name} unit "${bit_exact}")
endfunction()

function(st_add_unit_test target)
  cmake_parse_arguments(ARG "" "BIT_EXACT" "" ${ARGN})
  st_add_test_executable(${target} ${ARG_UNPARSED_ARGUMENTS})
  target_link_libraries(${target} PRIVATE GTest::gtest_main)
  st_add_gtest(${target} ${target} FALSE "ST_EXPECTED_BLAS_CORETYPE=${ST_DEFAULT_BLAS_CORETYPE};${ST_BLAS_TEST_ENVIRONMENT}")
  if(ARG_BIT_EXACT AND ST_OTHER_BLAS_CORETYPE)
    set(twin ${target}_bit_exact_other_blas)
    st_add_gtest(${twin} ${target} TRUE
      "ST_DEFAULT_BLAS_CORETYPE=${ST_DEFAULT_BLAS_CORETYPE};ST_EXPECTED_BLAS_CORETYPE=${ST_OTHER_BLAS_CORETYPE}"
      --gtest_filter=${ARG_BIT_EXACT})
  endif()
endfunction()

# st_add_mpi_test(<name> <target> NP <ranks> [TIMEOUT s] [BIT_EXACT] [ARGS ...]): mpirun -np <ranks>.
function(st_add_mpi_test name target)
  cmake_parse_arguments(ARG "BIT_EXACT" "NP;TIMEOUT" "ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  st_test_variants(names ${name} "${ARG_BIT_EXACT}")
  foreach(test IN LISTS names)
    add_test(NAME ${test}
      COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} --oversubscribe
              ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
    set_tests_properties(${test} PROPERTIES TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${ARG_NP}
                                            ENVIRONMENT "${ST_MPI_TEST_ENVIRONMENT}")
    st_claim_cores(${test} ${ARG_NP})
    st_label_variant(${test} mpi "${ARG_BIT_EXACT}")
  endforeach()
endfunction()

# st_add_script_test(<name> LABEL <label> [TIMEOUT s] [BIT_EXACT] COMMAND ...): a shell-driven
# check (e2e, abort tests).
# ST_TEST_NAME names the test in the tolerance records (tests/support/tolerance_log.py);
# tests/e2e/harness.sh sets its own, script/case.
function(st_add_script_test name)
  cmake_parse_arguments(ARG "BIT_EXACT" "LABEL;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  # One command of the script (harness.sh `run`) may take two thirds of the test's time: a hung
  # one is stopped while its output can still be printed.
  math(EXPR run_limit "${ARG_TIMEOUT} * 2 / 3")
  st_test_variants(names ${name} "${ARG_BIT_EXACT}")
  foreach(test IN LISTS names)
    add_test(NAME ${test} COMMAND ${ARG_COMMAND})
    set_tests_properties(${test} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
      ENVIRONMENT "${ST_MPI_TEST_ENVIRONMENT};ST_RUN_TIMEOUT_S=${run_limit};ST_MPIEXEC=${MPIEXEC_EXECUTABLE};ST_SOURCE_DIR=${CMAKE_SOURCE_DIR};ST_REFERENCE_PYTHON=${ST_REFERENCE_PYTHON};ST_TEST_NAME=${test};ST_TEST_INPUTS_DIR=${CMAKE_BINARY_DIR}/test-inputs")
    st_claim_cores(${test} 1)
    st_label_variant(${test} ${ARG_LABEL} "${ARG_BIT_EXACT}")
  endforeach()
endfunction()

# The independent Python reference (tests/reference) needs a python3 that imports torch:
# Debian's python3-torch, or the CUDA torch of a GPU machine's Python.
foreach(candidate /usr/bin/python3 python3)
  execute_process(COMMAND ${candidate} -c "import torch" RESULT_VARIABLE _st_no_torch
                  OUTPUT_QUIET ERROR_QUIET)
  if(_st_no_torch EQUAL 0)
    set(ST_REFERENCE_PYTHON ${candidate})
    break()
  endif()
endforeach()
st_require(ST_REFERENCE_PYTHON "python3 with torch (for tests/reference)"
  "Install python3-torch (scripts/install-deps.sh does), or configure with -DST_BUILD_TESTS=OFF.")
st_detect_blas_cores(${ST_REFERENCE_PYTHON})
set(ST_REFERENCE_DIR ${CMAKE_BINARY_DIR}/reference_fixtures)
add_test(NAME reference_fixtures
         COMMAND ${ST_REFERENCE_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/make_fixtures.py
                 ${ST_REFERENCE_DIR})
set_tests_properties(reference_fixtures PROPERTIES LABELS unit FIXTURES_SETUP reference
                                                   TIMEOUT 300)
st_claim_cores(reference_fixtures 1)

# The oracles (label `oracle`): the tools users run today, in the tests' Python environment
# (tests/python/requirements.txt, made by scripts/install-deps.sh --with-test-python), and the
# real vocabularies they read (tests/tokenizer/vocabularies.sh unpacks them once, the fixture
# `vocabularies`). Without either a test skips (77) saying how to get it; ST_REQUIRE_ORACLES=1 in
# the environment (./scripts/test.sh sets it) makes that a failure.
execute_process(COMMAND ${CMAKE_SOURCE_DIR}/scripts/python-env-path.sh OUTPUT_VARIABLE _st_python_env
                OUTPUT_STRIP_TRAILING_WHITESPACE)
set(ST_ORACLE_PYTHON "${_st_python_env}/bin/python" CACHE FILEPATH
    "Python of the tests' oracle environment (scripts/install-deps.sh --with-test-python)")
set(ST_VOCABULARIES ${CMAKE_BINARY_DIR}/vocabularies)
add_test(NAME vocabularies COMMAND ${CMAKE_SOURCE_DIR}/tests/tokenizer/vocabularies.sh unpack ${ST_VOCABULARIES})
set_tests_properties(vocabularies PROPERTIES LABELS oracle FIXTURES_SETUP vocabularies TIMEOUT 120
                                             ENVIRONMENT "ST_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
st_claim_cores(vocabularies 1)

# st_add_oracle_test(<name> [TIMEOUT s] COMMAND ...): a script test against an oracle; its command
# gets the vocabularies' folder from ST_VOCABULARIES and the Python from ST_ORACLE_PYTHON.
function(st_add_oracle_test name)
  st_add_script_test(${name} LABEL oracle ${ARGN})
  set_property(TEST ${name} APPEND PROPERTY ENVIRONMENT
    "ST_ORACLE_PYTHON=${ST_ORACLE_PYTHON}" "ST_VOCABULARIES=${ST_VOCABULARIES}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED vocabularies)
endfunction()

# Unit tests that read the reference fixtures.
function(st_add_reference_test target)
  st_add_test_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE GTest::gtest_main)
  st_add_gtest(${target} ${target} FALSE "ST_REFERENCE_DIR=${ST_REFERENCE_DIR};${ST_BLAS_TEST_ENVIRONMENT}")
  set_tests_properties(${target} PROPERTIES FIXTURES_REQUIRED reference)
endfunction()
