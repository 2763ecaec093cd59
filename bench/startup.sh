#!/usr/bin/env bash
# What a shardtune process costs before and after its work, side by side in one run: the CPU and
# wall time of programs that do nothing but load what shardtune loads, then of shardtune's own
# shortest commands. The suite starts about 1,400 shardtune processes, so each 0.01 s here is
# about 14 s of CPU there (docs/testing.md, "Suite time").
#   libtorch, return from main     an empty main linked to Debian's libtorch (the floor), leaving
#                                  through the static destructors (libtorch deregisters its ops)
#   libtorch, _Exit                the same leaving with _Exit, as shardtune does (app/main.cpp)
#   libtorch + cuBLAS, _Exit       the same with cuBLAS linked, as shardtune was before it opened
#                                  cuBLAS on first use (cuda/gemm_fp32_accumulate.cu)
#   a refused train, orted         `shardtune train --config <INI with an error>`: MPI's start-up
#                                  as a singleton that forks an orted (ess_singleton_isolated=0)
#   a refused train                the same as shardtune runs it (no orted; lib/distributed/world.cpp)
#   --version                      `shardtune --version` (it asks every library for its version)
# Each row is the mean of N runs (default 20) with OMP_NUM_THREADS=1, as the tests run.
# Usage: bench/startup.sh BUILD_DIR [runs]
set -euo pipefail
build=${1:?usage: bench/startup.sh BUILD_DIR [runs]}
runs=${2:-20}
bin=$build/app/shardtune
[ -x "$bin" ] || { echo "bench/startup.sh: no $bin: build first" >&2; exit 2; }
work=$(mktemp -d /tmp/st_startup_XXXXXX)
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1

# The empty programs: linked against the libraries themselves, as shardtune is (lazy binding).
torch_libs=("-Wl,--no-as-needed" -ltorch_cpu -lc10)
cublas=$(find "${CUDA_HOME:-/usr/local/cuda}"/lib* -maxdepth 1 -name 'libcublas.so.*' 2>/dev/null | head -1)
printf 'int main() { return 0; }\n' >"$work/return.c"
printf '#include <stdlib.h>\nint main() { _Exit(0); }\n' >"$work/exit.c"
cc "$work/return.c" -o "$work/return" "${torch_libs[@]}"
cc "$work/exit.c" -o "$work/exit" "${torch_libs[@]}"
programs=("libtorch, return from main|$work/return" "libtorch, _Exit|$work/exit")
if [ -n "$cublas" ]; then
  cc "$work/exit.c" -o "$work/exit_cublas" "${torch_libs[@]}" "$cublas" -Wl,-rpath,"$(dirname "$cublas")"
  programs+=("libtorch + cuBLAS, _Exit|$work/exit_cublas")
fi
printf '[train]\nstage = nonsense\n' >"$work/refused.ini"
programs+=("a refused train, orted|env OMPI_MCA_ess_singleton_isolated=0 $bin train --config $work/refused.ini"
           "a refused train|$bin train --config $work/refused.ini"
           "--version|$bin --version")

# mean_of_runs COMMAND...: the mean CPU (user + system) and wall seconds of the runs.
mean_of_runs() {
  local times=$work/times
  rm -f "$times"
  for _ in $(seq "$runs"); do
    /usr/bin/time -a -o "$times" -f "%U %S %e" "$@" >/dev/null 2>&1 || true
  done
  awk '!/^Command/ {cpu += $1 + $2; wall += $3; n++} END {printf "%8.3f s %8.3f s", cpu / n, wall / n}' "$times"
}

printf '%-28s %10s %10s   (mean of %d runs)\n' "" "CPU" "wall" "$runs"
for row in "${programs[@]}"; do
  read -ra command <<<"${row#*|}"
  printf '%-28s %s\n' "${row%%|*}" "$(mean_of_runs "${command[@]}")"
done
