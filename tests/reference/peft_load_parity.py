"""GPU-machine check (needs transformers and peft): the adapter directory of a shardtune LoRA run
loaded by peft onto its base (PeftModel.from_pretrained) computes what shardtune's merged export
computes when transformers loads it: the same logits on random ids, fp32, within 1e-4 relative.
Prints one markdown row (docs/fidelity.md).

usage: peft_load_parity.py BASE_HF_DIR ADAPTER_DIR MERGED_HF_DIR
"""
import json
import os
import sys

import peft
import safetensors.torch
import torch
import transformers


def load(path):
    """A mixture-of-experts model (tests/oracle/hf_models.py) runs its experts eagerly: PEFT's
    adapters on the stacked experts (target_parameters) apply in the loop as written."""
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    extra = {"experts_implementation": "eager"} if "num_experts" in config or "num_local_experts" in config else {}
    return transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32, **extra).eval()


def main():
    base_dir, adapter_dir, merged_dir = sys.argv[1:4]
    base = load(base_dir)
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, base.config.vocab_size, (3, 37), generator=generator)
    with torch.no_grad():
        plain = base(input_ids=ids).logits
    adapted = peft.PeftModel.from_pretrained(base, adapter_dir).eval()
    # Every tensor of the adapter file is one PEFT placed (a misnamed one would be left out, and
    # its adapter left at its initial B = 0).
    placed = set(peft.get_peft_model_state_dict(adapted))
    saved = set(safetensors.torch.load_file(os.path.join(adapter_dir, "adapter_model.safetensors")))
    if saved != placed:
        raise SystemExit(f"peft_load_parity: PEFT placed {sorted(placed - saved)[:4]}, the file holds {sorted(saved - placed)[:4]}")
    merged = load(merged_dir)
    with torch.no_grad():
        got = adapted(input_ids=ids).logits
        want = merged(input_ids=ids).logits
    relative = ((got - want).abs().max() / want.abs().max()).item()
    print(f"| peft {peft.__version__} adapter vs shardtune merged | fp32 | max rel logit diff {relative:.2e} |")
    if torch.equal(plain, want):
        raise SystemExit("peft_load_parity: the merged model equals the base; the adapters changed nothing")
    if relative > 1e-4:
        raise SystemExit(f"peft_load_parity: peft's adapter and the merged export differ ({relative:.2e})")


if __name__ == "__main__":
    main()
