#!/usr/bin/env bash
# Makes what a GPU lease carries, here where apt and PyPI work, before the lease is asked for:
#   .deps-debs/  the Debian packages the GPU machine lacks (Open MPI, HDF5, Boost, GoogleTest,
#                nlohmann-json: ../shared/gpu-deps/fetch-debs.sh; and PCRE2, ICU, pkg-config,
#                protobuf, zlib for the tokenizer and the event files; yaml-cpp for the YAML configs)
#                + unpack-debs.sh
#   .whl/        the Python wheels it lacks (TRL and its missing pure-Python needs, Liger's
#                kernels), pinned: the oracle tier's versions (tests/python/requirements.txt)
# then checks that the checkout, its untracked files and both folders travel (<= 64 MiB) and
# prints the device call to make. scripts/gpu-check.sh installs the wheels on the machine.
# Usage: scripts/gpu-prepare.sh [--force]   (--force: fetch again what is already there)
set -euo pipefail
cd "$(dirname "$0")/.."
force=${1:-}
shared_deps=../shared/gpu-deps
limit_mib=64
# The machine's Python (KINDS.md: 3.12, torch 2.11, transformers 5.17, accelerate; pyarrow, pandas,
# xxhash, fsspec, huggingface-hub there) lacks these.
wheels=(trl datasets dill multiprocess)
extra_wheels=(liger-kernel==0.8.5)

for ignored in /.deps-debs/ /.whl/; do
  git check-ignore -q "${ignored#/}" || echo "$ignored" >>.git/info/exclude
done

if [ -n "$force" ] || [ ! -e .deps-debs/unpack-debs.sh ]; then
  [ -x "$shared_deps/fetch-debs.sh" ] ||
    { echo "gpu-prepare: $shared_deps/fetch-debs.sh not found (the workspace's shared folder beside the checkout)" >&2; exit 1; }
  rm -rf .deps-debs
  apt-get update -qq
  "$shared_deps/fetch-debs.sh" .deps-debs >/dev/null
  (cd .deps-debs && apt-get download libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3 \
    libicu-dev libicu72 pkgconf pkgconf-bin libpkgconf3 pkg-config libprotobuf-dev libprotobuf32 \
    libprotobuf-lite32 libprotoc32 protobuf-compiler zlib1g-dev libyaml-cpp-dev libyaml-cpp0.7 >/dev/null)
  cp "$shared_deps/unpack-debs.sh" .deps-debs/
fi
echo "gpu-prepare: .deps-debs $(du -sm .deps-debs | cut -f1) MiB, $(ls .deps-debs/*.deb | wc -l) packages"

if [ -n "$force" ] || ! ls .whl/trl-*.whl >/dev/null 2>&1; then
  rm -rf .whl
  pins=()
  for name in "${wheels[@]}"; do
    pin=$(grep -i "^$name==" tests/python/requirements.txt) ||
      { echo "gpu-prepare: $name is not pinned in tests/python/requirements.txt" >&2; exit 1; }
    pins+=("$pin")
  done
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --platform any -d .whl "${pins[@]}" "${extra_wheels[@]}"
fi
echo "gpu-prepare: .whl $(du -sm .whl | cut -f1) MiB: $(cd .whl && ls | tr '\n' ' ')"

# What a device call sends: tracked and untracked-not-ignored files, and the carried folders.
bytes=$({ git ls-files -z --cached --others --exclude-standard; find .deps-debs .whl -type f -print0; } |
        xargs -0 stat -c %s 2>/dev/null | awk '{ s += $1 } END { print s }')
mib=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 2^20 }')
echo "gpu-prepare: a device call carries $mib MiB (limit $limit_mib MiB)"
awk -v m="$mib" -v l="$limit_mib" 'BEGIN { exit !(m > l) }' &&
  { echo "gpu-prepare: over the limit: carry less (docs/testing.md, 'On a GPU machine')" >&2; exit 1; }
echo "gpu-prepare: ready. Device call 1: run(command='scripts/gpu-check.sh call1', carry=['.deps-debs', '.whl'], timeout_s=540)"
