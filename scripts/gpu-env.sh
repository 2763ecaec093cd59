# The environment of a GPU machine without apt (docs/testing.md), sourced by scripts/gpu-test.sh
# and scripts/gpu-check.sh from the repository root: Open MPI, HDF5, Boost, GoogleTest and the
# rest unpacked from .deps-debs, the carried wheels (.whl) installed, NCCL from the toolkit or
# pip's nvidia-nccl, then gpu_build LOG_DIR configures and builds build-gpu (Ninja, every core;
# ST_GPU_CMAKE_ARGS adds arguments; GPU_BUILD_TARGETS builds those targets only).
# shellcheck disable=SC1091
source .deps-debs/unpack-debs.sh .deps-debs
# shellcheck disable=SC1091
source scripts/gpu-wheels.sh
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

gpu_build() {
  local log_dir=$1
  cmake --version | head -1
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DST_BUILD_TESTS=ON -DST_ENABLE_CUDA=ON \
    -DCMAKE_PREFIX_PATH="$CMAKE_PREFIX_PATH" -DMPIEXEC_EXECUTABLE=/opt/deps/alias/mpirun ${ST_GPU_CMAKE_ARGS:-} >"$log_dir/configure.log" 2>&1 \
    || { tail -40 "$log_dir/configure.log"; return 1; }
  grep 'shardtune:' "$log_dir/configure.log" || true
  # shellcheck disable=SC2086 # GPU_BUILD_TARGETS: a list of targets (default all)
  cmake --build build-gpu -j"$(nproc)" --target ${GPU_BUILD_TARGETS:-all} -- -k 0 >"$log_dir/build.log" 2>&1 || { grep -B2 -A8 "error" "$log_dir/build.log" | head -150; return 1; }
}
