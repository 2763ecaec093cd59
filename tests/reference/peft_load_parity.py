"""GPU-machine check (needs transformers and peft): the adapter directory of a shardtune LoRA run
loaded by peft onto its base (PeftModel.from_pretrained) computes what shardtune's merged export
computes when transformers loads it: the same logits on random ids, fp32, within 1e-4 relative.
Prints one markdown row (docs/fidelity.md).

usage: peft_load_parity.py BASE_HF_DIR ADAPTER_DIR MERGED_HF_DIR
"""
import sys

import peft
import torch
import transformers


def main():
    base_dir, adapter_dir, merged_dir = sys.argv[1:4]
    base = transformers.AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32)
    adapted = peft.PeftModel.from_pretrained(base, adapter_dir).eval()
    merged = transformers.AutoModelForCausalLM.from_pretrained(merged_dir, torch_dtype=torch.float32).eval()
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(3, merged.config.vocab_size, (3, 37), generator=generator)
    with torch.no_grad():
        got = adapted(input_ids=ids).logits
        want = merged(input_ids=ids).logits
        plain = base.get_base_model()(input_ids=ids).logits if hasattr(base, "get_base_model") else None
    relative = ((got - want).abs().max() / want.abs().max()).item()
    print(f"| peft {peft.__version__} adapter vs shardtune merged | fp32 | max rel logit diff {relative:.2e} |")
    if plain is not None and torch.equal(plain, want):
        raise SystemExit("peft_load_parity: the merged model equals the base; the adapters changed nothing")
    if relative > 1e-4:
        raise SystemExit(f"peft_load_parity: peft's adapter and the merged export differ ({relative:.2e})")


if __name__ == "__main__":
    main()
