#!/usr/bin/env bash
# Installs shardtune's build and test dependencies from Debian/Ubuntu packages; with
# --with-test-python also the tests' Python environment (scripts/install-test-python.sh).
# Idempotent: what is present already is skipped, so reruns take seconds.
set -euo pipefail
with_test_python=0
[ "${1:-}" = --with-test-python ] && with_test_python=1

packages=(
  build-essential cmake pkg-config git
  ccache                             # compiler cache outside the clone (scripts/compiler-cache.sh)
  libtorch-dev                       # libtorch 1.13 (CPU) + TorchConfig.cmake
  libopenblas0-pthread               # fast BLAS behind libtorch (Debian otherwise links the reference BLAS)
  libopenmpi-dev openmpi-bin         # MPI
  libhdf5-dev                        # HDF5 C API
  zlib1g-dev                         # CRC-32 of data shards
  libboost-program-options-dev       # config parsing
  libyaml-cpp-dev                    # LlamaFactory's and TRL's YAML configs
  libgtest-dev googletest            # unit/mpi tests
  nlohmann-json3-dev                 # safetensors headers, manifests
  libprotobuf-dev protobuf-compiler  # TensorBoard event files (messages compiled at build time)
  libpcre2-dev                       # tokenizer: pre-tokenizer regexes with Unicode classes
  libicu-dev                         # tokenizer: NFC normalizer (Qwen2)
  python3-venv                       # tests: the oracles' Python environment (tests/python)
  xz-utils                           # tests: the real vocabularies' compressed copy (tests/data/tokenizers)
  python3-torch                      # tests/reference: the independent Llama reference
  python3-yaml                       # tests/packaging: reads spack.yaml
  python3-h5py                       # e2e: reads the shards prep wrote from text
  python3-protobuf python3-crc32c    # e2e: reads the TensorBoard event files back independently
  slurm-wlm munge                    # e2e: sbatch slurm/launch.slurm on a real one-node Slurm
  iproute2 util-linux perl           # e2e: the multi-host Slurm cluster (ip netns, unshare, nsenter)
  environment-modules                # e2e: the Tcl modulefile loads in Environment Modules
  lua5.3 lua-posix lua-filesystem lua-json lua-term tcl  # ... and both load in Lmod (see below)
  clang-14 libclang-rt-14-dev        # tests/fuzz: libFuzzer with ASan and UBSan (the parsers' fuzz targets)
  lld                                # the build links with lld where it is there (cmake/linker.cmake)
)
# Debian's lmod package conflicts with environment-modules; Lmod is plain Lua, so the tests use
# its package unpacked here instead of installed.
lmod_dir=/opt/lmod-debian

# Unpacks Debian's lmod into $lmod_dir unless an Lmod is there already.
unpack_lmod() {
  [ -x "$lmod_dir/usr/share/lmod/lmod/libexec/lmod" ] && return 0
  local download
  download=$(mktemp -d)
  chmod 755 "$download"  # apt downloads as _apt
  (cd "$download" && apt-get download lmod >/dev/null && "${sudo_cmd[@]}" dpkg-deb -x lmod_*.deb "$lmod_dir")
  rm -rf "$download"
  # Its Tcl bridge (is-avail in Tcl modulefiles) calls Lmod by its installed path.
  "${sudo_cmd[@]}" sed -i "s|\"/usr/share/lmod/|\"$lmod_dir/usr/share/lmod/|" \
    "$lmod_dir"/usr/share/lmod/lmod/libexec/tcl2lua.tcl
  echo "install-deps: Lmod unpacked into $lmod_dir"
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
unpack_lmod
if [ "$with_test_python" = 1 ]; then
  "$(dirname "$0")/install-test-python.sh"
fi
