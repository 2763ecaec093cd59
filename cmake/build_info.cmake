# build_config.h carries the ST_* options into C++; git_info.cpp carries the git sha (+dirty)
# and is regenerated on every build, so a rebuild after a commit never reports a stale sha.

set(ST_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
foreach(flag ST_HAVE_CUDA ST_TORCH_CUDA ST_ENABLE_NVTX)
  if(${flag})
    set(${flag}_VALUE 1)
  else()
    set(${flag}_VALUE 0)
  endif()
endforeach()
configure_file(${CMAKE_CURRENT_LIST_DIR}/build_config.h.in ${ST_GENERATED_DIR}/build_config.h @ONLY)

add_custom_target(st_git_info ALL
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${ST_GENERATED_DIR}/git_info.cpp -P ${CMAKE_CURRENT_LIST_DIR}/write_git_info.cmake
  BYPRODUCTS ${ST_GENERATED_DIR}/git_info.cpp
  COMMENT "shardtune: recording git sha")
