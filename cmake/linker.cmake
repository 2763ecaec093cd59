# The linker: lld where the compiler can use it (Debian: lld-14, which the fuzz build's clang
# brings), else the compiler's default. The build links about 70 programs against libtorch with
# line tables; GNU ld took 1.09 s for shardtune alone, lld 0.18 s, and a fresh clone's build with
# every object in the compiler cache 34 -> 16 s (2 cores; docs/testing.md, "Suite time").
# -DST_USE_LLD=OFF keeps the default linker.
option(ST_USE_LLD "Link with lld when the compiler can" ON)
if(ST_USE_LLD)
  include(CheckLinkerFlag)
  check_linker_flag(CXX -fuse-ld=lld ST_HAVE_LLD)
  if(ST_HAVE_LLD)
    # CXX links only: nvcc would refuse the flag if it ever linked a CUDA-only target.
    add_link_options($<$<LINK_LANGUAGE:CXX>:-fuse-ld=lld>)
  endif()
endif()
