#!/usr/bin/env bash
# gpu_train_test.sh <shardtune binary> <case>: training on the GPU (label cuda). fp32_matches_cpu:
# the debug preset's 50-step DPO run in fp32 on the GPU agrees with the same run on the CPU;
# bf16_learns: the bf16 GPU run learns and reports GPU memory; two_ranks_<dtype>_<sharding>: two
# ranks sharing the one GPU (MPI backend staging through host memory) give the one-rank run's
# metrics on the same global batches; qlora_host_embedding: a QLoRA run with its frozen embedding
# table in host memory (lora.host_embedding) gives the same metrics as with it on the GPU, and
# those of the CPU run (the NF4 kernel against its libtorch oracle); grpo_sampling_memory_refused:
# GRPO rollouts of which not one fits the GPU's free memory are refused with the estimate. Skipped (77) without a GPU.
# shellcheck source=../e2e/harness.sh
source "$(dirname "$0")/../e2e/harness.sh"
unset CUDA_VISIBLE_DEVICES  # the harness hides GPUs from the e2e tier; here they are the point
"$bin" --version 2>/dev/null | grep -q 'libtorch: .*(CUDA)' && nvidia-smi -L >/dev/null 2>&1 ||
  { echo "skipped: needs a CUDA build and a GPU"; exit 77; }

synth_data --dir "$work/data" --pairs 1000
gpu_run() {  # gpu_run <run dir> [overrides...]: $ranks ranks (default 1), 50 steps of the demo config
  local dir=$1 ranks=${ranks:-1}
  shift
  run --exit 0 "$mpiexec" -np "$ranks" "$bin" train --config "$ST_SOURCE_DIR/examples/demo.ini" --progress off \
    --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$dir" \
    --train.grad_accum=$((4 / ranks)) --train.max_steps=50 --train.log_every=1 --train.eval_every=0 "$@"
}

case "$case_name" in
  fp32_matches_cpu)
    CUDA_VISIBLE_DEVICES= gpu_run "$work/cpu" --train.dtype=fp32
    gpu_run "$work/gpu" --train.dtype=fp32
    [ "$(metric --file "$work/gpu/metrics.jsonl" --key memory_kind --pick last)" = gpu ] || fail "the GPU run did not run on the GPU"
    # cuBLAS and the CPU sum in other orders; 50 Adam steps let that grow to ~1e-4.
    same_metrics --expected "$work/cpu/metrics.jsonl" --actual "$work/gpu/metrics.jsonl" --tolerance 2e-3
    ;;
  grpo_sampling_memory_refused)
    # Rollouts of which not one completion's caches fit the GPU are refused at start with the
    # estimate, naming the settings that lower it; nothing is written.
    run --exit 0 "$bin" synth --output "$work/prompts" --kind prompt --pairs 16 --seed 4
    run --exit 2 "$bin" train --model.preset=debug --data.train="$work/prompts/train" --train.stage=grpo \
      --grpo.num_generations=8 --grpo.reward_funcs=get_soft_overlong_punishment --train.micro_batch=8 \
      --train.global_batch=8 --train.max_steps=1 --grpo.max_completion_length=1000000000 --progress off \
      --train.output_dir="$work/refused"
    expect_output "grpo's rollouts: sampling one completion of up to 1000001024 tokens .* needs .* GiB .* are free"
    [ ! -e "$work/refused/metrics.jsonl" ] || fail "the refused run wrote metrics"
    ;;
  bf16_learns)
    gpu_run "$work/run" --train.dtype=bf16
    expect_output 'compute bf16'
    metrics="$work/run/metrics.jsonl"
    first=$(metric --file "$metrics" --key loss --pick first) last=$(metric --file "$metrics" --key loss --pick last)
    [ "$(metric --file "$metrics" --key memory_kind --pick last)" = gpu ] || fail "the run did not run on the GPU"
    python3 -c "import sys; sys.exit(not ($last < $first - 0.05))" || fail "did not learn: loss $first -> $last"
    ;;
  two_ranks_*)
    IFS=_ read -r _ _ dtype sharding <<<"$case_name"
    [ "$sharding" = grad ] && sharding=grad_op
    gpu_run "$work/one" --train.dtype="$dtype" --dist.sharding="$sharding"
    ranks=2 gpu_run "$work/two" --train.dtype="$dtype" --dist.sharding="$sharding" --dist.backend=mpi
    [ "$(metric --file "$work/two/metrics.jsonl" --key memory_kind --pick last)" = gpu ] || fail "the 2-rank run did not run on the GPU"
    # fp32: only the reduction order differs; bf16: the GPU-vs-CPU tolerance above.
    tolerance=1e-5
    [ "$dtype" = bf16 ] && tolerance=2e-3
    same_metrics --expected "$work/one/metrics.jsonl" --actual "$work/two/metrics.jsonl" --tolerance "$tolerance"
    ;;
  qlora_host_embedding)
    qlora=(--train.method=qlora --lora.target_modules=q,k,v,o,gate,up,down --optim.lr=5e-3 --train.dtype=fp32)
    gpu_run "$work/host" "${qlora[@]}"
    expect_output 'QLoRA r'
    gpu_run "$work/device" "${qlora[@]}" --lora.host_embedding=false
    CUDA_VISIBLE_DEVICES= gpu_run "$work/cpu" "${qlora[@]}"
    [ "$(metric --file "$work/host/metrics.jsonl" --key memory_kind --pick last)" = gpu ] || fail "the run did not run on the GPU"
    same_metrics --expected "$work/device/metrics.jsonl" --actual "$work/host/metrics.jsonl" --tolerance 1e-6
    same_metrics --expected "$work/cpu/metrics.jsonl" --actual "$work/host/metrics.jsonl" --tolerance 2e-3
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
