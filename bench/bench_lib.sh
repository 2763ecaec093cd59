# shellcheck shell=bash
# What the bench scripts share (sourced): reading figures out of `shardtune bench` and the peers'
# output, whose figure lines read "  <name>   <value> [unit]".
# figure KEY BACK TEXT: the field BACK places before the end of TEXT's first line "  KEY ...".
figure() { awk -v key="$1" -v back="$2" '$0 ~ "^  "key {print $(NF - back)}' <<<"$3" | head -1; }
# lengths_cutoff LENGTHS: data.cutoff_len for a `shardtune synth --lengths` profile (long_prompt's
# ~1700-token pairs need 2048).
lengths_cutoff() { if [ "$1" = long_prompt ]; then echo 2048; else echo 1024; fi; }
# lengths_bench NAME MICRO_BATCH [bench args]: `shardtune bench` on real lengths, the settings
# from the caller's build preset stage lengths steps work; prints the bench's figures and
# sets tok (logical tokens/s), mem (peak GiB) and mfu.
# shellcheck disable=SC2154,SC2034 # the caller's settings in, its figures out
lengths_bench() {
  local name=$1 micro_batch=$2
  shift 2
  local out
  out=$("$build/app/shardtune" bench --preset "$preset" --stage "$stage" --lengths "$lengths" --seq "$(lengths_cutoff "$lengths")" \
    --micro-batch "$micro_batch" --steps "$steps" --warmup 3 --phase-times false --work "$work/$name" "$@" 2>&1) ||
    { echo "$out" | tail -20; echo "shardtune bench ($name) failed" >&2; return 1; }
  grep -E '^(bench:|  )|auto ->' <<<"$out"
  tok=$(figure "tokens/s" 0 "$out") mem=$(figure "peak memory" 1 "$out")
  mfu=$(awk '/^  MFU/ {print $2}' <<<"$out")
}
