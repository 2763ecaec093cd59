# shellcheck shell=bash
# The Python wheels a GPU lease carries (.whl, made by scripts/gpu-prepare.sh: TRL, Liger's kernels
# and what the machine's Python lacks for them) installed into /tmp/site and put on PYTHONPATH, as
# the device README says; sourced by scripts/gpu-env.sh and by gpu-check.sh's dry run.
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl ||
    { echo "gpu-wheels: the carried wheels (.whl) did not install" >&2; return 1; }
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
