#!/usr/bin/env bash
# foreign_config_test.sh <shardtune binary> <case>: a LlamaFactory user's command line and YAMLs
# run as they are (`llamafactory-cli train` replaced by `shardtune train`): the data prepped by
# train itself, the same run as the hand-written shardtune config.
# shellcheck source=harness.sh
source "$(dirname "$0")/harness.sh"
# shellcheck source=byte_tokenizer.sh
source "$(dirname "$0")/byte_tokenizer.sh"
data=$ST_SOURCE_DIR/tests/data/llamafactory
examples=$ST_SOURCE_DIR/tests/data/llamafactory-examples
python=${ST_REFERENCE_PYTHON:-/usr/bin/python3}  # Debian's, with h5py

# same_pairs A B: two prepped datasets hold the same pairs (every shard's token arrays and
# attributes but the file names they were read from).
same_pairs() {
  "$python" - "$1" "$2" <<'PY' || fail "the pairs of $1 and $2 differ"
import json, sys, h5py, numpy
a, b = sys.argv[1:3]
shards = [s["file"] for s in json.load(open(a + "/manifest.json"))["shards"]]
assert shards == [s["file"] for s in json.load(open(b + "/manifest.json"))["shards"]], "other shards"
for name in shards:
    x, y = h5py.File(a + "/" + name), h5py.File(b + "/" + name)
    assert sorted(x.keys()) == sorted(y.keys()), name
    for key in x.keys():
        assert numpy.array_equal(x[key][()], y[key][()]), f"{name}:{key}"
    assert dict(x.attrs) == dict(y.attrs), f"{name}: attributes {dict(x.attrs)} vs {dict(y.attrs)}"
print(f"same pairs: {len(shards)} shards")
PY
}

case "$case_name" in
  seed_000_equals_hand_written_ini)
    # Seed workload 000: LlamaBoard's DPO command line, every key as written, on 2 ranks; paths
    # replaced (a tiny model with Llama 3's chat tokens, LlamaFactory's own dpo_en_demo through
    # its dataset_info.json), cut at 2 steps each logged, and --fp16 False: fp16 runs on GPUs only
    # (below).
    tiny_model "$work/model"
    seed_000=(train --stage dpo --do_train True --model_name_or_path "$work/model" --preprocessing_num_workers 16
      --finetuning_type full --template llama3 --flash_attn auto --dataset_dir "$data" --dataset dpo_en_demo
      --cutoff_len 1024 --learning_rate 5e-06 --num_train_epochs 3.0 --max_samples 100000
      --per_device_train_batch_size 2 --gradient_accumulation_steps 8 --lr_scheduler_type cosine --max_grad_norm 1.0
      --logging_steps 5 --save_steps 100 --warmup_steps 0 --optim adamw_torch --packing False --report_to none
      --output_dir "$work/saves" --fp16 True --plot_loss True --ddp_timeout 180000000
      --include_num_input_tokens_seen True --pref_beta 0.1 --pref_ftx 0 --pref_loss sigmoid --val_size 0.1
      --eval_strategy steps --eval_steps 100 --per_device_eval_batch_size 2 --deepspeed cache/ds_z3_config.json
      --max_steps 2 --logging_steps 1 --progress off)
    # As written: the data is prepped, then fp16 is refused on this CPU (kept for the rerun).
    run --exit 2 "$mpiexec" -np 2 "$bin" "${seed_000[@]}"
    expect_output "prep: dpo_en_demo: 300 records -> 300 pairs in $work/saves/data/dpo_en_demo-[0-9a-f]{8} \(template llama3; 270 truncated to 1024 tokens, 0 malformed skipped\)"
    expect_output "train.dtype = fp16 runs on GPUs only .*LlamaFactory: --fp16 False"
    run --exit 0 "$mpiexec" -np 2 "$bin" "${seed_000[@]}" --fp16 False
    expect_output "train: command line: deepspeed = cache/ds_z3_config.json: DeepSpeed is not run; .* dist.sharding = full"
    expect_output "train: command line: preprocessing_num_workers = 16: prep runs on every rank"
    expect_output "prep: dpo_en_demo: reusing $work/saves/data/dpo_en_demo-[0-9a-f]{8} \(same files and keys\)"
    expect_output "dpo \(sigmoid, reference online\) on 2 rank\(s\), sharding full, compute fp32; 270 training / 30 validation pairs; global batch 32; 2 steps"
    # Each step line with the time spent and left; the closing summary.
    expect_output "step 1/2  loss .* s/step  elapsed [0-9]+s  left [0-9]+s  mem "
    # The duration as duration_text writes it: 59s, 1m13s, 2h05m (a loaded machine takes minutes).
    expect_output "train: 2 steps in [0-9.]+ s \(([0-9]+[dhm])?[0-9]+[hms]\); [0-9]+ tokens, [0-9]+ tokens/s"
    expect_output "train: final loss [0-9.]+, reward accuracy [0-9.]+; eval loss [0-9.]+, eval reward accuracy [0-9.]+; best eval loss [0-9.]+ at step 2"
    expect_output "train: checkpoint $work/saves/checkpoints/step_00000002; export $work/saves/export; metrics $work/saves/metrics.jsonl"
    expect_output "train: more steps: shardtune train --config $work/saves/config.resolved.ini --resume auto"
    prepped=$(ls -d "$work"/saves/data/dpo_en_demo-*)
    resolved=$work/saves/config.resolved.ini
    grep -qx "lr = 5e-06  # command line (learning_rate): peak learning rate" "$resolved" || fail "resolved: lr's origin"
    grep -q "^train =   # default" "$resolved" || fail "resolved: data.train is left to prep.dataset"
    # The same run by hand: `shardtune prep`, then the INI a shardtune user writes for it.
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --kind dpo --dataset-info "$data" --dataset dpo_en_demo \
      --tokenizer "$work/model" --template llama3 --cutoff-len 1024 --max-samples 100000 --output "$work/hand_data"
    # The first example as the model sees it: special tokens written out, the trained ones marked.
    expect_output "prep: the first example as the model sees it \(loss on the tokens in \[\[ \]\]\):"
    expect_output '^\[r0/2 [^]]+\]   prompt: <\|begin_of_text\|><\|start_header_id\|>user<\|end_header_id\|>\\n\\n'
    expect_output '^\[r0/2 [^]]+\]   chosen: \[\[That sounds like a fun and engaging idea!.* \.\.\. .*\]\]$'
    expect_output '^\[r0/2 [^]]+\]   rejected: \[\[Hello! .*\]\]$'
    # max_samples: the file's first records, whichever rank reads them.
    run --exit 0 "$mpiexec" -np 2 "$bin" prep --kind dpo --dataset-info "$data" --dataset dpo_en_demo \
      --tokenizer "$work/model" --template llama3 --max-samples 7 --output "$work/seven"
    expect_output "prep: 300 lines \(the first 7: --max-samples\) -> 7 train \+ 0 val pairs"
    same_pairs "$work/hand_data/train" "$prepped/train"
    # The cutoff the data was prepped with is recorded: a run asking for longer rows is told.
    grep -q '"cutoff_len": 1024' "$work/hand_data/train/manifest.json" || fail "the manifest lacks the cutoff"
    run --exit 0 "$bin" train --model.path="$work/model" --data.train="$work/hand_data/train" --data.cutoff_len=2048 \
      --train.output_dir="$work/longer" --dry-run
    expect_output "train: $work/hand_data/train was prepped with cutoff_len 1024, so its rows hold at most 1024 tokens though data.cutoff_len = 2048; prep it again with --cutoff-len 2048"
    cat >"$work/hand.ini" <<INI
[model]
path = $work/model
[data]
train = $work/hand_data/train
val_size = 0.1
cutoff_len = 1024
[train]
stage = dpo
method = full
output_dir = $work/hand
micro_batch = 2
grad_accum = 8
epochs = 3
max_steps = 2
dtype = fp32
log_every = 1
eval_every = 100
tensorboard = false
[dpo]
loss = sigmoid
beta = 0.1
ftx = 0
[optim]
name = adamw
lr = 5e-6
schedule = cosine
warmup_steps = 0
grad_clip = 1.0
[ckpt]
every = 100
export = true
[dist]
sharding = full
INI
    run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$work/hand.ini" --progress off
    same_metrics --expected "$work/hand/metrics.jsonl" --actual "$work/saves/metrics.jsonl" --tolerance 0
    same_metrics --expected "$work/hand/metrics.jsonl" --actual "$work/saves/metrics.jsonl" --tolerance 0 --from-step 1
    cmp "$work/hand/export/model.safetensors" "$work/saves/export/model.safetensors" || fail "the exports differ"
    # The resolved config reruns as it is (data.train left to prep.dataset, which reuses its data).
    run --exit 0 "$mpiexec" -np 2 "$bin" train --config "$resolved" --dry-run
    expect_output "prep: dpo_en_demo: reusing $prepped \(same files and keys\)"
    expect_output "data: 270 training pairs, 30 validation pairs"
    ;;
  yaml_resumes_on_other_rank_counts)
    # A LlamaFactory DPO YAML (then a TRL one) trained on 2 ranks (gradient_accumulation_steps 2: a global batch of
    # 8), resumed from its step-3 checkpoint on 1 rank and on 4 (a lost node, a bigger
    # allocation): the accumulation follows the checkpoint's global batch and the run continues
    # as the uninterrupted one, to the summation order's rounding.
    tiny_model "$work/model"
    cat >"$work/run.yaml" <<YAML
model_name_or_path: $work/model
stage: dpo
finetuning_type: full
dataset: dpo_en_demo
dataset_dir: $data
template: llama3
cutoff_len: 256
max_samples: 64
per_device_train_batch_size: 2
gradient_accumulation_steps: 2
learning_rate: 5.0e-6
max_steps: 6
logging_steps: 1
save_steps: 3
output_dir: $work/straight
report_to: none
YAML
    run --exit 0 "$mpiexec" -np 2 "$bin" train "$work/run.yaml" --progress off
    expect_output "global batch 8; 6 steps"
    for ranks in 1 4; do
      run --exit 0 "$mpiexec" -np "$ranks" --oversubscribe "$bin" train "$work/run.yaml" --output_dir "$work/on_$ranks" \
        --resume "$work/straight/checkpoints/step_00000003" --progress off
      expect_output "train: grad_accum 2 \\($work/run.yaml:[0-9]+ \\(gradient_accumulation_steps\\)\\) -> $((4 / ranks)) keeps the checkpoint's global batch 8 = 2 x $((4 / ranks)) x $ranks ranks"
      expect_output "written by 2 rank\\(s\\), now $ranks"
      same_metrics --expected "$work/straight/metrics.jsonl" --actual "$work/on_$ranks/metrics.jsonl" \
        --tolerance "$other_order_metrics" --from-step 4
    done
    # A TRL config the same way (TRL's gradient_accumulation_steps, its default 1 here).
    for i in 1 2 3 4 5 6 7 8; do
      echo "{\"prompt\": [{\"role\": \"user\", \"content\": \"Question $i?\"}], \"chosen\": [{\"role\": \"assistant\", \"content\": \"Good $i.\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": \"Bad $i.\"}]}"
    done >"$work/preference.jsonl"
    cat >"$work/trl.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/preference.jsonl
per_device_train_batch_size: 2
max_steps: 4
save_steps: 2
logging_steps: 1
output_dir: $work/trl_straight
report_to: none
YAML
    run --exit 0 "$mpiexec" -np 2 "$bin" train dpo "$work/trl.yaml" --progress off
    run --exit 0 "$bin" train dpo "$work/trl.yaml" --output_dir "$work/trl_on_1" \
      --resume "$work/trl_straight/checkpoints/step_00000002" --progress off
    expect_output "train: grad_accum 1 \\(TRL's default \\(gradient_accumulation_steps\\)\\) -> 2 keeps the checkpoint's global batch 4 = 2 x 2 x 1 ranks"
    same_metrics --expected "$work/trl_straight/metrics.jsonl" --actual "$work/trl_on_1/metrics.jsonl" \
      --tolerance "$other_order_metrics" --from-step 3
    ;;
  example_yamls_dry_run_or_are_refused)
    # LlamaFactory's own example YAMLs (tests/data/llamafactory-examples, SOURCE.md), their model
    # and output paths replaced: each dry-runs (its data prepped) or is refused naming the key.
    tiny_model "$work/qwen" "<|endoftext|>" "<|im_start|>" "<|im_end|>" "<think>" "</think>"
    paths=(--model_name_or_path "$work/qwen" --dataset_dir "$data" --output_dir "$work/out")
    # As they ship, they name the model by its hub id: refused with the line and the download.
    run --exit 2 "$bin" train "$examples/qwen3_lora_dpo.yaml" --dataset_dir "$data" --output_dir "$work/out"
    expect_output "$examples/qwen3_lora_dpo.yaml:2: model_name_or_path = Qwen/Qwen3-4B-Instruct-2507: a Hugging Face hub id, not a local directory; .*\`hf download Qwen/Qwen3-4B-Instruct-2507 --local-dir models/Qwen3-4B-Instruct-2507\`, then write model_name_or_path: models/Qwen3-4B-Instruct-2507 on this line"
    for yaml in qwen3_full_sft qwen3_lora_sft qwen3_lora_sft_ds3 qwen3_lora_dpo qwen3_lora_reward qwen3_lora_sft_otfq; do
      run --exit 0 "$bin" train --dry-run "$examples/$yaml.yaml" "${paths[@]}"  # the switch first, or last below
      expect_output "dry run: configuration valid for 1 ranks"
      expect_output "train: $examples/$yaml.yaml:[0-9]+: trust_remote_code = true: no remote code runs"
      echo "$yaml: dry run ok"
    done
    # KTO at per_device_train_batch_size 1: its reference point pairs each example with another's
    # completion inside the micro-batch (TRL's KTOTrainer refuses 1 too): refused by the key.
    run --exit 2 "$bin" train "$examples/qwen3_lora_kto.yaml" "${paths[@]}" --dry-run
    expect_output "prep: kto_en_demo: 300 records -> 300 pairs in $work/out/data/kto_en_demo-"
    expect_output "train.micro_batch = 1 must be at least 2 for train.stage = kto"
    run --exit 0 "$bin" train "$examples/qwen3_lora_kto.yaml" "${paths[@]}" --per_device_train_batch_size 2 --dry-run
    expect_output "dry run: configuration valid for 1 ranks"
    run --exit 2 "$bin" train "$examples/qwen3_lora_pretrain.yaml" "${paths[@]}" --dry-run
    expect_output "$examples/qwen3_lora_pretrain.yaml:[0-9]+: stage = pt: pretraining on raw text \(pt\) and PPO are not trained here"
    ;;
  trl_yamls_dry_run_or_are_refused)
    # TRL's configs as `trl dpo|sft --config x.yaml` reads them, `trl` replaced by `shardtune
    # train`: a DPO and an SFT YAML over local JSONL files (TRL's conversational shapes), and
    # TRL's own example config, whose Hub dataset is refused with the download command.
    tiny_model "$work/model"
    for i in 1 2 3 4 5 6; do
      echo "{\"prompt\": [{\"role\": \"user\", \"content\": \"Question $i?\"}], \"chosen\": [{\"role\": \"assistant\", \"content\": \"Good answer $i.\"}], \"rejected\": [{\"role\": \"assistant\", \"content\": \"Bad $i.\"}]}"
    done >"$work/preference.jsonl"
    mkdir -p "$work/chat"
    for i in 1 2 3 4 5 6; do
      echo "{\"messages\": [{\"role\": \"user\", \"content\": \"Hello $i\"}, {\"role\": \"assistant\", \"content\": \"Hi $i!\"}]}"
    done >"$work/chat/train.jsonl"
    cat >"$work/dpo.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/preference.jsonl
learning_rate: 5.0e-7
per_device_train_batch_size: 2
gradient_accumulation_steps: 1
beta: 0.1
max_length: 512
use_peft: true
lora_r: 8
lora_target_modules: all-linear
gradient_checkpointing: true
logging_steps: 1
output_dir: $work/trl_dpo
report_to: none
YAML
    run --exit 0 "$bin" train dpo --config "$work/dpo.yaml" --dry-run
    expect_output "prep: preference: 6 records -> 6 pairs in $work/trl_dpo/data/preference-[0-9a-f]{8} \(template auto: llama3"
    expect_output "dry run: configuration valid for 1 ranks"
    expect_output "stage dpo"
    grep -qx "lr = 5e-07  # $work/dpo.yaml:3 (learning_rate): peak learning rate" "$work/trl_dpo/config.resolved.ini" ||
      fail "resolved: lr's origin"
    grep -qx "logged_logps = sum  # TRL: DPOTrainer logs summed log-probs: .*" "$work/trl_dpo/config.resolved.ini" ||
      fail "resolved: TRL's logged log-probs"
    cat >"$work/sft.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/chat
max_length: 256
packing: true
output_dir: $work/trl_sft
YAML
    run --exit 0 "$bin" train sft "$work/sft.yaml" --dry-run --per_device_train_batch_size 2
    expect_output "prep: train: 6 records -> 6 pairs in $work/trl_sft/data/train-"
    expect_output "dry run: configuration valid for 1 ranks"
    # bench/trl_peer.py's DPOConfig as a YAML (its CPU settings), nested mapping and all; use_peft
    # without targets takes PEFT's default for the model's type (llama: q_proj, v_proj).
    cat >"$work/trl_peer.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/preference.jsonl
output_dir: $work/trl_peer
max_steps: 12
per_device_train_batch_size: 2
learning_rate: 1.0e-5
lr_scheduler_type: constant
optim: adamw_torch
weight_decay: 0.0
max_grad_norm: 1.0
beta: 0.1
loss_type: [sigmoid]
max_length: null
gradient_checkpointing: true
gradient_checkpointing_kwargs: {use_reentrant: false}
bf16: false
use_cpu: true
use_liger_kernel: false
logging_steps: 1000000
save_strategy: "no"
report_to: []
disable_tqdm: true
dataloader_drop_last: true
remove_unused_columns: false
seed: 0
dataset_num_proc: null
YAML
    run --exit 0 "$bin" train --dry-run dpo "$work/trl_peer.yaml"
    expect_output "dry run: configuration valid for 1 ranks"
    expect_output "trl_peer.yaml:15: gradient_checkpointing_kwargs.use_reentrant = false: recomputation is train.recompute"
    expect_output "trl_peer.yaml:23: dataloader_drop_last = true: each epoch's last global batch is trained"
    run --exit 0 "$bin" train dpo "$work/trl_peer.yaml" --use_peft --dry-run
    expect_output "command line: use_peft = true: adapters on q,v: PEFT 0.21's default target modules for model_type llama"
    grep -qx "target_modules = q,v  # TRL: use_peft without lora_target_modules: PEFT 0.21's default .*" "$work/trl_peer/config.resolved.ini" ||
      fail "resolved: PEFT's default targets"
    run --exit 2 "$bin" train sft --config "$ST_SOURCE_DIR/tests/data/trl-examples/example_config.yaml" --dry-run
    expect_output "example_config.yaml:11: dataset_name = stanfordnlp/imdb: not a local file or folder; .*hf download stanfordnlp/imdb --repo-type dataset --local-dir data/imdb"
    run --exit 0 "$bin" train sft --config "$ST_SOURCE_DIR/tests/data/trl-examples/example_config.yaml" \
      --model_name_or_path "$work/model" --dataset_name "$work/chat" --output_dir "$work/trl_example" \
      --per_device_train_batch_size 2 --dry-run
    expect_output "dry run: configuration valid for 1 ranks"
    ;;
  trl_grpo_yaml)
    # A TRL GRPO config as `trl grpo --config x.yaml` reads it (and as `trl rloo` reads its RLOO twin), over TRL's prompt-only records
    # (conversational, with a solution column), trained 2 steps on a replay file (grpo.rollouts,
    # shardtune's key: sampling on the ranks is not built yet); the rule rewards read the
    # completions decoded by the model's tokenizer.
    tiny_model "$work/model"
    for i in 1 2 3 4 5 6 7 8; do
      echo "{\"prompt\": [{\"role\": \"user\", \"content\": \"What is $i + $i?\"}], \"solution\": \"$((i + i))\"}"
    done >"$work/prompts.jsonl"
    /usr/bin/python3 - "$work/rollouts.jsonl" <<'PY' || fail "could not write the replay file"
import json, sys
think = list(b"<think>ok</think>")
with open(sys.argv[1], "w") as out:
    for row in range(8):
        group = [think + list(b"so 4"), list(b"no"), think + [65] * (row + 1), [66] * (2 * row + 1)]
        out.write(json.dumps({"completion_ids": group}) + "\n")  # ids 0-255 are the bytes (byte_tokenizer)
PY
    cat >"$work/grpo.yaml" <<YAML
model_name_or_path: $work/model
dataset_name: $work/prompts.jsonl
reward_funcs: [think_format_reward, get_soft_overlong_punishment]
reward_weights: [1.0, 0.5]
num_generations: 4
per_device_train_batch_size: 4
gradient_accumulation_steps: 2
max_steps: 2
learning_rate: 1.0e-5
beta: 0.04
loss_type: dr_grpo
scale_rewards: false
max_completion_length: 32
use_vllm: false
top_p: 0.95
logging_steps: 1
output_dir: $work/trl_grpo
YAML
    run --exit 0 "$bin" train grpo --config "$work/grpo.yaml" --grpo.rollouts="$work/rollouts.jsonl" --progress off
    expect_output "prep: prompts: 8 records -> 8 pairs in $work/trl_grpo/data/prompts-"
    expect_output "grpo.yaml:14: use_vllm = false: completions are sampled on the training ranks"
    grep -qx "top_p = 0.95  # $work/grpo.yaml:15 (top_p): .*" "$work/trl_grpo/config.resolved.ini" ||
      fail "resolved: top_p is copied"
    expect_output "train: grpo \(dr_grpo, 4 completions per prompt, beta 0.04, reference online\)"
    grep -qx "scale_rewards = none  # $work/grpo.yaml:12 (scale_rewards): .*" "$work/trl_grpo/config.resolved.ini" ||
      fail "resolved: scale_rewards false is none"
    /usr/bin/python3 - "$work/trl_grpo/metrics.jsonl" <<'PY' || fail "the run's metrics lack TRL's GRPO keys"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 2, records
for key in ("reward", "rewards/think_format_reward/mean", "rewards/soft_overlong_punishment_reward/mean", "kl",
            "entropy", "clip_ratio/region_mean", "completions/mean_length"):
    assert key in records[0], key
assert records[0]["rewards/think_format_reward/mean"] == 0.5, records[0]  # 2 of each 4 open with <think>
PY
    run --exit 2 "$bin" train grpo --config "$work/grpo.yaml" --generation_batch_size 16 --dry-run
    expect_output "generation_batch_size = 16: write steps_per_generation"
    # chat_template_kwargs (a mapping) is the templates' one JSON object; a reward model named by
    # its hub id is refused with the command that fetches it.
    { cat "$work/grpo.yaml"; echo "chat_template_kwargs: {enable_thinking: False, mode: fast, depth: 2}"; } >"$work/kwargs.yaml"
    run --exit 0 "$bin" train grpo --config "$work/kwargs.yaml" --dry-run
    grep -qx 'template_kwargs = {"depth":2,"enable_thinking":false,"mode":"fast"}  # .*kwargs.yaml:18 .*' \
      "$work/trl_grpo/config.resolved.ini" || fail "resolved: chat_template_kwargs is prep.template_kwargs"
    run --exit 2 "$bin" train grpo --config "$work/grpo.yaml" --reward_model_name_or_path OpenAssistant/rm --dry-run
    expect_output "reward_model_name_or_path = OpenAssistant/rm: a Hugging Face hub id.*hf download OpenAssistant/rm --local-dir models/rm"
    run --exit 2 "$bin" train dpo --config "$work/grpo.yaml" --dry-run
    expect_output "num_generations = 4: a GRPOConfig key: trl dpo's config has none"
    # The same prompts under `trl rloo`: RLOOConfig's keys land in rloo.* with RLOO's defaults
    # (beta 0.05), its own keys copied; GRPOConfig's loss keys are refused, as RLOOConfig has none.
    sed -e '/^beta:/d' -e '/^loss_type:/d' -e '/^scale_rewards:/d' -e "s|trl_grpo|trl_rloo|" "$work/grpo.yaml" \
      >"$work/rloo.yaml"
    printf 'normalize_advantages: true\nreward_clip_range: [-0.5, 1.0]\n' >>"$work/rloo.yaml"
    run --exit 0 "$bin" train rloo --config "$work/rloo.yaml" --rloo.rollouts="$work/rollouts.jsonl" --progress off
    expect_output "train: rloo \(4 completions per prompt, beta 0.05, reference online\)"
    for key in "top_p = 0.95" "normalize_advantages = true" "reward_clip_range = -0.5, 1.0"; do
      sed -n '/^\[rloo\]/,/^\[/p' "$work/trl_rloo/config.resolved.ini" | grep -q "^$key  # " ||
        fail "resolved: [rloo] has no $key from the YAML"
    done
    /usr/bin/python3 - "$work/trl_rloo/metrics.jsonl" <<'PY' || fail "the run's metrics lack TRL's RLOO keys"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
assert len(records) == 2, records
for key in ("reward", "rewards/think_format_reward/mean", "kl", "entropy", "clip_ratio/region_mean",
            "completions/mean_length"):
    assert key in records[0], key
assert not any(key.startswith("sampling/") for key in records[0]), records[0]  # RLOOTrainer logs none
PY
    run --exit 2 "$bin" train rloo --config "$work/grpo.yaml" --dry-run
    expect_output "loss_type = dr_grpo: a GRPOConfig key: RLOOConfig has none"
    expect_output "scale_rewards = false: a GRPOConfig key: RLOOConfig has none"
    run --exit 2 "$bin" train grpo --config "$work/rloo.yaml" --dry-run
    expect_output "normalize_advantages = true: an RLOOConfig key: trl grpo's config has none"
    run --exit 2 "$bin" train rloo --config "$work/rloo.yaml" --reward_clip_range "[1, 0]" --dry-run
    expect_output "rloo.reward_clip_range = '1, 0': write the two bounds, low <= high"
    ;;
  *) fail "unknown case $case_name" ;;
esac
echo "PASS [$case_name]"
