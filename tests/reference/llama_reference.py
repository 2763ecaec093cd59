"""An independent Llama (and Qwen2, Mistral) forward pass in float64, written from the published formulas
(Llama / Llama 3.1 papers, transformers' documented conventions), to check shardtune against.

Deliberately different code from lib/model: per-head loops, pairwise rotation, explicit masks,
frequencies computed in Python floats. Only torch (Debian python3-torch) is needed.
"""
import math

import torch


def head_dim(config):
    return config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]


def inverse_frequencies(config):
    dim = head_dim(config)
    theta = config.get("rope_theta", 10000.0)
    freqs = [theta ** (-(2 * i) / dim) for i in range(dim // 2)]
    scaling = config.get("rope_scaling") or {}
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "linear":
        freqs = [f / scaling["factor"] for f in freqs]
    elif kind == "llama3":
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        out = []
        for f in freqs:
            wavelength = 2 * math.pi / f
            if wavelength < old / high:          # high frequency: unchanged
                out.append(f)
            elif wavelength > old / low:         # low frequency: interpolated by factor
                out.append(f / factor)
            else:                                # in between: smooth blend
                s = (old / wavelength - low) / (high - low)
                out.append((1 - s) * f / factor + s * f)
        freqs = out
    return freqs


def rotate(x, positions, freqs):
    """x [T, head_dim]: pairs (i, i + head_dim/2) rotated by angle position * freq_i."""
    half = x.shape[1] // 2
    out = torch.empty_like(x)
    for i, f in enumerate(freqs):
        angle = positions * f
        c, s = torch.cos(angle), torch.sin(angle)
        a, b = x[:, i], x[:, i + half]
        out[:, i] = a * c - b * s
        out[:, i + half] = b * c + a * s
    return out


def rms_norm(x, weight, eps):
    return weight * (x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps))


def linear(x, weights, name):
    y = x @ weights[name + ".weight"].T
    bias = weights.get(name + ".bias")
    return y if bias is None else y + bias


def attention(x, weights, prefix, config, freqs):
    length = x.shape[0]
    heads, kv_heads, dim = config["num_attention_heads"], config["num_key_value_heads"], head_dim(config)
    q = linear(x, weights, prefix + "q_proj").view(length, heads, dim)
    k = linear(x, weights, prefix + "k_proj").view(length, kv_heads, dim)
    v = linear(x, weights, prefix + "v_proj").view(length, kv_heads, dim)
    if config["model_type"] == "qwen3":           # each head's q and k RMS-normed, before rotary
        q = rms_norm(q, weights[prefix + "q_norm.weight"], config["rms_norm_eps"])
        k = rms_norm(k, weights[prefix + "k_norm.weight"], config["rms_norm_eps"])
    positions = torch.arange(length, dtype=torch.float64)
    mask = torch.zeros((length, length), dtype=torch.float64)
    window = config.get("sliding_window") if config["model_type"] == "mistral" else None
    for i in range(length):
        for j in range(length):
            # causal; Mistral: key j within the window - 1 tokens before query i
            if j > i or (window and i - j >= window):
                mask[i, j] = float("-inf")
    outputs = []
    for h in range(heads):
        kv = h // (heads // kv_heads)             # grouped-query attention
        qh = rotate(q[:, h], positions, freqs)
        kh = rotate(k[:, kv], positions, freqs)
        scores = qh @ kh.T / math.sqrt(dim) + mask
        outputs.append(torch.softmax(scores, dim=-1) @ v[:, kv])
    return linear(torch.cat(outputs, dim=-1), weights, prefix + "o_proj")


def mlp(x, weights, prefix):
    gate = linear(x, weights, prefix + "gate_proj")
    return linear(gate * torch.sigmoid(gate) * linear(x, weights, prefix + "up_proj"), weights, prefix + "down_proj")


def logits(config, weights, ids):
    """Next-token logits [T, V] after each prefix of ids, float64, every position recomputed."""
    weights = {k: v.to(torch.float64) for k, v in weights.items()}
    freqs = inverse_frequencies(config)
    eps = config.get("rms_norm_eps", 1e-6)
    h = weights["model.embed_tokens.weight"][torch.tensor(ids)]
    for layer in range(config["num_hidden_layers"]):
        p = "model.layers.%d." % layer
        h = h + attention(rms_norm(h, weights[p + "input_layernorm.weight"], eps), weights, p + "self_attn.", config, freqs)
        h = h + mlp(rms_norm(h, weights[p + "post_attention_layernorm.weight"], eps), weights, p + "mlp.")
    h = rms_norm(h, weights["model.norm.weight"], eps)
    head = weights["model.embed_tokens.weight"] if config.get("tie_word_embeddings") else weights["lm_head.weight"]
    return h @ head.T


def token_logps(config, weights, ids):
    """log p(ids[t+1] | ids[:t+1]) for every t, float64. ids: list of ints."""
    scores = logits(config, weights, ids)
    log_probs = scores - torch.logsumexp(scores, dim=-1, keepdim=True)
    return [log_probs[t, ids[t + 1]].item() for t in range(len(ids) - 1)]


def greedy_decode(config, weights, prompt, new_tokens):
    """The argmax continuation of prompt, one token at a time over the whole sequence (no cache);
    also the smallest gap between the best and second-best logit on the way."""
    ids, gap = list(prompt), float("inf")
    for _ in range(new_tokens):
        top = torch.topk(logits(config, weights, ids)[-1], 2)
        gap = min(gap, (top.values[0] - top.values[1]).item())
        ids.append(int(top.indices[0]))
    return ids[len(prompt):], gap
