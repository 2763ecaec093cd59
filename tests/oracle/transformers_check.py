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

transformers' side (transformers_peer.py: fp32 and float64 log-probs, routing, rewards, tokens)
comes from its record under tests/oracle/records/, re-derived when its inputs change
(peer_record.py); shardtune runs live.
"""
import json
import os
import subprocess
import sys

import peer_record
from float64_judge import judged_ratio

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402

TOLERANCE = 1e-5
HERE = os.path.dirname(os.path.abspath(__file__))


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def peer(work, outputs, *args):
    """transformers_peer.py's outputs for args, through their record (peer_record.py): the record
    is named after the check's work folder, unique within a test case, and the test's scratch
    folder (the work folder lies in it) reads as @work in the key. outputs: [(name, kind)], a kind
    naming another output as @<name>; returns their paths."""
    prefix = os.path.join(work, "transformers.")
    paths = [prefix + name for name, _ in outputs]
    peer_record.run_recorded(os.path.basename(os.path.normpath(work)), os.path.dirname(os.path.normpath(work)),
                             [(path, kind.replace("@", prefix)) for path, (_, kind) in zip(paths, outputs)],
                             [sys.executable, os.path.join(HERE, "transformers_peer.py"), *args, *paths])
    return paths


def run_shardtune(binary, *args):
    subprocess.run([binary, *args, "--device", "cpu", "--overwrite"], check=True, stdout=subprocess.DEVNULL)


def largest_scaled_difference(a_lists, b_lists):
    return max((abs(a - b) / max(1.0, abs(b)) for a_list, b_list in zip(a_lists, b_lists)
                for a, b in zip(a_list, b_list)), default=0.0)


def check_score(binary, model_dir, pairs_path, work, label, reference_dir=None):
    output = os.path.join(work, "scores.jsonl")
    run_shardtune(binary, "score", "--model", model_dir, "--input", pairs_path, "--output", output, "--dtype", "fp32")
    ours = read_jsonl(output)
    pairs = read_jsonl(pairs_path)
    fp32, float64 = peer(work, [("fp32.jsonl", "fp32=@float64.jsonl"), ("float64.jsonl", "float64")], "score",
                         reference_dir or model_dir, pairs_path)
    theirs_lists = [row["token_logps"] for row in read_jsonl(fp32)]
    tokens = 0
    worst_abs = worst_rel = worst_scaled = worst_sum = 0.0
    for theirs, mine in zip(theirs_lists, ours, strict=True):
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
        truth = [row["token_logps"] for row in read_jsonl(float64)]
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
    run_shardtune(binary, "score", "--reward", "--model", model_dir, "--input", pairs_path, "--output", output,
                  "--dtype", "fp32")
    ours = [line["reward"] for line in read_jsonl(output)]
    pairs = read_jsonl(pairs_path)
    (rewards,) = peer(work, [("rewards.jsonl", "exact")], "reward", model_dir, pairs_path)
    header, *rows = read_jsonl(rewards)
    theirs = [row["reward"] for row in rows]
    worst = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(ours, theirs, strict=True))
    tolerance_log.record("transformers reward", header["architecture"], "", worst, TOLERANCE)
    ok = worst <= TOLERANCE
    print(f"| {header['architecture']} | reward (pad_token_id {header['pad_token_id']}) | {len(pairs)} sequences | "
          f"max scaled {worst:.3g} | {'ok (1e-5)' if ok else 'DIFFERS'} |")
    return ok


def check_generate(binary, model_dir, prompts_path, work, max_new_tokens, label):
    output = os.path.join(work, "generated.jsonl")
    run_shardtune(binary, "generate", "--model", model_dir, "--input", prompts_path, "--output", output,
                  "--max-new-tokens", str(max_new_tokens))
    ours = read_jsonl(output)
    (generated,) = peer(work, [("generated.jsonl", "exact")], "generate", model_dir, prompts_path, str(max_new_tokens))
    theirs_rows = read_jsonl(generated)
    same = 0
    first_difference = None
    for index, (theirs, mine) in enumerate(zip(theirs_rows, ours, strict=True)):
        if theirs["completion_ids"] == mine["completion_ids"]:
            same += 1
        elif first_difference is None:
            first_difference = (index, mine["completion_ids"], theirs["completion_ids"])
    ok = same == len(theirs_rows)
    print(f"| {label} | greedy generate | {len(theirs_rows)} prompts, up to {max_new_tokens} new tokens | "
          f"{same} of {len(theirs_rows)} equal token for token | {'ok' if ok else 'DIFFERS'} |")
    if first_difference:
        print("first difference: prompt %d: shardtune %s, transformers %s" % first_difference)
    return ok


def flattened(values):
    """A nested list of numbers as one flat list of Python floats (float64), row by row."""
    if isinstance(values, list):
        return [number for value in values for number in flattened(value)]
    return [float(values)]


def check_routing(binary, model_dir, pairs_path, work, label):
    output = os.path.join(work, "routing.jsonl")
    run_shardtune(binary, "score", "--model", model_dir, "--input", pairs_path, "--output", output, "--routing",
                  "--dtype", "fp32")
    fp32, float64 = peer(work, [("fp32.jsonl", "fp32=@float64.jsonl"), ("float64.jsonl", "float64")], "routing",
                         model_dir, pairs_path)
    pairs, mine_lines = read_jsonl(pairs_path), read_jsonl(output)
    tokens = layers = 0
    ours_weights, theirs_weights = [], []  # per pair and sparse layer, its [T, k] weights flattened
    failed = []
    for number, (pair, mine, routed) in enumerate(zip(pairs, mine_lines, read_jsonl(fp32), strict=True)):
        theirs = {entry["layer"]: entry for entry in routed["routing"]}
        ours = {entry["layer"]: entry for entry in mine["routing"]}
        if sorted(ours) != sorted(theirs):
            failed.append(f"pair {number}: shardtune routes layers {sorted(ours)}, transformers {sorted(theirs)}")
            continue
        for layer in sorted(theirs):
            if ours[layer]["experts"] != theirs[layer]["experts"]:
                failed.append(f"pair {number} layer {layer}: experts {ours[layer]['experts']} vs "
                              f"{theirs[layer]['experts']}")
            ours_weights.append(flattened(ours[layer]["weights"]))
            theirs_weights.append(flattened(theirs[layer]["weights"]))
        tokens += len(pair["prompt_ids"]) + len(pair["completion_ids"])
        layers = len(theirs)

    def scaled(a_list, b_list):
        return max(abs(x - y) / max(abs(y), 1.0)
                   for a, b in zip(a_list, b_list, strict=True) for x, y in zip(a, b, strict=True))

    worst = scaled(ours_weights, theirs_weights) if ours_weights else 0.0
    ok = not failed and worst <= TOLERANCE
    verdict = "ok (1e-5)" if ok else "DIFFERS"
    if ok:
        tolerance_log.record_screen("transformers routing weights", label, worst, TOLERANCE)
    elif not failed:
        truth = [flattened(entry["weights"]) for row in read_jsonl(float64) for entry in row["routing"]]
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
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
