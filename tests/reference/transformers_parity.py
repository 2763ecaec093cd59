"""GPU-machine check: shardtune score vs transformers' LlamaForCausalLM / Qwen2ForCausalLM /
MistralForCausalLM on the same checkpoints, fp32 and bf16, and `shardtune generate`'s greedy
tokens vs transformers' generate(do_sample=False) in fp32. Prints markdown tables
(docs/fidelity.md records them).

usage: transformers_parity.py SHARDTUNE_BINARY WORK_DIR
PARITY_DEVICE=cpu runs both sides on the CPU (scripts/gpu-check.sh's dry run of the GPU plan).
"""
import json
import os
import subprocess
import sys

import torch
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fixtures  # noqa: E402

DEVICE = os.environ.get("PARITY_DEVICE", "cuda")

MEDIUM = dict(make_fixtures.LLAMA, vocab_size=32000, hidden_size=512, intermediate_size=1408,
              num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, head_dim=64,
              max_position_embeddings=2048, rope_theta=500000.0, torch_dtype="bfloat16",
              rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                            "high_freq_factor": 4.0, "original_max_position_embeddings": 64})


def hf_token_logps(model, pairs):
    out = []
    with torch.no_grad():
        for pair in pairs:
            ids = pair["prompt_ids"] + pair["completion_ids"]
            logits = model(torch.tensor([ids], device=DEVICE)).logits[0].float()
            log_probs = torch.log_softmax(logits, dim=-1)
            picked = log_probs[:-1].gather(1, torch.tensor(ids[1:], device=DEVICE)[:, None])[:, 0]
            out.append(picked[len(pair["prompt_ids"]) - 1:].tolist())
    return out


def load_hf(directory, dtype):
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, dtype=dtype)
    except TypeError:
        model = transformers.AutoModelForCausalLM.from_pretrained(directory, torch_dtype=dtype)
    return model.to(DEVICE).eval()


def differences(a_lists, b_lists):
    worst_abs = worst_rel = 0.0
    for a, b in zip(a_lists, b_lists):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            worst_abs = max(worst_abs, abs(x - y))
            worst_rel = max(worst_rel, abs(x - y) / max(abs(y), 1e-6))
    return worst_abs, worst_rel


def greedy_parity(binary, work, name):
    """Prompts whose greedy continuations (10 tokens) equal transformers', of how many."""
    greedy = [json.loads(line) for line in open(os.path.join(work, "greedy_%s.jsonl" % name))]
    prompts = os.path.join(work, "greedy_prompts.jsonl")
    with open(prompts, "w") as f:
        for record in greedy:
            f.write(json.dumps({"prompt_ids": record["prompt_ids"]}) + "\n")
    output = os.path.join(work, "greedy_%s_ours.jsonl" % name)
    subprocess.run([binary, "generate", "--model", os.path.join(work, name), "--input", prompts, "--output", output,
                    "--max-new-tokens", "10", "--device", DEVICE, "--overwrite"], check=True)
    ours = [json.loads(line)["completion_ids"] for line in open(output)]
    model = load_hf(os.path.join(work, name), torch.float32)
    model.generation_config.eos_token_id = None  # 10 tokens; ours may end earlier at an EOS
    same = 0
    with torch.no_grad():
        for record, mine in zip(greedy, ours):
            ids = torch.tensor([record["prompt_ids"]], device=DEVICE)
            theirs = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=10, do_sample=False,
                                    pad_token_id=0)[0, ids.shape[1]:].tolist()
            same += theirs[:len(mine)] == mine
    return same, len(greedy)


def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    make_fixtures.main_into(work)
    medium_dir = os.path.join(work, "llama_medium")
    make_fixtures.write_checkpoint(medium_dir, MEDIUM, make_fixtures.random_weights(MEDIUM, 3, torch.bfloat16, 0.02), 3)
    medium_pairs = make_fixtures.make_pairs(32000, 12, seed=11, long_tail=300)
    with open(os.path.join(work, "medium_pairs.jsonl"), "w") as f:
        for pair in medium_pairs:
            f.write(json.dumps(pair) + "\n")
    tiny_pairs = [json.loads(line) for line in open(os.path.join(work, "pairs.jsonl"))]

    rows = []
    for name, pairs_file, pairs in [("llama_gqa", "pairs.jsonl", tiny_pairs),
                                    ("qwen2_bias", "pairs.jsonl", tiny_pairs),
                                    ("mistral_window", "pairs.jsonl", tiny_pairs),
                                    ("qwen3_qk_norm", "pairs.jsonl", tiny_pairs),
                                    ("llama_medium", "medium_pairs.jsonl", medium_pairs)]:
        directory = os.path.join(work, name)
        hf = {}
        for dtype_name, dtype in [("fp32", torch.float32), ("bf16", torch.bfloat16)]:
            output = os.path.join(work, "%s_%s.jsonl" % (name, dtype_name))
            subprocess.run([binary, "score", "--model", directory, "--input", os.path.join(work, pairs_file),
                            "--output", output, "--dtype", dtype_name, "--device", DEVICE, "--overwrite"],
                           check=True)
            ours = [json.loads(line)["token_logps"] for line in open(output)]
            hf[dtype_name] = hf_token_logps(load_hf(directory, dtype), pairs)
            tokens = sum(len(t) for t in ours)
            abs_diff, rel_diff = differences(ours, hf[dtype_name])
            rows.append((name, dtype_name, tokens, "shardtune vs transformers", abs_diff, rel_diff))
        abs_diff, rel_diff = differences(hf["bf16"], hf["fp32"])
        rows.append((name, "bf16", tokens, "transformers bf16 vs its fp32 (bf16 noise scale)", abs_diff, rel_diff))
    print("| model | dtype | tokens | comparison | max abs diff | max rel diff |")
    print("|---|---|---|---|---|---|")
    for name, dtype_name, tokens, what, a, r in rows:
        print("| %s | %s | %d | %s | %.3g | %.3g |" % (name, dtype_name, tokens, what, a, r))
    print("\n| model | greedy generate: prompts equal to transformers' generate (10 tokens, fp32) |")
    print("|---|---|")
    for name in ["llama_gqa", "qwen2_bias", "mistral_window", "qwen3_qk_norm"]:
        print("| %s | %d of %d |" % ((name,) + greedy_parity(binary, work, name)))
    device = torch.cuda.get_device_name() if DEVICE == "cuda" else "CPU"
    print("\ntorch %s, transformers %s, %s" % (torch.__version__, transformers.__version__, device))


if __name__ == "__main__":
    main()
