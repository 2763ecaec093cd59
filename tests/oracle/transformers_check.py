"""shardtune against transformers on the CPU in fp32, for one Hugging Face model directory:

  transformers_check.py score    SHARDTUNE MODEL_DIR PAIRS.jsonl WORK_DIR
      `shardtune score` and AutoModelForCausalLM give the same log-prob for every completion token:
      |ours - theirs| <= 1e-5 * max(1, |theirs|) (relative 1e-5; absolute 1e-5 for tokens the
      model is sure of, whose log-prob is near 0 and whose relative error is fp32 noise over a
      tiny number), and the sums per pair to relative 1e-5. Past that, the judge is transformers
      in float64: shardtune passes where its fp32 log-probs are no farther from float64's than
      transformers' own fp32 ones (x2) - on a deep real model two correct fp32 computations
      (other summation orders) differ by more than 1e-5, as transformers' own eager and sdpa
      attention do. The table says which rule decided.
  transformers_check.py reward   SHARDTUNE MODEL_DIR PAIRS.jsonl WORK_DIR
      A reward model (*ForSequenceClassification, num_labels 1): `shardtune score --reward` and
      AutoModelForSequenceClassification give the same reward for every prompt + completion, to
      1e-5 x max(1, |reward|); transformers scores them in right-padded batches of 8, so its own
      rule (the last token that is not config.pad_token_id) picks the positions.
  transformers_check.py routing  SHARDTUNE MODEL_DIR PAIRS.jsonl WORK_DIR
      A mixture-of-experts model: `shardtune score --routing` and transformers' own routers (each
      sparse layer's gate module, hooked: its top-k weights and expert indices) route every token
      of prompt + completion to the same experts in the same order (the fixtures' routers pick
      with clear margins, so no rounding reorders a top-k), with the same weights: a 1e-5 screen
      (the weights carry every earlier layer's fp32 rounding, amplified by the router's logits:
      1.6e-6 apart measured), past it judged by transformers in float64 as `score` is.
  transformers_check.py generate SHARDTUNE MODEL_DIR PROMPTS.jsonl WORK_DIR MAX_NEW_TOKENS
      `shardtune generate` (greedy, KV cache, batched) and transformers' generate(do_sample=False),
      one prompt at a time, give the same tokens, stopping at the same EOS.

--transformers-reads DIR (score): transformers loads DIR instead of MODEL_DIR - the same weights
stored otherwise, as bitsandbytes' own dequantization of a 4-bit MODEL_DIR written in fp32.

PROMPTS.jsonl holds {"prompt_ids": [...]} or {"messages": [...]} per line; messages go through the
model's own chat template (apply_chat_template) for transformers and through `shardtune generate`'s
template for shardtune, so the prompt ids must agree too. Prints one markdown row per check
(docs/fidelity.md) and exits 1 on a difference.
"""
import json
import os
import subprocess
import sys

import torch
import transformers

import hf_models

from float64_judge import judged_ratio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402

TOLERANCE = 1e-5


def load(model_dir, dtype=torch.float32):
    model = hf_models.load(transformers.AutoModelForCausalLM, model_dir, dtype)
    return model.eval()


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def token_logps(model, pair):
    ids = pair["prompt_ids"] + pair["completion_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    picked = torch.log_softmax(logits, dim=-1)[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return picked[len(pair["prompt_ids"]) - 1:].tolist()


def largest_scaled_difference(a_lists, b_lists):
    return max((abs(a - b) / max(1.0, abs(b)) for a_list, b_list in zip(a_lists, b_lists)
                for a, b in zip(a_list, b_list)), default=0.0)


def check_score(binary, model_dir, pairs_path, work, label, reference_dir=None):
    output = os.path.join(work, "scores.jsonl")
    subprocess.run([binary, "score", "--model", model_dir, "--input", pairs_path, "--output", output,
                    "--device", "cpu", "--dtype", "fp32", "--overwrite"], check=True, stdout=subprocess.DEVNULL)
    ours = read_jsonl(output)
    pairs = read_jsonl(pairs_path)
    reference_dir = reference_dir or model_dir
    model = load(reference_dir)
    tokens = 0
    worst_abs = worst_rel = worst_scaled = worst_sum = 0.0
    theirs_lists = []
    for pair, mine in zip(pairs, ours, strict=True):
        theirs = token_logps(model, pair)
        theirs_lists.append(theirs)
        assert len(theirs) == len(mine["token_logps"]), (len(theirs), len(mine["token_logps"]))
        for a, b in zip(mine["token_logps"], theirs):
            worst_abs = max(worst_abs, abs(a - b))
            worst_rel = max(worst_rel, abs(a - b) / max(abs(b), 1e-12))
            worst_scaled = max(worst_scaled, abs(a - b) / max(1.0, abs(b)))
        if theirs:
            worst_sum = max(worst_sum, abs(mine["logp"] - sum(theirs)) / max(1.0, abs(sum(theirs))))
        tokens += len(theirs)
    ok = worst_scaled <= TOLERANCE and worst_sum <= TOLERANCE
    if ok:
        tolerance_log.record_screen("transformers score", label, max(worst_scaled, worst_sum), TOLERANCE)
    verdict = "ok (1e-5)" if ok else "DIFFERS"
    if not ok:
        exact = load(reference_dir, torch.float64)
        truth = [token_logps(exact, pair) for pair in pairs]
        ours_error = largest_scaled_difference([mine["token_logps"] for mine in ours], truth)
        theirs_error = largest_scaled_difference(theirs_lists, truth)
        ratio = judged_ratio(ours_error, theirs_error)
        ok = ratio <= 1.0
        tolerance_log.record_judged("transformers score", label, ratio)
        verdict = (f"{'ok' if ok else 'DIFFERS'} (vs float64: shardtune {ours_error:.3g}, "
                   f"transformers fp32 {theirs_error:.3g})")
    print(f"| {label} | score | {len(pairs)} pairs, {tokens} tokens | max abs {worst_abs:.3g}, max rel {worst_rel:.3g}, "
          f"scaled {worst_scaled:.3g}, per-pair sum rel {worst_sum:.3g} | {verdict} |")
    return ok


def check_reward(binary, model_dir, pairs_path, work):
    output = os.path.join(work, "rewards.jsonl")
    subprocess.run([binary, "score", "--reward", "--model", model_dir, "--input", pairs_path, "--output", output,
                    "--device", "cpu", "--dtype", "fp32", "--overwrite"], check=True, stdout=subprocess.DEVNULL)
    ours = [line["reward"] for line in read_jsonl(output)]
    pairs = read_jsonl(pairs_path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    pad = model.config.pad_token_id
    theirs = []
    for first in range(0, len(pairs), 8):
        rows = [p["prompt_ids"] + p["completion_ids"] for p in pairs[first:first + 8]]
        longest = max(len(row) for row in rows)
        ids = torch.tensor([row + [pad] * (longest - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (longest - len(row)) for row in rows])
        with torch.no_grad():
            theirs += model(ids, attention_mask=mask).logits[:, 0].tolist()
    worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(ours, theirs, strict=True))
    tolerance_log.record("transformers reward", model.config.architectures[0], "", worst, TOLERANCE)
    ok = worst <= TOLERANCE
    print(f"| {model.config.architectures[0]} | reward (pad_token_id {pad}) | {len(pairs)} sequences | max scaled {worst:.3g} | "
          f"{'ok (1e-5)' if ok else 'DIFFERS'} |")
    return ok


def hf_prompt_ids(tokenizer, record):
    if "prompt_ids" in record:
        return record["prompt_ids"]
    rendered = tokenizer.apply_chat_template(record["messages"], add_generation_prompt=True, tokenize=True)
    return list(rendered["input_ids"] if hasattr(rendered, "keys") else rendered)


def check_generate(binary, model_dir, prompts_path, work, max_new_tokens, label):
    output = os.path.join(work, "generated.jsonl")
    subprocess.run([binary, "generate", "--model", model_dir, "--input", prompts_path, "--output", output,
                    "--max-new-tokens", str(max_new_tokens), "--device", "cpu", "--overwrite"], check=True,
                   stdout=subprocess.DEVNULL)
    ours = read_jsonl(output)
    records = read_jsonl(prompts_path)
    model = load(model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir) if any("messages" in r for r in records) else None
    eos = model.generation_config.eos_token_id
    same = 0
    first_difference = None
    for index, (record, mine) in enumerate(zip(records, ours, strict=True)):
        ids = torch.tensor([hf_prompt_ids(tokenizer, record)])
        with torch.no_grad():
            theirs = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=max_new_tokens,
                                    do_sample=False, eos_token_id=eos,
                                    pad_token_id=eos if isinstance(eos, int) else 0)[0, ids.shape[1]:].tolist()
        if theirs == mine["completion_ids"]:
            same += 1
        elif first_difference is None:
            first_difference = (index, mine["completion_ids"], theirs)
    ok = same == len(records)
    print(f"| {label} | greedy generate | {len(records)} prompts, up to {max_new_tokens} new tokens | "
          f"{same} of {len(records)} equal token for token | {'ok' if ok else 'DIFFERS'} |")
    if first_difference:
        print("first difference: prompt %d: shardtune %s, transformers %s" % first_difference)
    return ok


def transformers_routing(model, ids):
    """Each sparse layer's (weights [T, k], experts [T, k]) as its gate module returns them."""
    routed, hooks = {}, []
    for name, module in model.named_modules():
        if type(module).__name__.endswith("TopKRouter"):
            layer = int(name.split("layers.")[1].split(".")[0])
            hooks.append(module.register_forward_hook(
                lambda _m, _i, out, layer=layer: routed.__setitem__(layer, (out[1].float(), out[2]))))
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for hook in hooks:
            hook.remove()
    return routed


def check_routing(binary, model_dir, pairs_path, work, label):
    output = os.path.join(work, "routing.jsonl")
    subprocess.run([binary, "score", "--model", model_dir, "--input", pairs_path, "--output", output, "--routing",
                    "--device", "cpu", "--dtype", "fp32", "--overwrite"], check=True, stdout=subprocess.DEVNULL)
    model = load(model_dir)
    pairs, mine_lines = read_jsonl(pairs_path), read_jsonl(output)
    tokens = layers = 0
    ours_weights, theirs_weights = [], []  # per pair and sparse layer, [T, k] float64
    failed = []
    for number, (pair, mine) in enumerate(zip(pairs, mine_lines, strict=True)):
        theirs = transformers_routing(model, pair["prompt_ids"] + pair["completion_ids"])
        ours = {entry["layer"]: entry for entry in mine["routing"]}
        if sorted(ours) != sorted(theirs):
            failed.append(f"pair {number}: shardtune routes layers {sorted(ours)}, transformers {sorted(theirs)}")
            continue
        for layer in sorted(theirs):
            weights, experts = theirs[layer]
            if ours[layer]["experts"] != experts.tolist():
                failed.append(f"pair {number} layer {layer}: experts {ours[layer]['experts']} vs {experts.tolist()}")
            ours_weights.append(torch.tensor(ours[layer]["weights"], dtype=torch.float64))
            theirs_weights.append(weights.double())
        tokens += len(pair["prompt_ids"]) + len(pair["completion_ids"])
        layers = len(theirs)

    def scaled(a_list, b_list):
        return max(((a - b).abs() / b.abs().clamp(min=1.0)).max().item() for a, b in zip(a_list, b_list))

    worst = scaled(ours_weights, theirs_weights) if ours_weights else 0.0
    ok = not failed and worst <= TOLERANCE
    verdict = "ok (1e-5)" if ok else "DIFFERS"
    if ok:
        tolerance_log.record_screen("transformers routing weights", label, worst, TOLERANCE)
    elif not failed:
        exact = load(model_dir, torch.float64)
        truth = [w.double() for pair in pairs
                 for _, (w, _e) in sorted(transformers_routing(exact, pair["prompt_ids"] + pair["completion_ids"]).items())]
        ratio = judged_ratio(scaled(ours_weights, truth), scaled(theirs_weights, truth), floor=1e-7)
        ok = ratio <= 1.0
        tolerance_log.record_judged("transformers routing weights", label, ratio)
        verdict = f"{'ok' if ok else 'DIFFERS'} (judged by float64: {ratio:.3g} of what the rule allows)"
    print(f"| {label} | routing | {tokens} tokens x {layers} sparse layers | experts "
          f"{'equal' if not failed else 'DIFFER'}, weights max scaled {worst:.3g} | {verdict} |")
    for line in failed[:5]:
        print("  " + line)
    return ok


def main():
    args = sys.argv[1:]
    reference_dir = None
    if "--transformers-reads" in args:
        at = args.index("--transformers-reads")
        reference_dir = args[at + 1]
        del args[at:at + 2]
    command, binary, model_dir, inputs, work = args[:5]
    os.makedirs(work, exist_ok=True)
    label = os.path.basename(os.path.normpath(model_dir))
    if reference_dir:
        label += f" (transformers: {os.path.basename(os.path.normpath(reference_dir))})"
    if command == "score":
        ok = check_score(binary, model_dir, inputs, work, label, reference_dir)
    elif command == "routing":
        ok = check_routing(binary, model_dir, inputs, work, label)
    elif command == "reward":
        ok = check_reward(binary, model_dir, inputs, work)
    elif command == "generate":
        ok = check_generate(binary, model_dir, inputs, work, int(args[5]), label)
    else:
        raise SystemExit(f"unknown command {command}")
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, CPU fp32")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
