# Precompiled libtorch headers. Parsing <ATen/ATen.h> alone takes ~19 s per translation unit on
# a 2-core machine, most of a from-scratch build of ~230 objects; with the headers precompiled
# once per kind of object (position-independent for the lib/ layers, plain for programs and
# tests) a unit starts in ~2 s. -DST_PRECOMPILED_HEADERS=OFF builds without.
option(ST_PRECOMPILED_HEADERS "Precompile libtorch's headers once per kind of object" ON)

# st_precompiled_headers(<target>): the target's C++ sources start from the shared precompiled
# headers (the first target of its kind builds them, the others reuse them).
function(st_precompiled_headers target)
  if(NOT ST_PRECOMPILED_HEADERS)
    return()
  endif()
  get_target_property(pic ${target} POSITION_INDEPENDENT_CODE)
  set(kind plain)
  if(pic)
    set(kind pic)
  endif()
  get_property(donor GLOBAL PROPERTY ST_PRECOMPILED_HEADERS_${kind})
  if(donor)
    target_precompile_headers(${target} REUSE_FROM ${donor})
  else()
    target_precompile_headers(${target} PRIVATE
      "$<$<COMPILE_LANGUAGE:CXX>:<ATen/ATen.h>>"
      "$<$<COMPILE_LANGUAGE:CXX>:<torch/csrc/autograd/custom_function.h>>")
    set_property(GLOBAL PROPERTY ST_PRECOMPILED_HEADERS_${kind} ${target})
  endif()
  target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Winvalid-pch>)
endfunction()
