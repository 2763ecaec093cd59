#!/usr/bin/env bash
# train_test.sh <shardtune binary> <case>: `shardtune train`, precompute-ref and plot end to end
# on the debug preset and synthetic data, as users run them (mpirun, config files, exit codes).
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
demo="$ST_SOURCE_DIR/examples/demo.ini"

# train_run --ranks <n> --dir <run dir> [overrides...]: the demo config on the synthetic data in
# $work/data (4 micro-batches per step over the ranks).
train_run() {
  local ranks="" dir=""
  while [ $# -gt 0 ]; do
    case $1 in
      --ranks) ranks=$2; shift 2 ;;
      --dir) dir=$2; shift 2 ;;
      *) break ;;
    esac
  done
  run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" train --config "$demo" --progress off \
    --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$dir" \
    --train.grad_accum=$((4 / ranks)) "$@"
}

# close_weights <export a> <export b> <relative tolerance>: the same fp32 tensors, each within
# the tolerance of its largest magnitude (the standard library reads the safetensors files).
close_weights() {
  python3 - "$1/model.safetensors" "$2/model.safetensors" "$3" "$(dirname "$0")/../support" <<'PY'
import array, json, os, struct, sys
sys.path.insert(0, sys.argv[4])
import tolerance_log
def read(path):
    raw = open(path, "rb").read()
    (size,) = struct.unpack("<Q", raw[:8])
    header, out = json.loads(raw[8:8 + size]), {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", (name, info["dtype"])
        begin, end = info["data_offsets"]
        out[name] = array.array("f", raw[8 + size + begin:8 + size + end])
    return out
a, b, tolerance = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
assert a.keys() == b.keys(), (sorted(a), sorted(b))
worst = max(max(abs(x - y) for x, y in zip(a[k], b[k])) / max(max(abs(x) for x in a[k]), 1e-30) for k in a)
print(f"weights: largest relative difference {worst:.3g} (tolerance {tolerance:g})")
run_of = lambda path: os.path.basename(os.path.dirname(os.path.dirname(path)))  # <run>/export/model.safetensors
tolerance_log.record("weights", run_of(sys.argv[1]), run_of(sys.argv[2]), worst, tolerance)
sys.exit(worst > tolerance)
PY
  tolerance_verdict $? "final weights differ: $1 vs $2"
}

case "$case_name" in
  demo_one_rank | demo_two_ranks)
    ranks=1
    [ "$case_name" = demo_two_ranks ] && ranks=2
    synth_data --dir "$work/data" --pairs 1000
    # TensorBoard files on two ranks (the default); one rank runs with them switched off.
    tensorboard=true
    [ "$ranks" = 1 ] && tensorboard=false
    train_run --ranks "$ranks" --dir "$work/run" --train.max_steps=40 --train.eval_every=0 --train.tensorboard=$tensorboard
    expect_output "train: dpo \(sigmoid, reference online\) on $ranks rank"
    expect_output '^\[r0/[0-9] [^]]+\] step 40/40  loss [0-9.]+  acc '
    expect_output 'eval reward accuracy'
    metrics="$work/run/metrics.jsonl"
    expect_learned --file "$metrics" --loss-drop 0.05 --at-least rewards/accuracies=0.9 \
      --at-least eval/rewards/accuracies=0.9
    [ "$(metric --file "$metrics" --key loss --pick count)" = 8 ] || fail "expected 8 train records (log_every 5)"
    if [ "$tensorboard" = true ]; then
      tensorboard_matches_metrics "$work/run"
    else
      [ ! -e "$work/run/tensorboard" ] || fail "train.tensorboard=false wrote $work/run/tensorboard"
    fi
    for key in lr grad_norm tokens_per_s samples_per_s step_time_s peak_memory_gib comm/all_gather_bytes \
      skipped_steps logps/chosen rewards/margins tflops_per_device time/data_s time/reference_s time/forward_s \
      time/backward_s time/grad_sync_s time/optimizer_s; do
      metric --file "$metrics" --key "$key" --pick last >/dev/null || fail "metrics lack $key"
    done
    [ -f "$work/run/config.resolved.ini" ] || fail "no resolved config"
    ;;
  loss_sigmoid | loss_ipo | loss_hinge | loss_simpo | loss_orpo | stage_sft)
    if [ "$case_name" = stage_sft ]; then
      synth_data --dir "$work/data" --pairs 300 --kind sft
      train_run --ranks 2 --dir "$work/run" --train.stage=sft --train.max_steps=15
      expect_output 'train: sft on 2 rank'
    else
      loss=${case_name#loss_}
      synth_data --dir "$work/data" --pairs 300
      train_run --ranks 2 --dir "$work/run" --dpo.loss="$loss" --train.max_steps=15
      expect_output "train: dpo \($loss, reference (online|none)\)"
    fi
    expect_learned --file "$work/run/metrics.jsonl" --loss-drop 0
    ;;
  lora_learns_sft_and_dpo)
    # LoRA DPO learns with the base alone as the online reference, equals the same run on
    # reference log-probs precomputed from the base, and LoRA SFT learns.
    synth_data --dir "$work/data" --pairs 1000
    lora=(--train.method=lora --lora.target_modules=q,k,v,o,gate,up,down --optim.lr=5e-3)
    train_run --ranks 2 --dir "$work/online" "${lora[@]}" --train.max_steps=40 --dpo.reference=online
    expect_output 'train: LoRA r 16, alpha 32 on q,k,v,o,gate,up,down: [0-9]+ trainable parameters \([0-9.]+% of the [0-9]+ frozen in fp32\)'
    expect_output 'train: dpo \(sigmoid, reference online\)'
    expect_learned --file "$work/online/metrics.jsonl" --loss-drop 0.02 --at-least eval/rewards/accuracies=0.6
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" precompute-ref --config "$demo" \
      --data.train="$work/data/train" --data.val="$work/data/val" --dpo.reference=precomputed
    # 20 steps each, as precomputed_equals_online compares full runs.
    train_run --ranks 2 --dir "$work/pre" "${lora[@]}" --train.max_steps=20 --dpo.reference=precomputed
    expect_output 'reference precomputed'
    train_run --ranks 2 --dir "$work/online20" "${lora[@]}" --train.max_steps=20 --dpo.reference=online
    same_metrics --expected "$work/online20/metrics.jsonl" --actual "$work/pre/metrics.jsonl" --tolerance "$other_order_metrics"
    synth_data --dir "$work/sft" --pairs 300 --kind sft
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" --progress off \
      --data.train="$work/sft/train" --data.val="$work/sft/val" --train.output_dir="$work/sft_run" --train.grad_accum=2 \
      --train.stage=sft "${lora[@]}" --train.max_steps=40
    expect_output 'train: sft on 2 rank'
    expect_learned --file "$work/sft_run/metrics.jsonl" --loss-drop 0.05
    ;;
  qlora_learns_sft_and_dpo)
    # QLoRA DPO learns with its quantized base alone as the online reference (auto picks it even
    # where the data has precomputed log-probs, and precomputed is refused), and QLoRA SFT learns.
    synth_data --dir "$work/data" --pairs 1000
    qlora=(--train.method=qlora --lora.target_modules=q,k,v,o,gate,up,down --optim.lr=5e-3)
    train_run --ranks 2 --dir "$work/dpo" "${qlora[@]}" --train.max_steps=40
    expect_output 'train: QLoRA r 16, alpha 32 on q,k,v,o,gate,up,down: [0-9]+ trainable parameters \([0-9.]+% of the [0-9]+ frozen in nf4 with 8-bit absmax, the rest in fp32\)'
    expect_output 'train: dpo \(sigmoid, reference online\)'
    expect_learned --file "$work/dpo/metrics.jsonl" --loss-drop 0.02 --at-least eval/rewards/accuracies=0.6
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" precompute-ref --config "$demo" \
      --data.train="$work/data/train" --data.val="$work/data/val" --dpo.reference=precomputed
    train_run --ranks 2 --dir "$work/auto" "${qlora[@]}" --train.max_steps=2 --lora.double_quant=false
    expect_output 'train: dpo \(sigmoid, reference online\)'
    expect_output 'frozen in nf4, the rest in fp32'
    run --exit 2 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" --progress off \
      --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$work/refused" "${qlora[@]}" \
      --dpo.reference=precomputed
    expect_output "dpo.reference = precomputed with train.method = qlora: .* set dpo.reference = online"
    synth_data --dir "$work/sft" --pairs 300 --kind sft
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" --progress off \
      --data.train="$work/sft/train" --data.val="$work/sft/val" --train.output_dir="$work/sft_run" --train.grad_accum=2 \
      --train.stage=sft "${qlora[@]}" --train.max_steps=40
    expect_output 'train: sft on 2 rank'
    expect_learned --file "$work/sft_run/metrics.jsonl" --loss-drop 0.05
    ;;
  precomputed_equals_online)
    synth_data --dir "$work/data" --pairs 300 --pairs-per-shard 100
    # An objective that reads no reference gets none computed, and the data stays as it was.
    run --exit 2 "$bin" precompute-ref --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --dpo.loss=simpo
    expect_output 'precompute-ref: dpo \(simpo, reference none\) reads no reference log-probs'
    ls "$work/data/train" | grep -q '\.ref\.h5$' && fail "shards rewritten for an objective without a reference"
    # The training run's own config (it asks for precomputed log-probs, which do not exist yet),
    # on 3 ranks although its global batch is laid out for 2: precompute-ref needs neither.
    run --exit 0 "$mpiexec" -np 3 --oversubscribe "$bin" precompute-ref --config "$demo" \
      --data.train="$work/data/train" --data.val="$work/data/val" --dpo.reference=precomputed
    expect_output 'precompute-ref: 270 pairs of .*train scored'
    ls "$work/data/train" | grep -q '\.ref\.h5$' || fail "no rewritten shards"
    ls "$work/data/train" | grep -Eq '^part-[0-9-]+\.h5$' && fail "old shards left behind"
    grep -q '"cutoff_len": 1024' "$work/data/train/manifest.json" || fail "manifest lacks the reference record"
    train_run --ranks 2 --dir "$work/pre" --dpo.reference=precomputed --train.max_steps=20 --data.verify_checksums=true
    expect_output 'reference precomputed'
    train_run --ranks 2 --dir "$work/online" --dpo.reference=online --train.max_steps=20
    expect_output 'reference online'
    same_metrics --expected "$work/pre/metrics.jsonl" --actual "$work/online/metrics.jsonl" --tolerance "$other_order_metrics"
    # precompute-ref with packed, prompt-shared rows scores the same log-probs.
    cp -r "$work/data" "$work/shared_data"
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" precompute-ref --config "$demo" \
      --data.train="$work/shared_data/train" --data.val="$work/shared_data/val" --dpo.reference=precomputed \
      --data.packing=true --dpo.share_prompt=true
    run --exit 0 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" --progress off \
      --data.train="$work/shared_data/train" --data.val="$work/shared_data/val" --train.output_dir="$work/pre_shared" \
      --train.grad_accum=2 --dpo.reference=precomputed --train.max_steps=20
    same_metrics --expected "$work/online/metrics.jsonl" --actual "$work/pre_shared/metrics.jsonl" --tolerance "$other_order_metrics"
    # The reference log-probs belong to one truncation: another cutoff must be refused.
    run --exit 2 "$bin" train --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --train.output_dir="$work/other" --data.cutoff_len=16 --train.grad_accum=4
    expect_output 'computed with cutoff_len 1024 but data.cutoff_len = 16'
    # ... and one starting model and dtype: another model's (seed) or dtype's are refused by name.
    grep -q '"fingerprint": "preset debug (seed 42)"' "$work/data/train/manifest.json" ||
      fail "the manifest does not record the scoring model's fingerprint: $(grep -A5 '"reference"' "$work/data/train/manifest.json")"
    run --exit 2 "$bin" train --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --train.output_dir="$work/other" --train.grad_accum=4 --train.seed=7
    expect_output 'data/train/manifest.json: reference.fingerprint: its reference log-probs were computed with preset debug \(seed 42\) \(preset debug \(seed 42\)\), not with this run.s model preset debug \(seed 7\)'
    run --exit 2 "$bin" train --config "$demo" --data.train="$work/data/train" --data.val="$work/data/val" \
      --train.output_dir="$work/other" --train.grad_accum=4 --train.dtype=bf16
    expect_output 'reference.dtype: its reference log-probs were computed in fp32, this run computes in bf16'
    [ ! -e "$work/other/metrics.jsonl" ] || fail "a refused run wrote metrics"
    ;;
  rerun_is_identical)
    synth_data --dir "$work/data" --pairs 300
    train_run --ranks 2 --dir "$work/a" --train.max_steps=20
    train_run --ranks 2 --dir "$work/b" --train.max_steps=20
    same_metrics --expected "$work/a/metrics.jsonl" --actual "$work/b/metrics.jsonl" --tolerance 0
    ;;
  stage_rm)
    # A reward model on the demo job's pairs: it learns to rank them (held-out reward accuracy);
    # packed and prompt-shared rows, and 1, 2 and 4 ranks, give the plain run's numbers; its
    # export and checkpoint serve the same rewards (score --reward) and pairwise accuracy (eval
    # --pairs) on 1 and 2 ranks; what it cannot do is refused by name; LoRA and QLoRA learn.
    synth_data --dir "$work/data" --pairs 600
    train_run --ranks 2 --dir "$work/plain" --train.stage=rm --train.max_steps=40 --optim.lr=1e-3 \
      --ckpt.export=true --ckpt.export_dtype=fp32
    expect_output 'train: rm \(Bradley-Terry\) on 2 rank'
    expect_learned --file "$work/plain/metrics.jsonl" --loss-drop 0.05 --at-least eval/rewards/accuracies=0.9
    ! metric --file "$work/plain/metrics.jsonl" --key logps/chosen --pick last >/dev/null || fail "a reward model logs log-probs"
    grep -q '"LlamaForSequenceClassification"' "$work/plain/export/config.json" || fail "the export is no reward model"
    # The equivalence runs take optim.eps = 1e-6: with 1e-8 Adam turns the rounding noise of
    # near-zero gradients into lr-sized steps, and the rewards (the head's raw scores, not beta x
    # a log-ratio) carried it: 1 vs 4 ranks 1.04e-5 apart under Haswell at 1e-8, 3.6e-7 at 1e-6
    # (as the mpi tier's test_optim).
    rm_equivalence=(--train.stage=rm --train.max_steps=12 --optim.lr=1e-3 --optim.eps=1e-6)
    train_run --ranks 2 --dir "$work/plain12" "${rm_equivalence[@]}"
    for layout in --data.packing=true --dpo.share_prompt=true; do
      train_run --ranks 2 --dir "$work/laid_out" "${rm_equivalence[@]}" "$layout"
      same_metrics --expected "$work/plain12/metrics.jsonl" --actual "$work/laid_out/metrics.jsonl" --tolerance "$other_order_metrics"
      rm -rf "$work/laid_out"
    done
    for ranks in 1 4; do
      train_run --ranks "$ranks" --dir "$work/np$ranks" "${rm_equivalence[@]}"
    done
    same_metrics --expected "$work/np1/metrics.jsonl" --actual "$work/np4/metrics.jsonl" --tolerance "$other_order_metrics"
    run --exit 0 "$bin" synth --jsonl "$work/pairs.jsonl" --pairs 50 --seed 5
    python3 - "$work/pairs.jsonl" "$work/val.jsonl" <<'PY' || fail "could not write the sequences to score"
import json, sys
with open(sys.argv[1]) as f, open(sys.argv[2], "w") as out:
    for line in f:
        pair = json.loads(line)
        out.write(json.dumps({"prompt_ids": pair["prompt_ids"], "completion_ids": pair["chosen_ids"]}) + "\n")
PY
    run --exit 0 "$bin" score --reward --model "$work/plain/export" --input "$work/val.jsonl" --output "$work/export.jsonl"
    expect_output "rewarded by $work/plain/export"
    for ranks in 1 2; do
      run --exit 0 "$mpiexec" -np "$ranks" "$bin" score --reward --checkpoint "$work/plain/checkpoints" \
        --input "$work/val.jsonl" --output "$work/checkpoint$ranks.jsonl"
      # Other ranks cut other padded batches: fp32 noise, not equality.
      python3 - "$work/export.jsonl" "$work/checkpoint$ranks.jsonl" "$(dirname "$0")/../support" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[3])
import tolerance_log
a, b = ([json.loads(l)["reward"] for l in open(path)] for path in sys.argv[1:3])
worst = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b, strict=True))
print(f"{len(a)} rewards, largest difference {worst:.3g}")
tolerance_log.record("rewards", os.path.basename(sys.argv[1]), os.path.basename(sys.argv[2]), worst, 1e-5)
sys.exit(worst > 1e-5)
PY
      tolerance_verdict $? "the checkpoint on $ranks rank(s) rewards otherwise than the export"
      run --exit 0 "$mpiexec" -np "$ranks" "$bin" eval --checkpoint "$work/plain/checkpoints" --pairs "$work/data/val" \
        --output "$work/eval$ranks.json"
    done
    python3 - "$work/eval1.json" "$work/eval2.json" "$work/plain/metrics.jsonl" "$(dirname "$0")/../support" <<'PY' ||
import json, sys
sys.path.insert(0, sys.argv[4])
import tolerance_log
one, two = (json.load(open(path))["results"]["pairwise_accuracy"] for path in sys.argv[1:3])
trained = [json.loads(l) for l in open(sys.argv[3]) if "eval/rewards/accuracies" in l][-1]
print(f"eval --pairs: accuracy {one['accuracy']} (2 ranks {two['accuracy']}), margin {one['margin']:.6g}; "
      f"training's last validation: {trained['eval/rewards/accuracies']}, {trained['eval/rewards/margins']:.6g}")
for label, other in (("training's validation", trained["eval/rewards/margins"]), ("2 ranks", two["margin"])):
    tolerance_log.record("eval margin", "1 rank", label, abs(one["margin"] - other) / max(1, abs(one["margin"])), 1e-5)
sys.exit(not (one["accuracy"] == two["accuracy"] == trained["eval/rewards/accuracies"]
              and abs(one["margin"] - trained["eval/rewards/margins"]) <= 1e-5 * max(1, abs(one["margin"]))
              and abs(one["margin"] - two["margin"]) <= 1e-5 * max(1, abs(one["margin"]))))
PY
      fail "eval --pairs on 1 and 2 ranks and training's validation disagree"
    # Refusals: a reward model's jobs on a causal LM, and a causal LM's on a reward model.
    run --exit 2 "$bin" score --reward --preset debug --input "$work/val.jsonl" --output "$work/no.jsonl"
    expect_output "is a causal LM \(LlamaForCausalLM\), not a reward model"
    run --exit 2 "$bin" eval --preset debug --pairs "$work/data/val" --output "$work/no.json"
    expect_output "pairwise accuracy is a reward model's"
    run --exit 2 "$bin" train --model.path="$work/plain/export" --data.train="$work/data/train" --train.stage=dpo \
      --train.output_dir="$work/no" --progress off
    expect_output "holds a reward model \(LlamaForSequenceClassification\); train.stage = dpo trains a causal LM"
    # LoRA and QLoRA: the score trains in full beside the adapters; a LoRA checkpoint rewards as
    # its merged export does.
    for method in lora qlora; do
      train_run --ranks 2 --dir "$work/$method" --train.stage=rm --train.max_steps=80 --optim.lr=2e-3 \
        --train.method=$method --lora.r=8 --ckpt.export=true --ckpt.export_dtype=fp32
      expect_learned --file "$work/$method/metrics.jsonl" --loss-drop 0.05 --at-least eval/rewards/accuracies=0.9
    done
    grep -q '"modules_to_save": \[\s*"score"' <(tr -d '\n' <"$work/lora/export/adapter_config.json") ||
      fail "the LoRA export does not save the score"
    run --exit 0 "$bin" export --checkpoint "$work/lora/checkpoints" --output "$work/merged" --merge --dtype fp32
    run --exit 0 "$bin" score --reward --model "$work/merged" --input "$work/val.jsonl" --output "$work/merged.jsonl"
    run --exit 0 "$bin" score --reward --checkpoint "$work/lora/checkpoints" --input "$work/val.jsonl" \
      --output "$work/lora.jsonl"
    python3 - "$work/merged.jsonl" "$work/lora.jsonl" <<'PY' || fail "the LoRA checkpoint rewards otherwise than its merged export"
import json, sys
a, b = ([json.loads(l)["reward"] for l in open(path)] for path in sys.argv[1:3])
worst = max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b, strict=True))
print(f"LoRA: {len(a)} rewards, merged export against the checkpoint {worst:.3g}")
sys.exit(worst > 1e-5)
PY
    ;;
  packed_equals_plain)
    # data.packing and dpo.share_prompt change the rows, not the objective: the same losses,
    # rewards and gradient norms as plain rows, on 1 and 2 ranks, with less padding.
    synth_data --dir "$work/data" --pairs 300
    train_run --ranks 2 --dir "$work/plain" --train.max_steps=12
    for ranks in 1 2; do
      train_run --ranks "$ranks" --dir "$work/packed$ranks" --train.max_steps=12 --data.packing=true --dpo.share_prompt=true
      same_metrics --expected "$work/plain/metrics.jsonl" --actual "$work/packed$ranks/metrics.jsonl" --tolerance "$other_order_metrics"
    done
    # The masked oracle, and micro-batches cut by the auto token budget: the same objective.
    train_run --ranks 2 --dir "$work/masked" --train.max_steps=12 --data.packing=true --dpo.share_prompt=true \
      --model.attention=masked
    same_metrics --expected "$work/plain/metrics.jsonl" --actual "$work/masked/metrics.jsonl" --tolerance "$other_order_metrics"
    train_run --ranks 2 --dir "$work/budget" --train.max_steps=12 --data.packing=true --dpo.share_prompt=true \
      --data.micro_batch_tokens=-1
    expect_output 'data.micro_batch_tokens auto -> 4096 tokens per micro-batch'
    same_metrics --expected "$work/plain/metrics.jsonl" --actual "$work/budget/metrics.jsonl" --tolerance "$other_order_metrics"
    plain_padding=$(metric --file "$work/plain/metrics.jsonl" --key padding_fraction --pick last)
    packed_padding=$(metric --file "$work/packed2/metrics.jsonl" --key padding_fraction --pick last)
    python3 -c "import sys; sys.exit(not float('$packed_padding') < float('$plain_padding'))" ||
      fail "packing did not cut padding: $packed_padding vs $plain_padding"
    # SFT packs too.
    rm -rf "$work/data"
    synth_data --dir "$work/data" --pairs 300 --kind sft
    train_run --ranks 2 --dir "$work/sft_plain" --train.max_steps=8 --train.stage=sft
    train_run --ranks 2 --dir "$work/sft_packed" --train.max_steps=8 --train.stage=sft --data.packing=true
    same_metrics --expected "$work/sft_plain/metrics.jsonl" --actual "$work/sft_packed/metrics.jsonl" --tolerance "$other_order_metrics"
    ;;
  ranks_1_2_4_agree)
    synth_data --dir "$work/data" --pairs 300
    for ranks in 1 2 4; do train_run --ranks "$ranks" --dir "$work/np$ranks" --train.max_steps=20; done
    same_metrics --expected "$work/np1/metrics.jsonl" --actual "$work/np2/metrics.jsonl" --tolerance "$other_order_metrics"
    same_metrics --expected "$work/np1/metrics.jsonl" --actual "$work/np4/metrics.jsonl" --tolerance "$other_order_metrics"
    ;;
  context_parallel_equals_one_rank)
    # dist.context_parallel = C splits each row over C consecutive ranks: the same losses,
    # rewards, grad norms, validation and final weights as one rank (fp32, within the bounds
    # argued below), for DPO (plain
    # and prompt-shared rows) and SFT (plain and packed), at C = 2, 4 and 2 x 2 (data x context);
    # the synthetic rows' lengths are seldom a multiple of 2C. AdamW's eps is 1e-4 here: its update
    # lr m / (sqrt(v) + eps) divides the fp32 rounding of a gradient that nearly cancels (an
    # embedding row of a prompt token in both branches) by eps, and at the default 1e-8 a 1e-9
    # difference moves such a row by 7% of a step (the gradients themselves agree within 5e-7,
    # mpi_fsdp_context).
    # The runs differ only in the order of fp32 sums (other GEMM blockings, the gathered keys,
    # the gradient reduction): harness.sh's other-order bounds.
    # cp_run <ranks> <C> <dir> [overrides...]: 8 pairs per step over the data-parallel ranks.
    cp_run() {
      local ranks=$1 parts=$2 dir=$3
      shift 3
      run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" train --config "$demo" --progress off \
        --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$dir" \
        --train.grad_accum=$((4 * parts / ranks)) --dist.context_parallel="$parts" --train.max_steps=8 \
        --train.eval_every=4 --train.log_every=1 --ckpt.every=4 --ckpt.export=true --ckpt.export_dtype=fp32 \
        --optim.eps=1e-4 "$@"
    }
    for kind in dpo sft; do
      rm -rf "$work/data"
      synth_data --dir "$work/data" --pairs 200 --kind "$kind"
      for rows in plain laid_out; do
        extra=(--train.stage="$kind")
        [ "$rows" = laid_out ] && [ "$kind" = dpo ] && extra+=(--dpo.share_prompt=true)
        [ "$rows" = laid_out ] && [ "$kind" = sft ] && extra+=(--data.packing=true)
        cp_run 1 1 "$work/$kind-$rows-1" "${extra[@]}"
        for shape in 2x2 4x4 4x2; do
          cp_run "${shape%x*}" "${shape#*x}" "$work/$kind-$rows-$shape" "${extra[@]}"
          [ "$shape" = 4x2 ] && expect_output 'context parallel: each row split over 2 consecutive ranks \(2 data-parallel'
          same_metrics --expected "$work/$kind-$rows-1/metrics.jsonl" --actual "$work/$kind-$rows-$shape/metrics.jsonl" \
            --tolerance "$other_order_metrics"
          same_metrics --expected "$work/$kind-$rows-1/metrics.jsonl" --actual "$work/$kind-$rows-$shape/metrics.jsonl" \
            --tolerance "$other_order_metrics" --from-step 1
          close_weights "$work/$kind-$rows-1/export" "$work/$kind-$rows-$shape/export" "$other_order_weights"
        done
      done
    done
    # Checkpoints move between (data, context) layouts: the 1 x 4 run's step 4 resumed as 2 x 2
    # and on one rank continues the straight run (SFT packed rows, the last data made above).
    for shape in 4x2 1x1; do
      cp_run "${shape%x*}" "${shape#*x}" "$work/resumed-$shape" --train.stage=sft --data.packing=true \
        --resume "$work/sft-laid_out-4x4/checkpoints/step_00000004"
      expect_output "resumed from .*step_00000004 at step 4 \\(written by 4 rank\\(s\\), now ${shape%x*}\\)"
      same_metrics --expected "$work/sft-laid_out-1/metrics.jsonl" --actual "$work/resumed-$shape/metrics.jsonl" \
        --tolerance "$other_order_metrics" --from-step 5
      close_weights "$work/sft-laid_out-1/export" "$work/resumed-$shape/export" "$other_order_weights"
    done
    # Adapters (LoRA with dropout: the masks hash each token's place in the whole rows; QLoRA)
    # and KTO (its mismatched reference-point pass) split as well, within the same bounds (a KTO
    # reward is beta x a difference of log-prob sums near -150 too).
    for kind in dpo kto; do
      rm -rf "$work/data"
      synth_data --dir "$work/data" --pairs 200 --kind "$kind"
      runs=(lora qlora)
      [ "$kind" = kto ] && runs=(kto)
      for name in "${runs[@]}"; do
        extra=(--train.stage="$kind")
        [ "$name" != kto ] && extra+=(--train.method="$name" --lora.r=8 --lora.dropout=0.1)
        cp_run 1 1 "$work/$name-1" "${extra[@]}"
        cp_run 2 2 "$work/$name-2x2" "${extra[@]}"
        same_metrics --expected "$work/$name-1/metrics.jsonl" --actual "$work/$name-2x2/metrics.jsonl" --tolerance "$other_order_metrics" \
          --from-step 1
      done
    done
    # A layout it cannot run is refused by name, before any step.
    base=(--config "$demo" --progress off --data.train="$work/data/train" --train.stage=sft)
    run --exit 2 "$mpiexec" -np 3 --oversubscribe "$bin" train "${base[@]}" --train.output_dir="$work/bad1" \
      --dist.context_parallel=2 --train.global_batch=0 --train.grad_accum=1
    expect_output 'dist.context_parallel = 2 \(command line\) does not divide the 3 ranks of this job'
    run --exit 2 "$mpiexec" -np 2 --oversubscribe "$bin" train "${base[@]}" --train.output_dir="$work/bad2" \
      --dist.context_parallel=2 --train.grad_accum=4 --dist.sharding=hybrid --model.attention=masked
    expect_output 'dist.sharding = hybrid \(command line\) must be full or grad_op with dist.context_parallel = 2'
    expect_output 'model.attention = masked \(command line\) must be varlen with dist.context_parallel = 2'
    for dir in bad1 bad2; do [ ! -e "$work/$dir/metrics.jsonl" ] || fail "$dir: a refused run wrote metrics"; done
    ;;
  adamw8bit_learns_like_adamw)
    # The demo job with 8-bit AdamW states ends where adamw does (reward accuracy within 0.02),
    # and 1, 2 and 4 ranks code the same blocks.
    synth_data --dir "$work/data" --pairs 1000
    for name in adamw adamw8bit; do
      train_run --ranks 2 --dir "$work/$name" --optim.name=$name --train.max_steps=60 --train.eval_every=0
    done
    expect_output 'train: optimizer adamw8bit, moments [0-9.]+ MiB on rank 0 \(2.03[0-9]* bytes per owned parameter\)'
    for key in eval/rewards/accuracies rewards/accuracies; do
      full=$(metric --file "$work/adamw/metrics.jsonl" --key "$key" --pick last)
      eight=$(metric --file "$work/adamw8bit/metrics.jsonl" --key "$key" --pick last)
      python3 -c "import sys; sys.exit(abs($full - $eight) > 0.02)" ||
        fail "$key at the end: adamw $full, adamw8bit $eight (more than 0.02 apart)"
    done
    expect_learned --file "$work/adamw8bit/metrics.jsonl" --loss-drop 0.05 --at-least eval/rewards/accuracies=0.9
    # 1 and 4 ranks: the same blocks, so the same steps until a moment sits on a code boundary.
    # The two sum the step's gradients in another order (fp32 rounding), and an 8-bit code that
    # flips on it compounds: over 20 steps the records drift apart by 1.4e-3 (OpenBLAS core
    # Prescott), 2.2e-3 (Haswell), 1.8e-5 (SkylakeX), 1.4e-5 (Sandybridge), while the first 5
    # steps agree within 3.2e-6 on all four. So the first 5 steps are compared (other-order
    # bound), and after them both learn; a bound on 20 steps would measure where codes flip (it
    # was 5e-3, 2.3x over Haswell's drift). That any shard count codes the same blocks is
    # AdamW8bit.AnyShardCountGivesTheWholeUnitsNumbersBitForBit's, bit for bit.
    for ranks in 1 4; do
      train_run --ranks "$ranks" --dir "$work/np$ranks" --optim.name=adamw8bit --train.max_steps=20 --train.log_every=1
    done
    same_metrics --expected "$work/np1/metrics.jsonl" --actual "$work/np4/metrics.jsonl" --tolerance "$other_order_metrics" \
      --from-step 1 --to-step 5
    for ranks in 1 4; do expect_learned --file "$work/np$ranks/metrics.jsonl" --loss-drop 0.02; done
    ;;
  step_in_backward_equals_ordinary_step)
    # optim.step_in_backward changes when each unit is updated, not what: the same weights and
    # metrics bit for bit on 1, 2 and 4 ranks (8-bit moments, bf16 gradient shards and LoRA on 2).
    synth_data --dir "$work/data" --pairs 300
    one_step=(--train.grad_accum=1 --train.global_batch=0 --optim.grad_clip=0 --train.max_steps=8 --train.log_every=1
      --ckpt.export=true --ckpt.export_dtype=fp32)
    for variant in np1 np2 np4 adamw8bit reduce_bf16 lora; do
      ranks=2 extra=()
      case $variant in
        np*) ranks=${variant#np} ;;
        adamw8bit) extra=(--optim.name=adamw8bit) ;;
        reduce_bf16) extra=(--train.reduce_dtype=bf16) ;;
        lora) extra=(--train.method=lora --lora.r=4) ;;
      esac
      for mode in false true; do
        run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" train --config "$demo" --progress off \
          --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$work/$variant-$mode" \
          --train.micro_batch=$((8 / ranks)) "${one_step[@]}" "${extra[@]}" --optim.step_in_backward=$mode
      done
      weights=model.safetensors
      [ "$variant" = lora ] && weights=adapter_model.safetensors
      cmp "$work/$variant-false/export/$weights" "$work/$variant-true/export/$weights" ||
        fail "$variant: the step inside backward changed the weights"
      same_metrics --expected "$work/$variant-false/metrics.jsonl" --actual "$work/$variant-true/metrics.jsonl" \
        --tolerance 0 --from-step 1
    done
    ;;
  uneven_last_batch)
    # 25 pairs, global batch 8: each epoch ends with one pair, so on 2 ranks one rank has no
    # micro-batch in that step and runs a zero-weight one; the result must match 1 rank.
    "$bin" synth --output "$work/data" --pairs 25 --seed 3 >/dev/null || fail "synth"
    for ranks in 1 2; do
      run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" train --config "$demo" --progress off \
        --data.train="$work/data/train" --data.val "" --train.output_dir="$work/np$ranks" \
        --train.grad_accum=$((4 / ranks)) --train.max_steps=0 --train.epochs=3 --train.log_every=1
    done
    [ "$(metric --file "$work/np2/metrics.jsonl" --key loss --pick count)" = 12 ] || fail "expected 12 steps (4 per epoch)"
    same_metrics --expected "$work/np1/metrics.jsonl" --actual "$work/np2/metrics.jsonl" --tolerance "$other_order_metrics"
    ;;
  bad_configs)
    synth_data --dir "$work/data" --pairs 100
    base=(--config "$demo" --data.val="$work/data/val" --progress off)
    data=(--data.train="$work/data/train")
    run --exit 2 "$mpiexec" -np 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r1" --train.global_batch=10
    expect_output 'train.micro_batch\(2\) x train.grad_accum\(2\) x ranks\(2\) = 8 != train.global_batch\(10\) \(command line\)'
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r2" --dpo.loss=kto --train.grad_accum=4
    expect_output "dpo.loss = kto \(command line\) is not one of sigmoid\|ipo\|hinge\|simpo\|orpo"
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r3" --dpo.reference=none --train.grad_accum=4
    expect_output 'dpo.reference = none .* sigmoid compares with a reference model'
    run --exit 1 "$bin" train "${base[@]}" --train.output_dir="$work/r4" --data.train="$work/nowhere" --train.grad_accum=4
    expect_output "$work/nowhere/manifest.json: cannot open"
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r5" --dpo.reference=precomputed --train.grad_accum=4
    expect_output 'has no ref_chosen_logp/ref_rejected_logp; run `shardtune precompute-ref'
    run --exit 1 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r6" --train.stage=sft --train.grad_accum=4
    expect_output 'holds dpo pairs but the stage trains on sft pairs'
    # The step inside backward, asked for where it cannot hold: every reason at once, by name.
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r7" --optim.step_in_backward=true \
      --train.grad_accum=4 --train.dtype=fp16
    expect_output 'optim.grad_clip = 1 \(.*\) must be 0 with optim.step_in_backward = true: a unit is updated before'
    expect_output 'train.grad_accum = 4 \(command line\) must be 1 with optim.step_in_backward = true'
    expect_output 'train.dtype = fp16 \(command line\) fp16 needs loss scaling'
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/r8" --optim.step_in_backward=true \
      --optim.grad_clip=0 --train.grad_accum=1 --train.global_batch=0 --data.packing=true --data.micro_batch_tokens=512
    expect_output 'data.micro_batch_tokens = 512 \(command line\) must be 0 with optim.step_in_backward = true'
    # LoRA on a mixture-of-experts model's experts: as PEFT adapts them, or refused by name.
    moe=("$bin" train --model.preset=debug-moe "${data[@]}" --train.method=lora --progress off)
    run --exit 2 "${moe[@]}" --train.output_dir="$work/r9" --lora.target_modules=q,gate,up,down --lora.dropout=0.1
    expect_output "lora.dropout > 0: the experts' adapters .* take no dropout, as in PEFT"
    run --exit 2 "${moe[@]}" --train.output_dir="$work/r10" --lora.target_modules=gate,up,down --lora.rslora=true
    expect_output 'lora.rslora = true with the experts adapted .* set lora.rslora = false'
    run --exit 1 "${moe[@]}" --train.output_dir="$work/r11" --lora.target_modules=q,gate
    expect_output 'lora.target_modules: .* name gate, up and down all three, or none of them'
    # Qwen3.5-MoE's QLoRA: bitsandbytes holds its shared expert in 4 bits too; not built, refused.
    run --exit 2 "$bin" train --model.preset=debug-qwen3.5-moe "${data[@]}" --progress off \
      --train.output_dir="$work/r13" --train.method=qlora
    expect_output 'train.method = qlora on qwen3_5_moe_text: .* use train.method = lora'
    for dir in r1 r2 r3 r4 r5 r6 r7 r8 r9 r10 r11 r13; do
      [ ! -e "$work/$dir/metrics.jsonl" ] || fail "$dir: a refused run wrote metrics"
    done
    # An earlier run's outputs are kept unless train.overwrite is set.
    train_run --ranks 1 --dir "$work/done" --train.max_steps=2
    cp "$work/done/metrics.jsonl" "$work/before.jsonl"
    run --exit 2 "$bin" train "${base[@]}" "${data[@]}" --train.output_dir="$work/done" --train.grad_accum=4 --train.max_steps=2
    expect_output 'already holds a run \(checkpoints in .*\); continue it with --resume auto, choose a new train.output_dir, or pass --train.overwrite=true'
    cmp -s "$work/done/metrics.jsonl" "$work/before.jsonl" || fail "the earlier run's metrics changed"
    ;;
  stuck_rank_aborts_naming_unit_and_step)
    # Rank 1 stops for good before a gather in step 3 (injected): every rank ends within the
    # collective timeout (5 s here), the message naming the collective, the unit and the step.
    synth_data --dir "$work/data" --pairs 200
    started=$(date +%s)
    out=$(ST_TEST_STALL_AT=1:3:2 timeout 120 "$mpiexec" -np 2 --oversubscribe "$bin" train --config "$demo" \
      --progress off --data.train="$work/data/train" --data.val="$work/data/val" --train.output_dir="$work/run" \
      --train.grad_accum=2 --train.max_steps=10 --dist.timeout_s=5 2>&1)
    rc=$? took=$(($(date +%s) - started))
    echo "$out" | tail -n 12
    [ "$rc" -ne 124 ] || fail "a rank stuck in a training step hung the job (killed by timeout after 120 s)"
    [ "$rc" -ne 0 ] || fail "the job with a stuck rank exited 0"
    [ "$took" -le 60 ] || fail "the job took $took s to abort with dist.timeout_s = 5"
    expect_output 'all_gather[^ ]* .* on unit [0-9]+ step 3 timed out after [0-9.]+ s \(dist.timeout_s = 5\)'
    expect_output 'aborting all ranks'
    ;;
  plot_renders)
    synth_data --dir "$work/data" --pairs 200
    train_run --ranks 2 --dir "$work/run" --train.max_steps=20
    run --exit 0 "$bin" plot "$work/run/metrics.jsonl" -o "$work/loss.svg"
    expect_output 'plot: 2 panel\(s\)'
    python3 - "$work/loss.svg" <<'PY' || fail "the SVG is not well-formed or lacks curves"
import sys, xml.dom.minidom
document = xml.dom.minidom.parse(sys.argv[1])
lines = document.getElementsByTagName("polyline")
assert len(lines) == 4, len(lines)  # train + eval loss, train + eval accuracy
assert all(len(line.getAttribute("points").split()) >= 1 for line in lines)
PY
    run --exit 2 "$bin" plot "$work/run/metrics.jsonl" -o "$work/loss.svg"
    expect_output 'exists; pass --overwrite'
    run --exit 1 "$bin" plot "$work/run/config.resolved.ini" -o "$work/bad.svg"
    expect_output 'config.resolved.ini:1: not a metrics record'
    [ ! -e "$work/bad.svg" ] || fail "a failed plot left an output"
    if command -v chromium >/dev/null; then  # the rendering itself, where a browser is installed
      timeout 120 chromium --headless --no-sandbox --disable-gpu --screenshot="$work/loss.png" \
        --window-size=720,650 "file://$work/loss.svg" >/dev/null 2>&1
      [ -s "$work/loss.png" ] || fail "chromium did not render the SVG"
    fi
    ;;
  examples_dry_run)
    synth_data --dir "$work/dpo" --pairs 200
    synth_data --dir "$work/sft" --pairs 200 --kind sft
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/llamafactory-llama3.1-8b-dpo-2x8.ini" --dry-run \
      --world 2x8 --model.path "" --model.preset=llama-3.1-8b --data.train="$work/dpo/train" \
      --train.output_dir="$work/dpo8b"
    expect_output 'configuration valid for 16 ranks \(2 node\(s\) x 8\)'
    expect_output 'batch: global 128 = micro 1 x accum 8 x 16 ranks'
    expect_output 'data: 144 training pairs, 36 validation pairs'
    expect_output '^per GPU: .*GiB'
    grep -q '^lr = 0.0001 ' "$work/dpo8b/config.resolved.ini" || fail "resolved lr"
    # Its 32k variant splits each row over 4 GPUs (the synthetic data has no reference columns).
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/llamafactory-llama3.1-8b-dpo-2x8-32k.ini" --dry-run \
      --world 2x8 --model.path "" --model.preset=llama-3.1-8b --data.train="$work/dpo/train" \
      --train.output_dir="$work/dpo8b32k" --dpo.reference=auto
    expect_output 'batch: global 128 = micro 1 x accum 32 x 4 data-parallel groups of 4 context-parallel ranks'
    expect_output 'micro-batch: 2 row\(s\) x 32768 tokens, each row split over 4 ranks \(context parallel; 4 data-parallel\)'
    expect_output '^per GPU: .*GiB'
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/trl-llama3.2-3b-sft.ini" --dry-run --world 1x8 \
      --model.path "" --model.preset=llama-3.2-3b --data.train="$work/sft/train" --data.val="$work/sft/val" \
      --train.output_dir="$work/sft3b"
    expect_output 'stage sft; compute bf16 on GPUs'
    expect_output 'batch: global 128 = micro 4 x accum 4 x 8 ranks'
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/peft-llama3.1-8b-lora-dpo-1gpu.ini" --dry-run \
      --world 1x1 --model.path "" --model.preset=llama-3.1-8b --data.train="$work/dpo/train" \
      --train.output_dir="$work/lora8b"
    expect_output 'batch: global 16 = micro 2 x accum 8 x 1 ranks'
    expect_output 'of which the frozen LoRA base +1[45]\.[0-9]+ GiB'
    # LoRA's states less the embedding table held in host memory (a full run's states: 134 GiB)
    expect_output 'of which in host memory +0\.98 GiB \(the embedding table'
    expect_output '^per GPU: +[0-9.]+ GiB \(states +14\.[0-9]+ GiB\)'
    # 70B QLoRA DPO at seq 2048 planned on 2 nodes x 8 GPUs of 80 GiB (issue 38): the 4-bit base,
    # recompute = auto keeping what fits.
    run --exit 0 "$bin" train --config "$ST_SOURCE_DIR/examples/llamafactory-llama3.1-8b-dpo-2x8.ini" --dry-run \
      --world 2x8 --model.path "" --model.preset=llama-3.1-70b --train.method=qlora --data.train="$work/dpo/train" \
      --data.cutoff_len=2048 --train.memory_budget_gib=80 --train.output_dir="$work/qlora70b"
    expect_output 'configuration valid for 16 ranks \(2 node\(s\) x 8\)'
    expect_output 'of which the frozen QLoRA base'
    gib=$(sed -nE 's/^per GPU: +([0-9.]+) GiB.*/\1/p' <<<"$out")
    [ -n "$gib" ] && awk -v g="$gib" 'BEGIN { exit !(g <= 80) }' || fail "70B QLoRA on 2x8 plans ${gib:-?} GiB per GPU"
    run --exit 2 "$bin" train --config "$ST_SOURCE_DIR/examples/llamafactory-llama3.1-8b-dpo-2x8.ini" --dry-run \
      --world 2x4 --model.path "" --model.preset=llama-3.1-8b --data.train="$work/dpo/train" \
      --train.output_dir="$work/bad"
    expect_output 'x ranks\(8\) = 64 != train.global_batch\(128\)'
    ;;
  *) fail "unknown case" ;;
esac
echo "PASS [$case_name]"
