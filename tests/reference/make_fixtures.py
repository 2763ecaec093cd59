"""Writes the fidelity fixtures into OUT_DIR: two tiny random checkpoints in Hugging Face layout
and the per-token log-probs llama_reference.py computes for a set of prompt/completion pairs.

  llama_gqa/   Llama, GQA (4 heads, 2 kv), llama3 rope scaling, untied head, F32, two shards + index
  qwen2_bias/  Qwen2-style q/k/v biases, tied embeddings, BF16, one file
  mistral_window/  Mistral, GQA, a sliding window of 6 tokens (shorter than most pairs), F32
  qwen3_qk_norm/   Qwen3: q/k RMS-normed per head, head_dim 24 (heads x head_dim != hidden), tied, F32
  pairs.jsonl  {"prompt_ids": [...], "completion_ids": [...]} per line
  expected_<model>.jsonl  {"logp", "token_logps", "num_tokens"} per line (float64 reference)
  greedy_<model>.jsonl    {"prompt_ids", "completion_ids", "min_gap"}: 10 greedy tokens after each of the
                          first five prompts and the long one (float64, no cache)

usage: make_fixtures.py OUT_DIR
"""
import json
import os
import random
import sys

import torch

import llama_reference
import safetensors_io

LLAMA = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": 97, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "max_position_embeddings": 128, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 32},
    "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
    "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
}
QWEN2 = {
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2",
    "vocab_size": 101, "hidden_size": 48, "intermediate_size": 80, "num_hidden_layers": 2,
    "num_attention_heads": 6, "num_key_value_heads": 2, "max_position_embeddings": 128,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None,
    "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": 4096,
    "hidden_act": "silu", "bos_token_id": 0, "eos_token_id": 1, "torch_dtype": "bfloat16",
}

MISTRAL = {
    "architectures": ["MistralForCausalLM"], "model_type": "mistral",
    "vocab_size": 97, "hidden_size": 32, "intermediate_size": 56, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 1, "max_position_embeddings": 256,
    "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "sliding_window": 6, "tie_word_embeddings": False,
    "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
}

QWEN3 = {
    "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
    "vocab_size": 97, "hidden_size": 40, "intermediate_size": 72, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 24, "max_position_embeddings": 128,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "rope_scaling": None, "attention_bias": False,
    "tie_word_embeddings": True, "use_sliding_window": False, "sliding_window": None,
    "hidden_act": "silu", "bos_token_id": 1, "eos_token_id": 2, "torch_dtype": "float32",
}


def parameter_shapes(config):
    d, i = config["hidden_size"], config["intermediate_size"]
    hd = config.get("head_dim", d // config["num_attention_heads"])
    q, kv = config["num_attention_heads"] * hd, config["num_key_value_heads"] * hd
    qkv_bias = config["model_type"] == "qwen2" or config.get("attention_bias", False)
    o_bias = config["model_type"] in ("llama", "qwen3") and config.get("attention_bias", False)
    shapes = {"model.embed_tokens.weight": [config["vocab_size"], d]}
    for layer in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        for name, out, inp, bias in [("self_attn.q_proj", q, d, qkv_bias), ("self_attn.k_proj", kv, d, qkv_bias),
                                     ("self_attn.v_proj", kv, d, qkv_bias), ("self_attn.o_proj", d, q, o_bias),
                                     ("mlp.gate_proj", i, d, False), ("mlp.up_proj", i, d, False),
                                     ("mlp.down_proj", d, i, False)]:
            shapes[p + name + ".weight"] = [out, inp]
            if bias:
                shapes[p + name + ".bias"] = [out]
            if name == "self_attn.o_proj" and config["model_type"] == "qwen3":
                shapes[p + "self_attn.q_norm.weight"] = [hd]
                shapes[p + "self_attn.k_norm.weight"] = [hd]
        shapes[p + "input_layernorm.weight"] = [d]
        shapes[p + "post_attention_layernorm.weight"] = [d]
    shapes["model.norm.weight"] = [d]
    if not config.get("tie_word_embeddings"):
        shapes["lm_head.weight"] = [config["vocab_size"], d]
    return shapes


def random_weights(config, seed, dtype, scale=0.15):
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, shape in parameter_shapes(config).items():
        if name.endswith("norm.weight"):   # near 1, not exactly, so a dropped norm weight shows
            t = 1.0 + 0.1 * torch.randn(shape, generator=generator)
        else:                              # large enough for peaked, position-dependent logits
            t = scale * torch.randn(shape, generator=generator)
        weights[name] = t.to(dtype)
    return weights


def write_checkpoint(directory, config, weights, shards):
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    names = list(weights)
    if shards == 1:
        safetensors_io.write(os.path.join(directory, "model.safetensors"), weights)
        return
    per_shard = (len(names) + shards - 1) // shards
    weight_map = {}
    for s in range(shards):
        file_name = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = {n: weights[n] for n in names[s * per_shard:(s + 1) * per_shard]}
        safetensors_io.write(os.path.join(directory, file_name), part)
        weight_map.update({n: file_name for n in part})
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f, indent=2)


def make_pairs(vocab, count, seed, long_tail=40):
    rng = random.Random(seed)
    pairs = []
    for n in range(count):
        prompt = [rng.randrange(vocab) for _ in range(rng.randint(1, 14))]
        completion = [rng.randrange(vocab) for _ in range(0 if n == 3 else rng.randint(1, 12))]
        pairs.append({"prompt_ids": prompt, "completion_ids": completion})
    # one long pair, past original_max_position_embeddings, where rope scaling matters
    pairs.append({"prompt_ids": [5] * long_tail, "completion_ids": [rng.randrange(vocab) for _ in range(long_tail)]})
    return pairs


def expected_scores(config, weights, pairs):
    out = []
    for pair in pairs:
        ids = pair["prompt_ids"] + pair["completion_ids"]
        all_logps = llama_reference.token_logps(config, weights, ids)
        token_logps = all_logps[len(pair["prompt_ids"]) - 1:]
        out.append({"logp": sum(token_logps), "token_logps": token_logps, "num_tokens": len(token_logps)})
    return out


def main():
    main_into(sys.argv[1])


def main_into(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    pairs = make_pairs(97, 10, seed=7)
    with open(os.path.join(out_dir, "pairs.jsonl"), "w") as f:
        for pair in pairs:
            f.write(json.dumps(pair) + "\n")
    for name, config, dtype, shards, seed in [("llama_gqa", LLAMA, torch.float32, 2, 1),
                                              ("qwen2_bias", QWEN2, torch.bfloat16, 1, 2),
                                              ("mistral_window", MISTRAL, torch.float32, 1, 3),
                                              ("qwen3_qk_norm", QWEN3, torch.float32, 1, 4)]:
        weights = random_weights(config, seed, dtype)
        write_checkpoint(os.path.join(out_dir, name), config, weights, shards)
        with open(os.path.join(out_dir, "expected_%s.jsonl" % name), "w") as f:
            for score in expected_scores(config, weights, pairs):
                f.write(json.dumps(score) + "\n")
        with open(os.path.join(out_dir, "greedy_%s.jsonl" % name), "w") as f:
            for pair in pairs[:5] + pairs[-1:]:
                completion, gap = llama_reference.greedy_decode(config, weights, pair["prompt_ids"], 10)
                f.write(json.dumps({"prompt_ids": pair["prompt_ids"], "completion_ids": completion, "min_gap": gap}) + "\n")
    print("fixtures written to", out_dir)


if __name__ == "__main__":
    main()
