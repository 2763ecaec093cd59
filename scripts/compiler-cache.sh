# Sourced by test.sh: ccache as the compiler launcher, its cache outside the clone
# (${CCACHE_DIR:-~/.cache/ccache}), so a fresh clone in another folder hits what an earlier one
# compiled. base_dir makes the clone's absolute paths relative; hash_dir off keeps the folder out of
# the hash (the debug info then names paths relative to the build); the sloppiness lets the
# precompiled libtorch headers (-include cmake_pch.hxx) be hashed by content, not by timestamps;
# depend mode takes the headers from the compiler's own -MD list instead of a preprocessor run,
# which would expand all of libtorch's headers again for every miss (~15 s each).
# Defines compiler_cache_flags (CMake arguments, empty without ccache), compiler_cache_zero and
# compiler_cache_report.
compiler_cache_flags=()
compiler_cache_zero() { :; }
compiler_cache_report() { :; }
if command -v ccache >/dev/null && [ "${ST_CCACHE:-1}" = 1 ]; then
  export CCACHE_BASEDIR=$PWD
  export CCACHE_NOHASHDIR=1
  export CCACHE_DEPEND=1
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-12G}
  # Hashes of unchanged headers kept between compiler runs (keyed by inode, size and times): each
  # hit otherwise re-reads the thousands of libtorch headers it includes. A fresh clone's build,
  # every object a hit: 68 -> 34 s on 2 cores.
  export CCACHE_INODECACHE=1
  compiler_cache_flags=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                        -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  compiler_cache_zero() { ccache --zero-stats >/dev/null; }
  compiler_cache_report() {
    echo "test.sh: ccache: $(ccache --print-stats | awk -F'\t' '
      $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { hits += $2 }
      $1 == "cache_miss" { misses = $2 } END { printf "%d hits, %d misses", hits, misses }') ($(ccache --get-config cache_dir))"
  }
else
  # An earlier configure with the launcher keeps it in the cache: clear it.
  compiler_cache_flags=(-UCMAKE_C_COMPILER_LAUNCHER -UCMAKE_CXX_COMPILER_LAUNCHER -UCMAKE_CUDA_COMPILER_LAUNCHER)
fi
