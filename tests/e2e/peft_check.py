"""peft_check.py <base HF dir> <adapter dir> <merged HF dir> <targets, comma-separated PEFT names>:
checks a LoRA export against PEFT's conventions, independently of shardtune's C++ code - the
adapter directory's adapter_config.json and tensor names/shapes as PEFT saves them, and the
merged model equal to W + lora_alpha / r * B @ A (alpha / sqrt(r) with use_rslora) for every
adapted weight and to the base elsewhere."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "reference"))
import safetensors_io  # noqa: E402
import torch  # noqa: E402

base_dir, adapter_dir, merged_dir, targets = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4].split(",")
config = json.load(open(os.path.join(adapter_dir, "adapter_config.json")))
assert config["peft_type"] == "LORA" and config["task_type"] == "CAUSAL_LM", config
assert sorted(config["target_modules"]) == sorted(targets), config["target_modules"]
assert config["base_model_name_or_path"] == base_dir, config["base_model_name_or_path"]
r, alpha = config["r"], config["lora_alpha"]
scale = alpha / (math.sqrt(r) if config["use_rslora"] else r)

base = safetensors_io.read(os.path.join(base_dir, "model.safetensors"))
adapter = safetensors_io.read(os.path.join(adapter_dir, "adapter_model.safetensors"))
merged = safetensors_io.read(os.path.join(merged_dir, "model.safetensors"))
assert merged.keys() == base.keys(), sorted(set(merged) ^ set(base))

adapted = 0
for name, weight in base.items():
    module = name[: -len(".weight")]
    a_name = f"base_model.model.{module}.lora_A.weight"
    if a_name not in adapter:
        assert torch.equal(merged[name], weight), f"{name} changed but has no adapter"
        continue
    a, b = adapter[a_name].double(), adapter[f"base_model.model.{module}.lora_B.weight"].double()
    assert a.shape == (r, weight.shape[1]) and b.shape == (weight.shape[0], r), (name, a.shape, b.shape)
    expected = weight.double() + scale * b @ a
    error = (merged[name].double() - expected).abs().max().item() / expected.abs().max().item()
    assert error < 1e-6, f"{name}: merged differs from W + scale B A by {error}"
    assert b.abs().max().item() > 0, f"{name}: B is still zero after training"
    adapted += 1
layers = 1 + max(int(n.split(".")[2]) for n in base if n.startswith("model.layers."))
assert adapted == layers * len(targets), (adapted, layers, targets)
assert len(adapter) == 2 * adapted, sorted(adapter)
print(f"peft_check: {adapted} adapted weights (r {r}, scale {scale}) merge as PEFT does; {len(adapter)} adapter tensors")
