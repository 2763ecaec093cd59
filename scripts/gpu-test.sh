#!/usr/bin/env bash
# Builds against the CUDA libtorch and runs the test tiers on a GPU machine that has no apt
# (see docs/testing.md): the Debian packages for MPI/HDF5/Boost/GoogleTest come in .deps-debs.
# Usage: scripts/gpu-test.sh [ctest args]; logs go to $OUT when it is set; ST_GPU_CMAKE_ARGS adds
# configure arguments (e.g. -DCMAKE_CXX_FLAGS=-g1 for backtraces with names).
set -euo pipefail
cd "$(dirname "$0")/.."
log_dir=${OUT:-build-gpu}
mkdir -p "$log_dir"
# shellcheck disable=SC1091
source .deps-debs/unpack-debs.sh .deps-debs
# pkg-config (PCRE2, ICU) reads the unpacked .pc files, their /usr moved under /opt/deps.
export PKG_CONFIG_PATH=/opt/deps/usr/lib/x86_64-linux-gnu/pkgconfig:/opt/deps/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=/opt/deps PKG_CONFIG=/opt/deps/usr/bin/pkgconf
# Debian configures Open MPI with prefix /usr: the relocated one finds its plugins from there.
export OPAL_PREFIX=/opt/deps/usr PMIX_MCA_pcompress_base_silence_warning=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# dpkg -x skips Debian's alternatives, so mpirun exists only as orterun; another mpiexec may be on PATH.
mkdir -p /opt/deps/alias
ln -sf /opt/deps/usr/bin/orterun /opt/deps/alias/mpirun
ln -sf /opt/deps/usr/bin/orterun /opt/deps/alias/mpiexec
export PATH=/opt/deps/alias:$PATH

# NCCL: the toolkit's when it has one, else the one pip's nvidia-nccl package ships.
if [ ! -e /usr/local/cuda/include/nccl.h ]; then
  NCCL_ROOT=$(python3 -c 'import nvidia.nccl, os; print(os.path.dirname(nvidia.nccl.__file__))' 2>/dev/null \
    || python3 -c 'import nvidia, os; print(os.path.join(list(nvidia.__path__)[0], "nccl"))')
  export NCCL_ROOT
  [ -e "$NCCL_ROOT/lib/libnccl.so" ] || ln -sf libnccl.so.2 "$NCCL_ROOT/lib/libnccl.so"
  export LD_LIBRARY_PATH=$NCCL_ROOT/lib:$LD_LIBRARY_PATH
fi

cmake --version | head -1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DST_BUILD_TESTS=ON -DST_ENABLE_CUDA=ON \
  -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" -DMPIEXEC_EXECUTABLE=/opt/deps/alias/mpirun ${ST_GPU_CMAKE_ARGS:-} >"$log_dir/configure.log" 2>&1 \
  || { tail -40 "$log_dir/configure.log"; exit 1; }
grep 'shardtune:' "$log_dir/configure.log" || true
cmake --build build-gpu -j"$(nproc)" -- -k 0 >"$log_dir/build.log" 2>&1 || { grep -B2 -A8 'error' "$log_dir/build.log" | head -150; exit 1; }
echo "gpu-test.sh: build ok"
build-gpu/app/shardtune --version
status=0
(cd build-gpu && ctest --output-on-failure -j8 "$@" 2>&1 | tee "$log_dir/ctest.log" | tail -15) || status=$?
# A follow-up command in this environment (e.g. the transformers parity check, the bench).
if [ -n "${ST_GPU_AFTER:-}" ]; then bash -c "$ST_GPU_AFTER" || status=$?; fi
exit "$status"
