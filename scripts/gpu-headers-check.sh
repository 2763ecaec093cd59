#!/usr/bin/env bash
# Before a GPU lease, here: compiles (syntax only) the translation units that meet libtorch's
# version differences against the headers of the GPU machine's libtorch (PyPI's torch wheel, a
# CUDA build: ST_TORCH_CUDA=1), so that the lease's build does not find them first. The CPU build
# (libtorch 1.13) never compiles the 2.x branches of lib/util/torch_compat.h, and pip's libtorch
# brings its own google/protobuf headers (the GPU build's first failure on 2026-12-04).
# Usage: scripts/gpu-headers-check.sh [BUILD_DIR] [FILE.cpp ...]
#   BUILD_DIR (default build): a configured CPU build, whose compile_commands.json gives the flags;
#   files: those that include torch_compat.h, an autograd Function or the protobuf code (default).
# The torch version: GPU_TORCH_VERSION (default 2.11.0, the machine's; device/KINDS.md); its
# headers are kept under ~/.cache/shardtune/torch-headers-<version>.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift || true
version=${GPU_TORCH_VERSION:-2.11.0}
cache=$HOME/.cache/shardtune/torch-headers-$version
[ -f "$build/compile_commands.json" ] ||
  { echo "gpu-headers-check: $build/compile_commands.json not found: configure the CPU build first" >&2; exit 1; }

if [ ! -d "$cache/torch/include" ]; then
  mkdir -p "$cache"
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 "torch==$version" -d "$cache/wheel"
  (cd "$cache" && unzip -q -o wheel/torch-*.whl 'torch/include/*' && rm -rf wheel)
fi

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  mapfile -t files < <(grep -rlE 'torch_compat\.h|custom_function\.h|\.pb\.h' lib app tests/cuda --include=*.cpp | sort)
fi
generated=$(mktemp -d)
trap 'rm -rf "$generated"' EXIT
sed 's/#define ST_TORCH_CUDA 0/#define ST_TORCH_CUDA 1/' "$build/generated/build_config.h" >"$generated/build_config.h"

python3 - "$(cd "$build" && pwd)" "$cache/torch/include" "$generated" "$(pwd)" "${files[@]}" <<'PY'
import json, shlex, subprocess, sys
build, include, generated, root, files = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
commands = f"{build}/compile_commands.json"
by_file = {entry["file"]: entry for entry in json.load(open(commands))}
failed = []
for name in files:
    path = f"{root}/{name}" if not name.startswith("/") else name
    entry = by_file.get(path)
    if entry is None:
        print(f"gpu-headers-check: {name}: not in the build's compile commands (skipped)")
        continue
    words, kept, skip = shlex.split(entry["command"]), [], False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("-include", "-o"):  # no precompiled header: each file must include what it uses
            skip = True
            continue
        if word == "-c":
            continue
        kept.append(f"-I{generated}" if word == f"-I{build}/generated" else word)  # ST_TORCH_CUDA 1
    # torch's headers ahead of the system's (Debian's libtorch 1.13 is under /usr/include).
    kept[1:1] = ["-isystem", include, "-isystem", f"{include}/torch/csrc/api/include", "-fsyntax-only", "-w"]
    result = subprocess.run(kept, cwd=entry["directory"], capture_output=True, text=True)
    status = "ok" if result.returncode == 0 else "FAILED"
    print(f"gpu-headers-check: {name}: {status}", flush=True)
    if result.returncode:
        failed.append(name)
        print("\n".join([line for line in result.stderr.splitlines() if "error" in line][:10]))
print(f"gpu-headers-check: {len(files) - len(failed)} of {len(files)} compile against torch's headers")
sys.exit(1 if failed else 0)
PY
