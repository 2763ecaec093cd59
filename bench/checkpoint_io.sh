#!/usr/bin/env bash
# Checkpoint save / load and HF export throughput on 1, 2 and 4 ranks for a ~1.1 GB training
# state (bench-100m: fp32 masters + AdamW m, v), next to dd's write (with fsync) and read
# bandwidth of the same filesystem in the same run. As root the page cache is dropped before
# every read (cold); otherwise reads come from the cache (warm) for dd and shardtune alike.
# Usage: bench/checkpoint_io.sh BUILD_DIR [DIR on the filesystem to test] [preset]
set -euo pipefail
build=${1:?usage: bench/checkpoint_io.sh BUILD_DIR [DIR] [preset]}
dir=${2:-$(pwd)/runs/checkpoint_io}
preset=${3:-bench-100m}
bench="$build/bench/bench_checkpoint"
mpirun_args=(--oversubscribe)
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)
cold=0
[ -w /proc/sys/vm/drop_caches ] && cold=1
mkdir -p "$dir"

# dd_rate <dd arguments...>: dd's own GB/s figure (1 GiB in 16 MiB blocks).
dd_rate() { dd "$@" bs=16M count=64 2>&1 | awk '/copied/ { print $(NF-1), $NF }'; }
echo "filesystem: $(df -h "$dir" | awk 'NR == 2 { print $1, $2 " total on", $6 }')"
echo "dd write 1 GiB (conv=fsync): $(dd_rate if=/dev/zero of="$dir/dd.bin" conv=fsync)"
[ "$cold" = 1 ] && { sync; echo 3 >/proc/sys/vm/drop_caches; }
echo "dd read 1 GiB ($([ "$cold" = 1 ] && echo cold || echo warm)): $(dd_rate if="$dir/dd.bin" of=/dev/null)"
rm -f "$dir/dd.bin"
echo
printf '%-5s %8s %8s %8s %8s %8s %9s %8s %8s %8s %11s %11s\n' ranks state_GB save_s save_GB/s load_s load_GB/s \
  read_cache export_GB export_s exp_GB/s "RSS_MB" "exp_peak_MB"
for ranks in 1 2 4; do
  mpirun -np "$ranks" "${mpirun_args[@]}" "$bench" "$preset" "$dir/state" "$cold" 2>&1 | grep -v '^\[r'
done
