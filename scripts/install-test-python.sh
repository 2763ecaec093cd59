#!/usr/bin/env bash
# Makes the tests' Python environment (scripts/python-env-path.sh) from the pinned
# tests/python/requirements.txt, or says it is complete and installs nothing. Complete means: made
# from this very requirements file by this Python, and its packages import. Prints the download
# size and the time it took.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
requirements=$here/../tests/python/requirements.txt
env_dir=$("$here/python-env-path.sh")
python=/usr/bin/python3  # Debian's: the same interpreter on every machine this runs on
imports="import tokenizers, jinja2, transformers, torch, trl, peft, lm_eval, bitsandbytes, gguf, h5py"
stamp="$(sha256sum <"$requirements" | cut -d' ' -f1) $("$python" -c 'import sys; print(sys.version.split()[0])')"

if [ -f "$env_dir/.complete" ] && [ "$(cat "$env_dir/.complete")" = "$stamp" ] &&
   "$env_dir/bin/python" -c "$imports" 2>/dev/null; then
  echo "install-deps: Python environment $env_dir complete ($(wc -l <"$env_dir/.packages") packages), nothing to install"
  exit 0
fi

start=$(date +%s)
echo "install-deps: making the tests' Python environment in $env_dir"
rm -rf "$env_dir"
mkdir -p "$(dirname "$env_dir")"
"$python" -m venv "$env_dir"
pip=("$env_dir/bin/python" -m pip --disable-pip-version-check)
# Every package is pinned, the dependencies included, so nothing is resolved: --no-deps keeps
# torch's nvidia-* wheels (about 3 GB) out where /usr/local/cuda holds those libraries.
downloads=$(mktemp -d)
trap 'rm -rf "$downloads"' EXIT
"${pip[@]}" download --quiet --no-deps --only-binary=:all: -r "$requirements" -d "$downloads"
echo "install-deps: downloaded $(du -sm "$downloads" | cut -f1) MB of wheels"
"${pip[@]}" install --quiet --no-deps --no-index "$downloads"/*.whl
if ! "$env_dir/bin/python" -c "import torch" 2>"$downloads/torch.err"; then
  # No CUDA 13 toolkit here to lend torch its libraries: take PyPI's own (several GB).
  echo "install-deps: torch does not import without its nvidia-* wheels ($(tail -n1 "$downloads/torch.err")); installing them"
  "${pip[@]}" install --quiet "torch==$(sed -n 's/^torch==//p' "$requirements")"
fi
"$env_dir/bin/python" -c "$imports"
"${pip[@]}" freeze >"$env_dir/.packages"
echo "$stamp" >"$env_dir/.complete"
echo "install-deps: Python environment ready in $(( $(date +%s) - start )) s ($(du -sm "$env_dir" | cut -f1) MB)"
