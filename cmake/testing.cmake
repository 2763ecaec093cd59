# Test helpers: one function per tier so every test gets its label, timeout and MPI settings
# from one place.
include(GoogleTest)
find_package(GTest QUIET)
st_require(GTest_FOUND "GoogleTest" "Install libgtest-dev, or set GTest_ROOT.")

# Open MPI as root (CI containers) and more ranks than cores (2-core CI machines).
set(ST_MPI_TEST_ENVIRONMENT
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
  OMPI_MCA_mpi_yield_when_idle=1)

function(st_add_test_executable target)
  add_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE shardtune_lib GTest::gtest)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
endfunction()

# Unit tests: one ctest entry per GoogleTest case.
function(st_add_unit_test target)
  st_add_test_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE GTest::gtest_main)
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS unit TIMEOUT 120)
endfunction()

# st_add_mpi_test(<name> <target> NP <ranks> [TIMEOUT s] [ARGS ...]): mpirun -np <ranks>.
function(st_add_mpi_test name target)
  cmake_parse_arguments(ARG "" "NP;TIMEOUT" "ARGS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name}
    COMMAND ${MPIEXEC_EXECUTABLE} ${MPIEXEC_NUMPROC_FLAG} ${ARG_NP} --oversubscribe
            ${MPIEXEC_PREFLAGS} $<TARGET_FILE:${target}> ${MPIEXEC_POSTFLAGS} ${ARG_ARGS})
  set_tests_properties(${name} PROPERTIES LABELS mpi TIMEOUT ${ARG_TIMEOUT} PROCESSORS ${ARG_NP}
                                          ENVIRONMENT "${ST_MPI_TEST_ENVIRONMENT}")
endfunction()

# st_add_script_test(<name> LABEL <label> COMMAND ...): a shell-driven check (e2e, abort tests).
function(st_add_script_test name)
  cmake_parse_arguments(ARG "" "LABEL;TIMEOUT" "COMMAND" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_test(NAME ${name} COMMAND ${ARG_COMMAND})
  set_tests_properties(${name} PROPERTIES LABELS ${ARG_LABEL} TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "${ST_MPI_TEST_ENVIRONMENT};ST_MPIEXEC=${MPIEXEC_EXECUTABLE};ST_SOURCE_DIR=${CMAKE_SOURCE_DIR};ST_REFERENCE_PYTHON=${ST_REFERENCE_PYTHON}")
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
set(ST_REFERENCE_DIR ${CMAKE_BINARY_DIR}/reference_fixtures)
add_test(NAME reference_fixtures
         COMMAND ${ST_REFERENCE_PYTHON} ${CMAKE_SOURCE_DIR}/tests/reference/make_fixtures.py
                 ${ST_REFERENCE_DIR})
set_tests_properties(reference_fixtures PROPERTIES LABELS unit FIXTURES_SETUP reference
                                                   TIMEOUT 300)

# Unit tests that read the reference fixtures.
function(st_add_reference_test target)
  st_add_test_executable(${target} ${ARGN})
  target_link_libraries(${target} PRIVATE GTest::gtest_main)
  gtest_discover_tests(${target} DISCOVERY_MODE PRE_TEST PROPERTIES LABELS unit TIMEOUT 120
    FIXTURES_REQUIRED reference ENVIRONMENT "ST_REFERENCE_DIR=${ST_REFERENCE_DIR}")
endfunction()
