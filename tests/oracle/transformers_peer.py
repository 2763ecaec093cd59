"""transformers' side of transformers_check.py: what the peer computes for one model, written as
JSON lines that peer_record.py records (the check compares shardtune against them).

  transformers_peer.py score    MODEL_DIR PAIRS.jsonl OUT_FP32 OUT_FLOAT64
      each completion token's log-prob, in fp32 and in float64 (the judge past the fp32 screen;
      exact: no value rounded to float32, exact_float64.py)
  transformers_peer.py routing  MODEL_DIR PAIRS.jsonl OUT_FP32 OUT_FLOAT64
      each sparse layer's top-k weights and experts per token (the gate modules, hooked)
  transformers_peer.py reward   MODEL_DIR PAIRS.jsonl OUT
      AutoModelForSequenceClassification's reward per sequence (right-padded batches of 8)
  transformers_peer.py generate MODEL_DIR PROMPTS.jsonl MAX_NEW_TOKENS OUT
      greedy generate(do_sample=False) per prompt, messages through the model's chat template
"""
import contextlib
import json
import os
import sys

import torch
import transformers

import hf_models
from exact_float64 import exact_float64


def load(model_dir, dtype=torch.float32):
    # An image-text wrapper's experts are its text_config's: eager too (hf_models reads the top level).
    with open(os.path.join(model_dir, "config.json")) as f:
        text = json.load(f).get("text_config", {})
    eager = {"experts_implementation": "eager"} if "num_experts" in text else {}
    return hf_models.load(transformers.AutoModelForCausalLM, model_dir, dtype, **eager).eval()


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def token_logps(model, pair):
    ids = pair["prompt_ids"] + pair["completion_ids"]
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0]
    picked = torch.log_softmax(logits, dim=-1)[:-1].gather(1, torch.tensor(ids[1:])[:, None])[:, 0]
    return picked[len(pair["prompt_ids"]) - 1:].tolist()


def in_precision(dtype):
    """float64 runs without float32 islands (exact_float64.py): the judge of fp32 noise."""
    return exact_float64() if dtype == torch.float64 else contextlib.nullcontext()


def score(model_dir, pairs_path, out_fp32, out_float64):
    pairs = read_jsonl(pairs_path)
    for out, dtype in [(out_fp32, torch.float32), (out_float64, torch.float64)]:
        with in_precision(dtype):
            model = load(model_dir, dtype)
            rows = [{"token_logps": token_logps(model, pair)} for pair in pairs]
        write_jsonl(out, rows)


def layer_routing(model, ids):
    """Each sparse layer's (weights [T, k], experts [T, k]) as its gate module returns them."""
    routed, hooks = {}, []
    for name, module in model.named_modules():
        if type(module).__name__.endswith("TopKRouter"):
            layer = int(name.split("layers.")[1].split(".")[0])
            hooks.append(module.register_forward_hook(
                lambda _m, _i, out, layer=layer: routed.__setitem__(layer, (out[1].double(), out[2]))))
    try:
        with torch.no_grad():
            model(torch.tensor([ids]))
    finally:
        for hook in hooks:
            hook.remove()
    return routed


def routing(model_dir, pairs_path, out_fp32, out_float64):
    pairs = read_jsonl(pairs_path)
    for out, dtype in [(out_fp32, torch.float32), (out_float64, torch.float64)]:
        rows = []
        with in_precision(dtype):
            model = load(model_dir, dtype)
            for pair in pairs:
                routed = layer_routing(model, pair["prompt_ids"] + pair["completion_ids"])
                rows.append({"routing": [{"layer": layer, "weights": weights.tolist(), "experts": experts.tolist()}
                                         for layer, (weights, experts) in sorted(routed.items())]})
        write_jsonl(out, rows)


def reward(model_dir, pairs_path, out):
    pairs = read_jsonl(pairs_path)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(model_dir, dtype=torch.float32).eval()
    pad = model.config.pad_token_id
    rewards = []
    for first in range(0, len(pairs), 8):
        rows = [p["prompt_ids"] + p["completion_ids"] for p in pairs[first:first + 8]]
        longest = max(len(row) for row in rows)
        ids = torch.tensor([row + [pad] * (longest - len(row)) for row in rows])
        mask = torch.tensor([[1] * len(row) + [0] * (longest - len(row)) for row in rows])
        with torch.no_grad():
            rewards += model(ids, attention_mask=mask).logits[:, 0].tolist()
    write_jsonl(out, [{"architecture": model.config.architectures[0], "pad_token_id": pad}] +
                [{"reward": value} for value in rewards])


def prompt_ids(tokenizer, record):
    if "prompt_ids" in record:
        return record["prompt_ids"]
    rendered = tokenizer.apply_chat_template(record["messages"], add_generation_prompt=True, tokenize=True)
    return list(rendered["input_ids"] if hasattr(rendered, "keys") else rendered)


def generate(model_dir, prompts_path, max_new_tokens, out):
    records = read_jsonl(prompts_path)
    model = load(model_dir)
    tokenizer = transformers.AutoTokenizer.from_pretrained(model_dir) if any("messages" in r for r in records) else None
    eos = model.generation_config.eos_token_id
    rows = []
    for record in records:
        ids = torch.tensor([prompt_ids(tokenizer, record)])
        with torch.no_grad():
            tokens = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=int(max_new_tokens),
                                    do_sample=False, eos_token_id=eos,
                                    pad_token_id=eos if isinstance(eos, int) else 0)[0, ids.shape[1]:].tolist()
        rows.append({"completion_ids": tokens})
    write_jsonl(out, rows)


def main():
    command, args = sys.argv[1], sys.argv[2:]
    run = {"score": score, "routing": routing, "reward": reward, "generate": generate}.get(command)
    if run is None:
        raise SystemExit(f"transformers_peer.py: unknown command {command}")
    run(*args)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, CPU")


if __name__ == "__main__":
    main()
