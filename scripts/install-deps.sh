#!/usr/bin/env bash
# Installs shardtune's build and test dependencies from Debian/Ubuntu packages.
# Idempotent: packages already present are skipped, so reruns take seconds.
set -euo pipefail

packages=(
  build-essential cmake pkg-config git
  libtorch-dev                       # libtorch 1.13 (CPU) + TorchConfig.cmake
  libopenblas0-pthread               # fast BLAS behind libtorch (Debian otherwise links the reference BLAS)
  libopenmpi-dev openmpi-bin         # MPI
  libhdf5-dev                        # HDF5 C API
  zlib1g-dev                         # CRC-32 of data shards
  libboost-program-options-dev       # config parsing
  libgtest-dev googletest            # unit/mpi tests
  nlohmann-json3-dev                 # safetensors headers, manifests
  python3-torch                      # tests/reference: the independent Llama reference
  slurm-wlm munge                    # e2e: sbatch slurm/launch.slurm on a real one-node Slurm
  lmod environment-modules           # e2e: the modulefiles load in both module systems
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo_cmd=()
[ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
