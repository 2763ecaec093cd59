#!/usr/bin/env bash
# shellcheck disable=SC2317 # the step_* functions are called by name (bash -c "step_...")
# Everything a GPU machine is lent for, correctness before speed: the GPU build (Ninja, every
# core), the cuda tier, TRL itself against shardtune on real lengths, transformers parity and the
# PEFT load of a LoRA run's adapter, then the benchmarks docs/performance.md owes. Each step runs
# under its own time limit and a failing step does not stop the next; its raw log goes into
# $OUT/logs.tar.gz (bundled after every step: a device call brings back at most 8 files),
# $OUT/summary.md gets one row per step and $OUT/results.md every result table and test total.
# Usage: scripts/gpu-check.sh PLAN | STEP ...   (no argument: every step, in this order)
# A lease is 15 minutes of device time, start and idle included; its two prepared calls
# (scripts/gpu-prepare.sh makes what they carry: .deps-debs, .whl):
#   call1  (<= 8 min)  build, cuda, bench-trl-dpo: the cuda tier and the principal row
#   call2  (<= 4 min, only with >= 6 min of device time left) bench-qlora, parity, bench-memory,
#                      each cut off at its share
# Steps:
#   build cuda            the GPU build, the cuda tier
#   bench-trl-dpo         1B DPO, ultrafeedback lengths: TRL's DPOTrainer (Liger off and on, its best
#                         micro-batch) vs shardtune packed+shared + auto token budget vs the P0 loop
#   parity                transformers (Llama, Qwen2, Mistral, generate), a LoRA adapter loaded by peft
#   bench-real-dpo        real lengths (ultrafeedback, long_prompt) vs the padded P0 peer, DPO, 1B
#   bench-real-sft        the same for SFT (BENCH_PRESETS="llama-3.2-1b llama-3.2-3b" adds 3B)
#   bench-fixed           fixed 2046-token rows: 3B DPO mb 1 and 2, SFT mb 4 vs the peer, recompute auto
#   bench-memory          kept vs per_gather compute copy at full recompute (bench and estimate)
#   bench-optimizer       adamw vs adamw8bit vs the step inside backward (and both), 1B DPO, full recompute
#   bench-8b              8B full DPO with optim.offload = cpu, 8B LoRA DPO vs peft
#   bench-qlora           8B QLoRA vs LoRA DPO at seq 2048, micro-batch 1, one GPU: tokens/s and peak memory
#   bench-long            1B DPO on one GPU at 16k and 32k tokens per row (CP 1: CP needs a GPU per rank) and
#                         the estimate's plan for CP 2 on 2 GPUs; the multi-GPU CP row stays owed
#   bench-moe             a ~2B Qwen3-MoE (bench-moe-2b: 64 experts, 8 per token; the experts as grouped
#                         GEMMs) DPO on real lengths vs transformers' own model under TRL's DPOTrainer:
#                         tokens/s, MFU on active parameters, peak GiB (plan "moe": a lease for it alone)
#   bench-gated-delta     one Qwen3.5-style Gated DeltaNet layer at 4096 tokens vs transformers' torch
#                         path on the GPU, and the rule alone: cuda/'s kernels vs the libtorch ops
#                         (plan "hybrid": build, cuda, this)
#   bench-grpo            1B GRPO, 16 prompts x 8 generations, prompt 256, completion 512, 3 steps after a
#                         warm-up: TRL's GRPOTrainer (its generate path) vs shardtune sampling on its
#                         rank, each phase's seconds, tokens/s/GPU, peak GiB; then decoding with finished
#                         rows refilled vs chunks of rows (plan "grpo": build, cuda, this)
# GPU_CHECK_LIMIT overrides every step's limit [s]. GPU_CHECK_DRY_RUN=1: the plan here, on the CPU,
# with the GPU stubbed: the CPU build (build/) for build-gpu, the debug preset, TRL on the CPU
# (bench/vs_trl.sh's PEER_DEVICE=cpu), no .deps-debs; the wheels install as on the machine.
# docs/testing.md says how to read the results.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-build-gpu/check}
mkdir -p "$out"
summary=$out/summary.md
[ -e "$summary" ] || printf '| step | status | seconds | log |\n|---|---|---|---|\n' >"$summary"
dry=${GPU_CHECK_DRY_RUN:-0}
if [ "$dry" = 1 ]; then
  build_dir=build preset_1b=debug preset_3b=debug preset_8b=debug preset_moe=debug-moe qlora_steps=2 memory_steps=2 memory_seq=256
  trl_steps=2 gated_delta_tokens=256 bench_device=cpu
  bench_python=${ST_ORACLE_PYTHON:-$HOME/.cache/shardtune/python-env/bin/python}
  export PARITY_DEVICE=cpu PEER_DEVICE=cpu LIGER=off TRL_LADDER=1,2 TRL_STEPS=2 TRL_WARMUP=1 BUDGET_PAIRS=4
  # shellcheck disable=SC2086 # GPU_BUILD_TARGETS: a list of targets
  gpu_build() { cmake --build build -j"$(nproc)" --target ${GPU_BUILD_TARGETS:-all} >"$1/build.log" 2>&1; }
  # shellcheck disable=SC1091
  source scripts/gpu-wheels.sh || exit 1
else
  build_dir=build-gpu preset_1b=llama-3.2-1b preset_3b=llama-3.2-3b preset_8b=llama-3.1-8b preset_moe=bench-moe-2b qlora_steps=4
  memory_steps=10 memory_seq=2048
  trl_steps=10 gated_delta_tokens=4096 bench_device=cuda bench_python=python3
  # shellcheck disable=SC1091
  source scripts/gpu-env.sh
  set +e  # unpack-debs.sh sets -e: a failing step must not end the plan (nor lose its summary row)
fi
bin=$build_dir/app/shardtune
work=${ST_GPU_WORK:-/tmp/shardtune-gpu-check}
logs=$work/logs
mkdir -p "$work" "$logs"

# The binary and the cuda tier's executables only: the unit, mpi and e2e tiers are CI's.
step_build() {
  python3 -c 'import importlib.metadata as m
print("python packages:", ", ".join(p + " " + m.version(p) for p in
      ("torch", "transformers", "accelerate", "peft", "trl", "datasets", "pyarrow", "fsspec", "liger-kernel")))' ||
    echo "gpu-check: a Python package the benches need is missing (scripts/gpu-prepare.sh makes .whl)"
  mkdir -p "$logs/cmake"  # configure.log and build.log, beside this step's own build.log
  GPU_BUILD_TARGETS="shardtune cuda_tier" gpu_build "$logs/cmake" && "$bin" --version
}
step_cuda() { (cd "$build_dir" && ctest --output-on-failure -L cuda -j4); }
# The principal row: TRL itself, its best micro-batch (Liger off and on), against ours and P0.
step_bench_trl_dpo() { bench/vs_trl.sh "$build_dir" "$preset_1b" ultrafeedback "$trl_steps"; }
# GRPO: TRL's GRPOTrainer generating with transformers against shardtune sampling on its rank.
# Then decoding long-tailed completions with finished rows refilled against chunks that wait for
# their longest (bench/generation_refill_bench.cpp), 8 prompts x 8, 16 rows, up to 512 tokens.
step_bench_grpo() {
  PEER_DEVICE=$bench_device bench/vs_trl_grpo.sh "$build_dir" "$preset_1b" 3 || return 1
  mkdir -p "$logs/bench-build"
  GPU_BUILD_TARGETS=bench_generation_refill gpu_build "$logs/bench-build" || return 1
  "$build_dir/bench/bench_generation_refill" "$preset_1b" 8 8 16 512 256 "$bench_device" 2
}
step_parity() {
  python3 tests/reference/transformers_parity.py "$bin" "$work/parity" || return 1
  # A LoRA run's adapter loaded by peft onto its base equals shardtune's merged export.
  local base=$work/peft/base lora=$work/peft/lora
  rm -rf "$work/peft" && mkdir -p "$work/peft"
  "$bin" synth --output "$work/peft/data" --pairs 64 >/dev/null || return 1
  "$bin" train --train.output_dir="$base" --data.train="$work/peft/data/train" --train.max_steps=1 \
    --train.dtype=fp32 --ckpt.export=true --ckpt.export_dtype=fp32 >/dev/null || return 1
  "$bin" train --train.output_dir="$lora" --data.train="$work/peft/data/train" --model.path="$base/export" \
    --train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,down --optim.lr=5e-3 \
    --train.max_steps=5 --train.dtype=fp32 --ckpt.export=true --ckpt.export_dtype=fp32 >/dev/null || return 1
  "$bin" export --checkpoint "$lora/checkpoints" --output "$work/peft/merged" --merge --dtype fp32 >/dev/null || return 1
  python3 tests/reference/peft_load_parity.py "$base/export" "$lora/export" "$work/peft/merged"
}
bench_real() {  # bench_real STAGE
  local preset lengths status=0
  for preset in ${BENCH_PRESETS:-llama-3.2-1b}; do
    for lengths in ultrafeedback long_prompt; do
      bench/real_lengths.sh "$build_dir" "$preset" "$1" "$lengths" 8 || status=1
    done
  done
  return "$status"
}
step_bench_real_dpo() { bench_real dpo; }
step_bench_real_sft() { bench_real sft; }
step_bench_fixed() {
  local status=0
  bench/vs_peer.sh "$build_dir" llama-3.2-3b 2048 1 dpo 20 || status=1
  bench/vs_peer.sh "$build_dir" llama-3.2-3b 2048 2 dpo 20 || status=1
  bench/vs_peer.sh "$build_dir" llama-3.2-3b 2048 4 sft 20 || status=1
  "$bin" bench --preset llama-3.2-3b --seq 2048 --micro-batch 2 --steps 20 --train.recompute=auto || status=1
  bench/vs_peer.sh "$build_dir" llama-3.2-1b 2048 2 dpo 20 || status=1
  return "$status"
}
step_bench_memory() {  # the compute copy kept vs cast per gather, full recompute both sides
  local preset copy status=0
  for preset in "$preset_1b" "$preset_3b"; do
    for copy in kept per_gather; do
      echo "== $preset train.compute_copy=$copy"
      "$bin" bench --preset "$preset" --seq "$memory_seq" --micro-batch 1 --steps "$memory_steps" \
        --train.recompute=full --train.compute_copy="$copy" || status=1
      "$bin" estimate --model.preset "$preset" --world 1x1 --train.micro_batch 1 --data.cutoff_len "$memory_seq" \
        --train.recompute full --train.compute_copy "$copy" | grep -E "per GPU" || status=1
    done
  done
  return "$status"
}
step_bench_optimizer() {  # the same rows, each optimizer choice: tokens/s and peak memory side by side
  local choice status=0
  for choice in "--optim.name=adamw" "--optim.name=adamw8bit" \
    "--optim.name=adamw --optim.step_in_backward=true --optim.grad_clip=0" \
    "--optim.name=adamw8bit --optim.step_in_backward=true --optim.grad_clip=0"; do
    echo "== llama-3.2-1b $choice"
    # shellcheck disable=SC2086
    "$bin" bench --preset llama-3.2-1b --seq 2048 --micro-batch 1 --steps 10 --train.recompute=full $choice || status=1
  done
  return "$status"
}
step_bench_8b() {
  local status=0
  "$bin" estimate --model.preset llama-3.1-8b --world 1x1 --optim.offload cpu --train.micro_batch 1 \
    --data.cutoff_len 2048 || status=1
  "$bin" bench --preset llama-3.1-8b --seq 2048 --micro-batch 1 --steps 5 --optim.offload=cpu || status=1
  PEER_ARGS="--lora-r 16" bench/vs_peer.sh "$build_dir" llama-3.1-8b 2048 2 dpo 10 -- --train.method=lora || status=1
  return "$status"
}

# The issue's bar: planned and measured peak <= 8 GiB, tokens/s >= 0.7x LoRA on the same rows.
step_bench_qlora() {
  "$bin" estimate --model.preset="$preset_8b" --train.method=qlora --data.cutoff_len=2048 --train.micro_batch=1 \
    --lora.target_modules=q,k,v,o,gate,up,down --world 1x1 --gpu-memory 8 --model.logp_chunk_tokens=256 || return 1
  bench/qlora.sh "$build_dir" "$preset_8b" 1 2048 "$qlora_steps" 16 q,k,v,o,gate,up,down --train.dtype=bf16 --model.logp_chunk_tokens=256
}

# Context parallelism needs a GPU per rank: one GPU gives the whole-row figure it is measured
# against, and the estimate the plan for 2 GPUs.
step_bench_long() {
  local seq status=0
  for seq in 16384 32768; do
    echo "== llama-3.2-1b dpo, one row pair of $seq tokens, CP 1"
    "$bin" bench --preset llama-3.2-1b --stage dpo --seq "$seq" --micro-batch 1 --steps 4 --warmup 1 \
      --train.recompute=full --phase-times false || status=1
    "$bin" estimate --model.preset llama-3.2-1b --data.cutoff_len "$seq" --world 1x2 \
      --dist.context_parallel=2 --train.recompute full --train.dtype=bf16 | grep -E "micro-batch|activations|per GPU" ||
      status=1
  done
  return "$status"
}

# The mixture-of-experts row: the plan first (total vs active parameters), then TRL's DPOTrainer on
# transformers' Qwen3MoeForCausalLM (its own experts implementation) against ours on the same pairs.
step_bench_moe() {
  "$bin" estimate --model.preset "$preset_moe" --world 1x1 --data.cutoff_len 1024 --train.stage dpo |
    grep -E "^model|^experts|per GPU" || return 1
  LIGER=off TRL_LADDER=${TRL_LADDER:-4,8} bench/vs_trl.sh "$build_dir" "$preset_moe" ultrafeedback "$trl_steps"
}

# The hybrid row: bench/gated_delta.sh on the lease's device (the CPU in a dry run).
step_bench_gated_delta() {
  mkdir -p "$logs/bench-build"
  GPU_BUILD_TARGETS=bench_gated_delta gpu_build "$logs/bench-build" || return 1
  ST_ORACLE_PYTHON=$bench_python bench/gated_delta.sh "$build_dir" "$gated_delta_tokens" "$bench_device"
}

declare -A limit=([build]=420 [cuda]=300 [bench-trl-dpo]=570 [parity]=300 [bench-real-dpo]=570 [bench-real-sft]=570
                  [bench-fixed]=570 [bench-memory]=270 [bench-optimizer]=270 [bench-8b]=570 [bench-qlora]=570
                  [bench-long]=400 [bench-moe]=570 [bench-gated-delta]=200 [bench-grpo]=400)
# A lease's calls: the steps with their shares [s] and the call's whole budget [s] (the device
# call's timeout_s leaves a minute above it for the unpacking and the bundle).
declare -A plan=([call1]="build:180 cuda:110 bench-trl-dpo:300" [call2]="bench-qlora:130 parity:60 bench-memory:40"
                 [moe]="build:180 cuda:120 bench-moe:170" [hybrid]="build:180 cuda:150 bench-gated-delta:140"
                 [grpo]="build:180 cuda:110 bench-grpo:180")
declare -A plan_budget=([call1]=470 [call2]=230 [moe]=470 [hybrid]=470 [grpo]=470)
budget=0
if [ $# -eq 1 ] && [ -n "${plan[$1]:-}" ]; then
  budget=${plan_budget[$1]}
  read -ra steps <<<"${plan[$1]}"
else
  steps=("$@")
  [ ${#steps[@]} -gt 0 ] || steps=(build cuda bench-trl-dpo parity bench-memory bench-optimizer bench-real-dpo bench-real-sft
                                   bench-fixed bench-8b bench-qlora bench-long bench-moe bench-gated-delta bench-grpo)
fi
started=$SECONDS
failed=0
for entry in "${steps[@]}"; do
  step=${entry%%:*} share=${entry#*:}
  [ -n "${limit[$step]:-}" ] || { echo "gpu-check: unknown step '$step' (${!limit[*]})" >&2; exit 2; }
  [ "$share" = "$entry" ] && share=${GPU_CHECK_LIMIT:-${limit[$step]}}
  if [ "$budget" -gt 0 ]; then  # a plan: the step's share, at most what is left of the call's budget
    left=$((budget - (SECONDS - started)))
    [ "$share" -gt "$left" ] && share=$left
    if [ "$share" -lt 20 ]; then
      printf '| %s | skipped (the call'"'"'s %d s are spent) | 0 | - |\n' "$step" "$budget" >>"$summary"
      continue
    fi
  fi
  log=$logs/$step.log
  start=$SECONDS
  echo "gpu-check: $step (limit $share s) -> $log"
  export -f "step_${step//-/_}" gpu_build bench_real
  export bin work out logs build_dir preset_1b preset_3b preset_8b preset_moe qlora_steps memory_steps memory_seq trl_steps \
    gated_delta_tokens bench_device bench_python
  timeout "$share" bash -c "step_${step//-/_}" >"$log" 2>&1
  code=$?
  status=passed
  [ "$code" -eq 0 ] || { status="failed ($code)"; failed=1; }
  [ "$code" -eq 124 ] && status="timed out"
  printf '| %s | %s | %d | %s |\n' "$step" "$status" $((SECONDS - start)) "logs.tar.gz: $step.log" >>"$summary"
  # Result tables (markdown rows) and the test totals go into the summary as they are.
  { echo; echo "### $step"; grep -E '^\||tests passed|tests failed|FAILED' "$log" | head -80; } >>"$out/results.md"
  tail -3 "$log"
  tar -czf "$out/logs.tar.gz" -C "$logs" .
done
cat "$summary"
exit "$failed"
