"""tiny_moe_model.py FAMILY OUT_DIR STACKED_DIR: a tiny random mixture-of-experts model made and saved
by transformers (seed 0, fp32, vocabulary 97 as the reference fixtures' pairs), for the MoE oracles.
OUT_DIR holds it as save_pretrained writes it (one tensor per expert); STACKED_DIR the same weights
as transformers 5 holds them (experts.gate_up_proj [E, 2I, D], experts.down_proj [E, D, I]).

FAMILY:
  qwen3_moe  3 layers, the middle one dense (mlp_only_layers), 8 experts of width 16, top 2,
             norm_topk_prob true; Qwen3's q/k norms.
  mixtral    2 layers, 8 experts of width 24, top 2 (always renormalised).

Weights are N(0, 0.1) (norms 1 + N(0, 0.1)) and the routers N(0, 1): transformers' own init
(0.02) gives near-uniform router probabilities, whose top-k an fp32 rounding can reorder; these
routers pick each token's experts with clear margins, as trained ones do.
"""
import os
import shutil
import sys

import safetensors.torch
import torch
import transformers

family, out, stacked = sys.argv[1:4]
torch.manual_seed(0)
shape = dict(vocab_size=97, hidden_size=32, num_attention_heads=4, num_key_value_heads=2, head_dim=8,
             max_position_embeddings=128, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, tie_word_embeddings=False,
             num_experts_per_tok=2)
if family == "qwen3_moe":
    config = transformers.Qwen3MoeConfig(intermediate_size=48, moe_intermediate_size=16, num_hidden_layers=3,
                                         num_experts=8, mlp_only_layers=[1], norm_topk_prob=True, **shape)
elif family == "mixtral":
    config = transformers.MixtralConfig(intermediate_size=24, num_hidden_layers=2, num_local_experts=8, **shape)
else:
    sys.exit(f"unknown family {family}: qwen3_moe or mixtral")
model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith("norm.weight"):
            parameter.copy_(1 + 0.1 * torch.randn_like(parameter))
        elif name.endswith("mlp.gate.weight"):
            parameter.copy_(torch.randn_like(parameter))
        else:
            parameter.copy_(0.1 * torch.randn_like(parameter))
model.save_pretrained(out)
os.makedirs(stacked, exist_ok=True)
tensors = {name: tensor.contiguous() for name, tensor in model.state_dict().items()}
assert any(name.endswith("experts.gate_up_proj") for name in tensors), "transformers holds no stacked experts"
safetensors.torch.save_file(tensors, os.path.join(stacked, "model.safetensors"), metadata={"format": "pt"})
shutil.copy(os.path.join(out, "config.json"), os.path.join(stacked, "config.json"))
print(f"{family}: {sum(p.numel() for p in model.parameters())} parameters in {out} and {stacked}")
