#!/usr/bin/env bash
# checkpoint_test.sh <shardtune binary> <case>: sharded checkpoints, resume (same and other rank
# counts), preemption by signal, faults during a save, and the consolidated export, end to end
# on the debug preset and synthetic data, as users run them.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
demo="$ST_SOURCE_DIR/examples/demo.ini"

# [global_batch=N] train_on --exit <code> --ranks <n> --micro <micro_batch> --accum <grad_accum> --dir <run dir>
#          [overrides...]: the demo config on $work/data (or $train_data / $val_data), ${steps:-10}
#          steps, fp32 export at the end.
train_on() {
  local expected=0 ranks="" micro="" accum="" dir=""
  while [ $# -gt 0 ]; do
    case $1 in
      --exit) expected=$2; shift 2 ;;
      --ranks) ranks=$2; shift 2 ;;
      --micro) micro=$2; shift 2 ;;
      --accum) accum=$2; shift 2 ;;
      --dir) dir=$2; shift 2 ;;
      *) break ;;
    esac
  done
  run --exit "$expected" "$mpiexec" -np "$ranks" --oversubscribe "$bin" train --config "$demo" --progress off \
    --data.train="${train_data:-$work/data/train}" --data.val="${val_data:-$work/data/val}" --train.output_dir="$dir" \
    --train.micro_batch="$micro" --train.grad_accum="$accum" --train.global_batch="${global_batch:-0}" \
    --train.max_steps="${steps:-10}" --train.log_every=1 --train.eval_every="${eval_every:-0}" --ckpt.export=true --ckpt.export_dtype=fp32 "$@"
}

same_weights() { cmp "$1/export/model.safetensors" "$2/export/model.safetensors" || fail "final weights differ: $1 vs $2"; }
ckpt() { echo "$1/checkpoints/step_$(printf %08d "$2")"; }
# close_losses <a.jsonl> <b.jsonl>: the train losses of steps 6-10 within 5%: fp32 and 8-bit
# moments from the same state follow the same course (accuracies over 8 pairs are too coarse to
# compare). Not a rounding bound: the 8-bit run rounds its moments to codes every step and the
# losses part by 0.24-0.31% by step 10 (default kernels, Haswell); 5% is 16x over that. The
# coding itself is checked exactly (the first steps after the resume at 1e-12, AdamW8bit.*,
# oracle_adamw8bit_bitsandbytes).
close_losses() {
  python3 - "$1" "$2" "$(dirname "$0")/../support" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[3])
import tolerance_log
losses = [{r["step"]: r["loss"] for r in map(json.loads, open(p)) if "loss" in r} for p in sys.argv[1:3]]
worst = max(abs(losses[0][s] - losses[1][s]) / losses[0][s] for s in range(6, 11))
print(f"losses of steps 6-10: largest relative difference {worst:.3g} (tolerance 0.05)")
run_of = lambda path: os.path.basename(os.path.dirname(path))
tolerance_log.record("losses 6-10", run_of(sys.argv[1]), run_of(sys.argv[2]), worst, 0.05)
sys.exit(worst > 0.05)
PY
  tolerance_verdict $? "losses of $1 and $2 are more than 5% apart"
}

synth_data --dir "$work/data" --pairs 400
case "$case_name" in
  resume_is_bit_exact)
    # 10 steps straight vs 5 steps, resume, 5 steps (the first 5 steps are those of the straight run).
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5
    expect_output 'checkpoint: step 5 saved'
    [ -f "$(ckpt "$work/straight" 5)/COMPLETE" ] || fail "no complete step 5"
    [ "$(readlink "$work/straight/checkpoints/latest")" = step_00000010 ] || fail "latest does not point at step 10"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)"
    expect_output 'resumed from .*step_00000005 at step 5 \(written by 2 rank\(s\), now 2\)'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    same_weights "$work/straight" "$work/resumed"
    # bf16 compute: its weight copies must be rebuilt from the masters read in.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/bf16_straight" --ckpt.every=5 --train.dtype=bf16
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/bf16_resumed" --resume "$(ckpt "$work/bf16_straight" 5)" --train.dtype=bf16
    same_metrics --expected "$work/bf16_straight/metrics.jsonl" --actual "$work/bf16_resumed/metrics.jsonl" --tolerance 0 --from-step 6
    same_weights "$work/bf16_straight" "$work/bf16_resumed"
    # The same through --resume auto in the run's own directory, after its later records are dropped.
    rm -rf "$(ckpt "$work/straight" 10)"
    cp "$work/straight/metrics.jsonl" "$work/straight.jsonl"
    cp -r "$work/straight/export" "$work/straight_export"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5 --resume auto
    expect_output 'resumed from .*step_00000005 at step 5'
    same_metrics --expected "$work/straight.jsonl" --actual "$work/straight/metrics.jsonl" --tolerance 0 --from-step 1
    [ "$(metric --file "$work/straight/metrics.jsonl" --key loss --pick count)" = 10 ] || fail "resumed metrics.jsonl does not hold steps 1-10 once each"
    # TensorBoard: the first session's steps 6-10 (and the final eval) are cut from its file, the
    # resumed ones appended.
    expect_output 'tensorboard: .*kept [0-9]+ event\(s\) up to step 5, dropped 6 logged after it'
    tensorboard_matches_metrics "$work/straight"
    cmp "$work/straight_export/model.safetensors" "$work/straight/export/model.safetensors" || fail "auto resume differs"
    ;;
  packed_resume_is_bit_exact)
    # With packed, prompt-shared rows the sampler still counts pairs: a resume continues exactly.
    packed=(--data.packing=true --dpo.share_prompt=true)
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5 "${packed[@]}"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)" "${packed[@]}"
    expect_output 'resumed from .*step_00000005 at step 5'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    same_weights "$work/straight" "$work/resumed"
    ;;
  mixture_resume_is_bit_exact)
    # data.train mixes two datasets 0.7 / 0.3 and data.val lists both: the shares are logged,
    # each validation dataset has its loss, and resume (same or other rank count) continues
    # the mixture's order exactly.
    synth_data --dir "$work/other" --pairs 150 --max-len 24
    train_data="$work/data/train:0.7, $work/other/train:0.3" val_data="$work/data/val, $work/other/val" eval_every=5
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5
    expect_output "train: data mixture over 80 samples: $work/data/train 0\.7[0-9]+ \(weight 0\.7000\), $work/other/train 0\.[23][0-9]+ \(weight 0\.3000\)"
    python3 - "$work/straight/metrics.jsonl" "$work" <<'PY' || fail "mixture metrics"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
work = sys.argv[2]
train = [r for r in records if "loss" in r and "step" in r]
shares = [r[f"mix/{work}/data/train"] for r in train]
assert all(abs(s - 0.7) <= 1 / 8 for s in shares) and abs(shares[-1] - 0.7) <= 1 / 80, shares
evals = [r for r in records if "eval/loss" in r]
assert len(evals) == 2, evals
for r in evals:
    parts = [r[f"eval/{work}/data/val/samples"], r[f"eval/{work}/other/val/samples"]]
    assert sum(parts) == r["eval/samples"] and min(parts) > 0, r
    assert min(r[f"eval/{work}/data/val/loss"], r[f"eval/{work}/other/val/loss"]) <= r["eval/loss"] <= \
        max(r[f"eval/{work}/data/val/loss"], r[f"eval/{work}/other/val/loss"]), r
print("mixture shares", shares[-1], "and per-dataset eval losses logged")
PY
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)"
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    same_weights "$work/straight" "$work/resumed"
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/resharded" --resume "$(ckpt "$work/straight" 5)"
    expect_output 'written by 2 rank\(s\), now 4'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resharded/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    ;;
  adamw8bit_resume)
    # 8-bit AdamW states (codes + absmax) resume bit-exactly, on other rank counts too, and a
    # checkpoint of the other optimizer is converted (said so) rather than misread.
    eight=(--optim.name=adamw8bit)
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5 "${eight[@]}"
    grep -q '"optimizer": "adamw8bit"' "$(ckpt "$work/straight" 5)/manifest.json" || fail "manifest.json does not name adamw8bit"
    /usr/bin/python3 - "$(ckpt "$work/straight" 5)/rank_00000.h5" <<'PY' || fail "rank file lacks the 8-bit states"
import sys, h5py
f = h5py.File(sys.argv[1], "r")
code, absmax = f["exp_avg_code.layer.0"], f["exp_avg_sq_absmax.layer.0"]
assert code.dtype == "uint8" and absmax.dtype == "float32", (code.dtype, absmax.dtype)
assert code.shape[0] % 256 == 0 and absmax.shape[0] == code.shape[0] // 256, (code.shape, absmax.shape)
assert "exp_avg.layer.0" not in f
PY
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)" "${eight[@]}"
    expect_output 'resumed from .*step_00000005 at step 5 \(written by 2 rank\(s\), now 2\)'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    same_weights "$work/straight" "$work/resumed"
    for ranks in 1 4; do
      train_on --exit 0 --ranks "$ranks" --micro 2 --accum $((4 / ranks)) --dir "$work/np$ranks" \
        --resume "$(ckpt "$work/straight" 5)" "${eight[@]}"
      expect_output "written by 2 rank\(s\), now $ranks"
      same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/np$ranks/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    done
    # Decoded moments are the coded ones exactly: step 6 updates as the 8-bit run does (step 7's
    # loss is still the same; the grad norm sums over other shard bounds, so 1e-12, not 0); from
    # step 7 on adamw keeps what 8 bits would round away.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/decoded" --resume "$(ckpt "$work/straight" 5)"
    expect_output 'holds adamw8bit moments; resumed as adamw \(decoded\)'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/decoded/metrics.jsonl" --tolerance 1e-12 \
      --from-step 6 --to-step 7
    close_losses "$work/straight/metrics.jsonl" "$work/decoded/metrics.jsonl"
    # fp32 moments coded: step 6 starts from the same weights, then follows the fp32 run closely.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/fp32" --ckpt.every=5
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/coded" --resume "$(ckpt "$work/fp32" 5)" "${eight[@]}"
    expect_output 'holds adamw moments; resumed as adamw8bit \(coded blockwise in 8 bits\)'
    same_metrics --expected "$work/fp32/metrics.jsonl" --actual "$work/coded/metrics.jsonl" --tolerance 1e-12 --from-step 6 --to-step 6
    close_losses "$work/fp32/metrics.jsonl" "$work/coded/metrics.jsonl"
    ;;
  resume_resharded)
    # 4 -> 2 ranks at a global batch of 8, and 2 -> 3 ranks at 12: the same samples in the same order.
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/four" --ckpt.every=5
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/four_to_two" --resume "$(ckpt "$work/four" 5)"
    expect_output 'written by 4 rank\(s\), now 2'
    same_metrics --expected "$work/four/metrics.jsonl" --actual "$work/four_to_two/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    train_on --exit 0 --ranks 2 --micro 3 --accum 2 --dir "$work/two" --ckpt.every=5
    train_on --exit 0 --ranks 3 --micro 2 --accum 2 --dir "$work/two_to_three" --resume "$(ckpt "$work/two" 5)"
    expect_output 'written by 2 rank\(s\), now 3'
    same_metrics --expected "$work/two/metrics.jsonl" --actual "$work/two_to_three/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    # A config whose accumulation was written for the first rank count (a LlamaFactory YAML's
    # gradient_accumulation_steps): the resume derives it from the checkpoint's global batch.
    train_on --exit 0 --ranks 3 --micro 2 --accum 1 --dir "$work/two_to_three_written" --resume "$(ckpt "$work/two" 5)"
    expect_output 'train: grad_accum 1 \(command line\) -> 2 keeps the checkpoint.s global batch 12 = 2 x 2 x 3 ranks'
    same_metrics --expected "$work/two_to_three/metrics.jsonl" --actual "$work/two_to_three_written/metrics.jsonl" --tolerance 0 --from-step 6
    # Another global batch asked for on resume, and one that no whole accumulation keeps, are
    # refused before anything is written, naming what works.
    global_batch=6 train_on --exit 2 --ranks 3 --micro 2 --accum 0 --dir "$work/wrong_batch" --resume "$(ckpt "$work/two" 5)"
    expect_output 'global batch of 12 pairs, and train.global_batch asks 6; set train.global_batch = 0'
    train_on --exit 2 --ranks 4 --micro 2 --accum 1 --dir "$work/no_whole" --resume "$(ckpt "$work/two" 5)"
    expect_output "checkpoint's global batch of 12 pairs is not a multiple of train.micro_batch\(2\) x ranks\(4\).*rank counts that keep it with train.micro_batch = 2: 1, 2, 3, 6; train.micro_batch values that keep it on 4 ranks: 1, 3"
    [ -z "$(find "$work/wrong_batch" "$work/no_whole" -name 'step_*' 2>/dev/null)" ] || fail "a refused resume wrote a checkpoint"
    ;;
  expert_parallel_resume)
    # Expert parallelism on debug-moe (8 experts, top 2): 4 ranks with dist.expert_parallel = 2
    # follow the run whose ranks hold every expert to the summation order's rounding (so do LoRA
    # on packed, prompt-shared rows at P = 4 and QLoRA at P = 2); its
    # checkpoint resumes at P = 4 and on 1 rank (an experts unit keeps the world's geometry, so it
    # reshards as any unit does). Sizes that do not divide the ranks or the experts, and a model
    # without experts, are refused by name before anything is written.
    moe=(--model.preset=debug-moe)
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/p1" "${moe[@]}"
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/p2" --ckpt.every=5 "${moe[@]}" --dist.expert_parallel=2
    expect_output 'experts split over 2 ranks'
    same_metrics --expected "$work/p1/metrics.jsonl" --actual "$work/p2/metrics.jsonl" --tolerance "$other_order_metrics"
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/p4" --resume "$(ckpt "$work/p2" 5)" "${moe[@]}" \
      --dist.expert_parallel=4
    expect_output 'experts split over 4 ranks'
    same_metrics --expected "$work/p2/metrics.jsonl" --actual "$work/p4/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    train_on --exit 0 --ranks 1 --micro 2 --accum 4 --dir "$work/one" --resume "$(ckpt "$work/p2" 5)" "${moe[@]}"
    expect_output 'written by 4 rank\(s\), now 1'
    same_metrics --expected "$work/p2/metrics.jsonl" --actual "$work/one/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    # LoRA on attention and experts, on packed rows with shared prompts (a layer routes the
    # packed tokens, wherever they sit): the adapters stay whole on every rank, a rank's experts
    # add their slices; the base's experts are split.
    lora=(--train.method=lora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,gate,up,down
          --data.packing=true --dpo.share_prompt=true)
    steps=4 train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/lora1" "${moe[@]}" "${lora[@]}"
    steps=4 train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/lora4" "${moe[@]}" "${lora[@]}" \
      --dist.expert_parallel=4
    same_metrics --expected "$work/lora1/metrics.jsonl" --actual "$work/lora4/metrics.jsonl" --tolerance "$other_order_metrics"
    # QLoRA: the base's projections in NF4, its experts unquantized (as bitsandbytes leaves
    # transformers' stacked experts), split as in a LoRA run.
    qlora=(--train.method=qlora --lora.r=4 --lora.alpha=8 --lora.target_modules=q,v,gate,up,down)
    steps=4 train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/qlora1" "${moe[@]}" "${qlora[@]}"
    steps=4 train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/qlora2" "${moe[@]}" "${qlora[@]}" \
      --dist.expert_parallel=2
    same_metrics --expected "$work/qlora1/metrics.jsonl" --actual "$work/qlora2/metrics.jsonl" --tolerance "$other_order_metrics"
    train_on --exit 2 --ranks 4 --micro 2 --accum 1 --dir "$work/r1" "${moe[@]}" --dist.expert_parallel=3
    expect_output 'dist.expert_parallel = 3 .* does not divide the 4 ranks of this job'
    train_on --exit 2 --ranks 3 --micro 2 --accum 1 --dir "$work/r2" "${moe[@]}" --dist.expert_parallel=3
    expect_output "dist.expert_parallel = 3 does not divide the model's 8 experts"
    train_on --exit 2 --ranks 2 --micro 2 --accum 2 --dir "$work/r3" --dist.expert_parallel=2
    expect_output 'dist.expert_parallel = 2: the model has no experts; set dist.expert_parallel = 1'
    # The plan says so too, for the cluster it plans for.
    run --exit 2 "$bin" train --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --train.output_dir="$work/r4" "${moe[@]}" --train.global_batch=0 --dist.expert_parallel=3 --dry-run --world 1x6
    expect_output "dist.expert_parallel = 3 does not divide the model's 8 experts"
    run --exit 0 "$bin" train --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --train.output_dir="$work/r5" "${moe[@]}" --train.global_batch=0 --dist.expert_parallel=4 --dry-run --world 1x8
    expect_output 'experts: 8 per sparse layer x 2 layer\(s\), top 2 per token; split over 4 ranks'
    for dir in r1 r2 r3 r4 r5; do [ ! -e "$work/$dir/metrics.jsonl" ] || fail "$dir: a refused run wrote metrics"; done
    ;;
  lora_resume_and_export)
    # LoRA on a saved HF model (a 1-step full run's export): adapter-only checkpoints that resume
    # bit-exactly (dropout included) and resharded, refusals for another method, rank or base,
    # a PEFT adapter export and a merged export that independent code reproduces.
    steps=1 train_on --exit 0 --ranks 1 --micro 2 --accum 4 --dir "$work/base_run"
    lora=(--train.method=lora --lora.alpha=8 --lora.target_modules=q,v,down --optim.lr=5e-3)
    on_base=(--model.path="$work/base_run/export" --lora.r=4)
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5 "${lora[@]}" "${on_base[@]}" --lora.dropout=0.1
    python3 - "$(ckpt "$work/straight" 5)/manifest.json" <<'PY' || fail "LoRA manifest"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["adapter"]["method"] == "lora" and m["adapter"]["r"] == 4 and m["adapter"]["target_modules"] == "q,v,down", m["adapter"]
assert "safetensors" in m["adapter"]["base_fingerprint"], m["adapter"]
assert m["units"][0]["numel"] == 0 and m["units"][-1]["numel"] == 0, m["units"]
PY
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)" "${lora[@]}" "${on_base[@]}" \
      --lora.dropout=0.1
    expect_output 'resumed from .*step_00000005 at step 5 \(written by 2 rank\(s\), now 2\)'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    cmp "$work/straight/export/adapter_model.safetensors" "$work/resumed/export/adapter_model.safetensors" ||
      fail "resumed adapters differ"
    # Dropout masks follow each rank's rows, so resharding is compared without dropout.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/plain" --ckpt.every=5 "${lora[@]}" "${on_base[@]}"
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/resharded" --resume "$(ckpt "$work/plain" 5)" "${lora[@]}" \
      "${on_base[@]}"
    expect_output 'written by 2 rank\(s\), now 4'
    same_metrics --expected "$work/plain/metrics.jsonl" --actual "$work/resharded/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)"
    expect_output 'written by a LoRA run \(adapters only\); resume it with train.method = lora'
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)" "${lora[@]}" --lora.r=8 \
      --model.path="$work/base_run/export"
    expect_output "its adapters' r is 4 there and 8 here"
    cp -r "$work/base_run/export" "$work/other_base"
    printf 'x' | dd of="$work/other_base/model.safetensors" bs=1 seek=200 conv=notrunc status=none
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)" "${lora[@]}" \
      --model.path="$work/other_base" --lora.r=4
    expect_output "its adapters' base_fingerprint is .* there and .* here"
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" export --checkpoint "$work/straight/checkpoints" --output "$work/merged2" --merge --dtype fp32
    run --exit 0 "$bin" export --checkpoint "$work/straight/checkpoints" --output "$work/merged1" --merge --dtype fp32
    cmp "$work/merged1/model.safetensors" "$work/merged2/model.safetensors" || fail "merged exports on 1 and 2 ranks differ"
    run --exit 0 "${ST_REFERENCE_PYTHON:-python3}" "$(dirname "$0")/peft_check.py" "$work/base_run/export" "$work/straight/export" "$work/merged1" q_proj,v_proj,down_proj
    expect_output 'peft_check: 6 adapted weights \(r 4, scale 2.0\)'
    run --exit 0 "$bin" export --checkpoint "$work/straight/checkpoints" --output "$work/adapter" --dtype fp32
    cmp "$work/adapter/adapter_model.safetensors" "$work/straight/export/adapter_model.safetensors" ||
      fail "export of the last checkpoint differs from the run's own adapter export"
    run --exit 2 "$bin" export --checkpoint "$work/base_run/checkpoints" --output "$work/nope" --merge
    expect_output '--merge applies to LoRA checkpoints'
    ;;
  qlora_resume_and_export)
    # QLoRA on a saved HF model: the checkpoint records the quantization recipe beside the base's
    # fingerprint; resume is bit-exact on the same ranks and within 1e-5 on others (every rank
    # count quantizes to the same bytes); another method or recipe is refused; the PEFT export
    # and the merge onto the full-precision base, which says so, as for LoRA.
    steps=1 train_on --exit 0 --ranks 1 --micro 2 --accum 4 --dir "$work/base_run"
    adapters=(--lora.alpha=8 --lora.target_modules=q,v,down --optim.lr=5e-3 --model.path="$work/base_run/export" --lora.r=4)
    qlora=(--train.method=qlora "${adapters[@]}")
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=5 "${qlora[@]}"
    expect_output 'train: QLoRA r 4, alpha 8 on q,v,down: [0-9]+ trainable parameters .* frozen in nf4 with 8-bit absmax'
    python3 - "$(ckpt "$work/straight" 5)/manifest.json" <<'PY' || fail "QLoRA manifest"
import json, sys
m = json.load(open(sys.argv[1]))
a = m["adapter"]
assert a["method"] == "qlora" and a["r"] == 4, a
assert a["quantization"] == {"quant_type": "nf4", "block_size": 64, "double_quant": True}, a
assert "safetensors" in a["base_fingerprint"], a
PY
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/resumed" --resume "$(ckpt "$work/straight" 5)" "${qlora[@]}"
    expect_output 'resumed from .*step_00000005 at step 5 \(written by 2 rank\(s\), now 2\)'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resumed/metrics.jsonl" --tolerance 0 --from-step 6
    cmp "$work/straight/export/adapter_model.safetensors" "$work/resumed/export/adapter_model.safetensors" ||
      fail "resumed adapters differ"
    train_on --exit 0 --ranks 4 --micro 2 --accum 1 --dir "$work/resharded" --resume "$(ckpt "$work/straight" 5)" "${qlora[@]}"
    expect_output 'written by 2 rank\(s\), now 4'
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/resharded/metrics.jsonl" --tolerance "$other_order_metrics" --from-step 6
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)" \
      --train.method=lora "${adapters[@]}"
    expect_output "its adapters' method is \"qlora\" there and \"lora\" here"
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)" "${qlora[@]}" \
      --lora.double_quant=false
    expect_output "its adapters' quantization is .*\"double_quant\":true.* there and .*\"double_quant\":false.* here"
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/straight" 5)"
    expect_output 'written by a QLoRA run \(adapters only\); resume it with train.method = qlora'
    run --exit 0 "$bin" export --checkpoint "$work/straight/checkpoints" --output "$work/merged" --merge --dtype fp32
    expect_output 'QLoRA adapters merged onto the full-precision base .*base_run/export, not onto the NF4-dequantized weights'
    run --exit 0 "${ST_REFERENCE_PYTHON:-python3}" "$(dirname "$0")/peft_check.py" "$work/base_run/export" "$work/straight/export" "$work/merged" q_proj,v_proj,down_proj
    expect_output 'peft_check: 6 adapted weights \(r 4, scale 2.0\)'
    ;;
  preempt_and_resume)
    # SIGUSR1 to one rank mid-run: the step finishes, every rank saves, the job exits 75; a
    # restart with --resume auto ends with the weights of an uninterrupted run.
    steps=150
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight"
    ( for _ in $(seq 600); do
        [ -f "$work/cut/metrics.jsonl" ] && [ "$(wc -l <"$work/cut/metrics.jsonl")" -ge 5 ] && break
        sleep 0.05
      done
      pkill -USR1 -f -n -- "--train.output_dir=$work/cut" ) &
    train_on --exit 75 --ranks 2 --micro 2 --accum 2 --dir "$work/cut"
    wait
    expect_output 'stop requested \(SIGUSR1\) - checkpoint of step [0-9]+ saved'
    stopped=$(readlink "$work/cut/checkpoints/latest")
    [ -n "$stopped" ] && [ "$stopped" != step_00000150 ] || fail "no early checkpoint ($stopped)"
    [ ! -d "$work/cut/export" ] || fail "a preempted run exported"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/cut" --resume auto
    expect_output "resumed from .*$stopped"
    same_weights "$work/straight" "$work/cut"
    same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/cut/metrics.jsonl" --tolerance 0 --from-step 1
    ;;
  stop_during_setup_writes_nothing)
    # A stop request while the run is being set up (fault-injected at each phase's end): the
    # preemption exit code, nothing written for a fresh run, an existing run's outputs untouched.
    for phase in data model reference checkpoint; do
      for signal in TERM USR1; do
        code=143
        [ "$signal" = USR1 ] && code=75
        ST_TEST_SIGNAL_AT=$phase:$signal train_on --exit $code --ranks 2 --micro 2 --accum 2 --dir "$work/fresh"
        expect_output "stop requested \\(SIG$signal\\) during the $phase set-up, before training; nothing was written"
        [ -z "$(find "$work/fresh" -name 'metrics.jsonl' -o -name 'config.resolved.ini' -o -name 'step_*' \
                  -o -name export)" ] || fail "a stop during the $phase set-up left outputs: $(find "$work/fresh")"
      done
    done
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/done" --ckpt.every=5
    before=$(cd "$work/done" && find . -type f -exec md5sum {} + | sort)
    ST_TEST_SIGNAL_AT=checkpoint:TERM train_on --exit 143 --ranks 2 --micro 2 --accum 2 --dir "$work/done" \
      --resume "$(ckpt "$work/done" 5)"
    [ "$(cd "$work/done" && find . -type f -exec md5sum {} + | sort)" = "$before" ] ||
      fail "a stop during the set-up of a resumed run changed its outputs"
    ;;
  stop_after_last_step_redoes_export)
    # A stop after the last step's checkpoint skips what is left and says so; --resume auto then
    # writes the export (the same weights as a run never stopped) and nothing else.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight"
    ST_TEST_SIGNAL_AT=eval:USR1 eval_every=5 train_on --exit 75 --ranks 2 --micro 2 --accum 2 --dir "$work/eval"
    expect_output 'stop requested \(SIGUSR1\) after the checkpoint of the last step; the final eval and the export are skipped'
    ST_TEST_SIGNAL_AT=export:TERM train_on --exit 143 --ranks 2 --micro 2 --accum 2 --dir "$work/cut"
    expect_output 'stop requested \(SIGTERM\) after the checkpoint of the last step and the final eval; the export is skipped; --resume auto writes it'
    for dir in "$work/eval" "$work/cut"; do
      [ -f "$(ckpt "$dir" 10)/COMPLETE" ] || fail "no complete checkpoint of the last step in $dir"
      [ ! -e "$dir/export" ] || fail "$dir has an export"
      train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$dir" --resume auto
      expect_output 'the run is complete \(its checkpoint is at step 10 of 10\) but its export is missing'
      same_weights "$work/straight" "$dir"
    done
    # A job killed in the middle of the export (its .tmp left behind) is redone the same way.
    rm -rf "$work/cut/export"
    mkdir -p "$work/cut/export.tmp" && echo partial >"$work/cut/export.tmp/model.safetensors"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/cut" --resume auto
    expect_output 'but its export is missing'
    same_weights "$work/straight" "$work/cut"
    [ ! -e "$work/cut/export.tmp" ] || fail "the interrupted export's leftovers stayed"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/cut" --resume auto
    expect_output 'the run is already complete'
    ;;
  resume_older_sets_newer_aside)
    # --resume to step 4 of a finished run: steps 6..10 and the export move to
    # checkpoints/abandoned-4-<time>/ (said so), the new timeline saves its own 6..10 (retention
    # never deletes the one just written), `latest` names a complete checkpoint throughout, and
    # a later --resume auto continues the new timeline, not the abandoned one.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --ckpt.every=2
    cp "$work/run/export/model.safetensors" "$work/first.safetensors"
    steps=7 train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --ckpt.every=2 --ckpt.keep_last=2 \
      --resume "$(ckpt "$work/run" 4)"
    expect_output 'resuming from step 4 while newer checkpoints exist: moved step_00000006, step_00000008, step_00000010 and the export made from them to .*/abandoned-4-'
    aside=$(find "$work/run/checkpoints" -maxdepth 1 -name 'abandoned-4-*')
    [ -f "$aside/step_00000010/COMPLETE" ] && [ -f "$aside/export/model.safetensors" ] || fail "the abandoned timeline was not kept"
    cmp "$aside/export/model.safetensors" "$work/first.safetensors" || fail "the kept export changed"
    [ -f "$(ckpt "$work/run" 7)/COMPLETE" ] || fail "the new timeline's last checkpoint (step 7) was not kept"
    latest=$(readlink "$work/run/checkpoints/latest")
    [ "$latest" = step_00000007 ] && [ -f "$work/run/checkpoints/$latest/COMPLETE" ] || fail "latest -> '$latest'"
    steps=9 train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --ckpt.every=2 --resume auto
    expect_output 'resumed from .*step_00000007 at step 7'
    ;;
  kill_during_save)
    # A rank dies (SIGKILL) in the middle of step 4's save: step 2 stays complete, the half-written
    # step_00000004.tmp is ignored, removed on restart, and the run resumes from step 2.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/straight" --ckpt.every=2
    out=$(ST_TEST_KILL_IN_SAVE=4 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" --progress off \
      --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$work/killed" \
      --train.micro_batch=2 --train.grad_accum=2 --train.global_batch=0 --train.max_steps=10 --train.log_every=1 \
      --train.eval_every=0 --ckpt.export=true --ckpt.export_dtype=fp32 --ckpt.every=2 2>&1)
    [ $? -ne 0 ] || fail "the killed job exited 0"
    [ -f "$(ckpt "$work/killed" 2)/COMPLETE" ] || fail "step 2 is not complete"
    [ -d "$(ckpt "$work/killed" 4).tmp" ] || fail "no half-written step 4 (was the rank killed?)"
    [ ! -e "$(ckpt "$work/killed" 4)" ] || fail "step 4 looks saved"
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/killed" --ckpt.every=2 --resume auto
    expect_output 'removed 1 interrupted save'
    expect_output 'resumed from .*step_00000002 at step 2'
    [ ! -e "$(ckpt "$work/killed" 4).tmp" ] || fail "the .tmp was not cleaned"
    same_weights "$work/straight" "$work/killed"
    ;;
  disk_full_keeps_old)
    # Writes past a file-size limit fail like a full disk: a clear error, a non-zero exit, and
    # the earlier checkpoint stays complete and loadable.
    steps=2 train_on --exit 0 --ranks 1 --micro 2 --accum 4 --dir "$work/run"
    before=$(md5sum "$(ckpt "$work/run" 2)"/*)
    # (PMIx keeps its shared-memory store in files, which the limit would break: gds=hash.)
    out=$( (ulimit -f 1000; PMIX_MCA_gds=hash "$bin" train --config "$demo" --progress off --data.train="$work/data/train" \
      --data.val="$work/data/val" --train.output_dir="$work/run" --train.micro_batch=2 --train.grad_accum=4 \
      --train.global_batch=0 --train.max_steps=4 --train.log_every=1 --train.eval_every=0 --resume auto) 2>&1)
    rc=$?
    echo "$out" | tail -n 5
    [ $rc -ne 0 ] || fail "exit 0 although the checkpoint could not be written"
    expect_output 'writing the checkpoint failed \(disk full or not writable\? earlier checkpoints are untouched\)'
    [ "$(md5sum "$(ckpt "$work/run" 2)"/*)" = "$before" ] || fail "step 2 changed"
    [ ! -e "$(ckpt "$work/run" 4)" ] || fail "a step 4 checkpoint appeared"
    steps=4 train_on --exit 0 --ranks 1 --micro 2 --accum 4 --dir "$work/run" --resume auto
    expect_output 'resumed from .*step_00000002'
    ;;
  unwritable_dir_fails_first)
    touch "$work/not_a_dir"
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --ckpt.dir="$work/not_a_dir/checkpoints"
    expect_output "ckpt.dir = $work/not_a_dir/checkpoints is not writable"
    [ ! -e "$work/run/metrics.jsonl" ] || fail "trained although checkpoints cannot be written"
    ;;
  refusals)
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --ckpt.every=5
    train_on --exit 2 --ranks 2 --micro 2 --accum 2 --dir "$work/run"
    expect_output 'already holds a run \(checkpoints in .*\); continue it with --resume auto'
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/run" 5)" --model.preset=bench-100m
    expect_output 'was written for another model .*config.json [a-z_]+ is .* there and .* here'
    printf 'x' | dd of="$(ckpt "$work/run" 5)/rank_00001.h5" bs=1 seek=5000 conv=notrunc status=none
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/run" 5)"
    expect_output 'rank file .*step_00000005/rank_00001.h5 fails its CRC-32 check'
    sed -i 's/"format_version": 1/"format_version": 99/' "$(ckpt "$work/run" 10)/manifest.json"
    train_on --exit 1 --ranks 2 --micro 2 --accum 2 --dir "$work/other" --resume "$(ckpt "$work/run" 10)"
    expect_output 'format_version 99 is not the 1 this shardtune reads'
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run" --train.overwrite=true
    [ "$(ls "$work/run/checkpoints" | tr '\n' ' ')" = "latest step_00000010 " ] || fail "overwrite kept old checkpoints"
    ;;
  async_and_retention)
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/sync" --ckpt.every=2
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/async" --ckpt.every=2 --ckpt.async=true --ckpt.keep_last=2
    expect_output 'checkpoint: step 10 saved .*async'
    [ "$(ls "$work/async/checkpoints" | tr '\n' ' ')" = "latest step_00000008 step_00000010 " ] ||
      fail "keep_last 2 left: $(ls "$work/async/checkpoints")"
    same_weights "$work/sync" "$work/async"
    same_metrics --expected "$work/sync/metrics.jsonl" --actual "$work/async/metrics.jsonl" --tolerance 0 --from-step 1
    ;;
  export_loads_back)
    # The export at the end equals `shardtune export` of the last checkpoint on any rank count,
    # bf16 and sharded with an index, and `shardtune score` loads it.
    train_on --exit 0 --ranks 2 --micro 2 --accum 2 --dir "$work/run"
    for ranks in 1 3; do
      run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" export --checkpoint "$work/run/checkpoints" \
        --output "$work/export$ranks" --dtype fp32
      expect_output "export: step 10 .* on $ranks rank\(s\) .*peak RSS per rank"
      cmp "$work/run/export/model.safetensors" "$work/export$ranks/model.safetensors" || fail "export on $ranks ranks differs"
    done
    run --exit 2 "$bin" export --checkpoint "$work/run/checkpoints" --output "$work/export1"
    expect_output 'exists; pass --overwrite'
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" export --checkpoint "$(ckpt "$work/run" 10)" --output "$work/bf16" --shard-gb 0.0003
    [ -f "$work/bf16/model-00001-of-00002.safetensors" ] && [ -f "$work/bf16/model.safetensors.index.json" ] ||
      fail "no sharded export: $(ls "$work/bf16")"
    grep -q '"torch_dtype": "bfloat16"' "$work/bf16/config.json" || fail "config.json lacks torch_dtype bfloat16"
    echo '{"prompt_ids": [1, 5, 9], "completion_ids": [4, 7, 2]}' >"$work/pairs.jsonl"
    for model in "$work/run/export" "$work/bf16"; do
      run --exit 0 "$bin" score --model "$model" --input "$work/pairs.jsonl" --output "$work/scores.jsonl" --overwrite
      grep -q '"logp"' "$work/scores.jsonl" || fail "score wrote no log-prob for $model"
    done
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
