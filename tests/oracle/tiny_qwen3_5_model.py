"""tiny_qwen3_5_model.py [--moe] OUT_DIR MULTIMODAL_DIR LENGTHS_DIR: a tiny random Qwen3.5 made and
saved by transformers (seed 0, fp32, vocabulary 97 as the reference fixtures' pairs), for the Qwen3.5
oracles.

OUT_DIR: Qwen3_5ForCausalLM (model_type qwen3_5_text): 4 layers, three Gated DeltaNet
(linear_attention) then one gated full-attention layer; 2 key heads serving 4 value heads (key
head dim 8, value head dim 6, conv kernel 4); 4 query heads over 2 key/value heads of head_dim 16,
rotary over its first 4 dimensions (partial_rotary_factor 0.25); untied head. Weights N(0, 0.1);
A_log log U(0.01, 16) as transformers draws it, dt_bias 1 + N(0, 0.3), the gated norms' weights
1 + N(0, 0.1) and the (1 + w) norms N(0, 0.1), so none sits at its identity.
MULTIMODAL_DIR: the same language model inside a Qwen3_5ForConditionalGeneration with a tiny
vision tower, as the released Qwen/Qwen3.5-* checkpoints hold it (model.language_model.*,
model.visual.*, lm_head), with multi-token-prediction tensors (mtp.*) as they ship beside them.
LENGTHS_DIR/pairs.jsonl: one prompt + completion per length around and across the delta rule's
64-token chunk (1, 63, 64, 65 and 150 tokens scored), prompts of 1 to 40 tokens.
--moe: the mixture-of-experts model instead (Qwen3_5MoeForCausalLM, and inside a
Qwen3_5MoeForConditionalGeneration): the same layers with every MLP 4 experts of 12, 2 per token
(always renormalised), and a shared expert of 20 behind its sigmoid gate; saved as transformers 5.24
saves it, one tensor per expert.
"""
import json
import os
import random
import sys

import safetensors.torch
import torch
import transformers

moe = sys.argv[1] == "--moe"
out, multimodal, lengths_dir = sys.argv[2:5] if moe else sys.argv[1:4]
torch.manual_seed(0)
text = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=4, num_attention_heads=4,
            num_key_value_heads=2, head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4,
            linear_key_head_dim=8, linear_value_head_dim=6, linear_conv_kernel_dim=4,
            layer_types=["linear_attention", "linear_attention", "linear_attention", "full_attention"],
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
            max_position_embeddings=512, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
            tie_word_embeddings=False)
if moe:
    del text["intermediate_size"]
    text.update(moe_intermediate_size=12, shared_expert_intermediate_size=20, num_experts=4, num_experts_per_tok=2,
                router_aux_loss_coef=0.001)
text_config, causal_lm = ((transformers.Qwen3_5MoeTextConfig, transformers.Qwen3_5MoeForCausalLM) if moe else
                          (transformers.Qwen3_5TextConfig, transformers.Qwen3_5ForCausalLM))
model = causal_lm(text_config(**text)).to(torch.float32)
with torch.no_grad():
    for name, parameter in model.named_parameters():
        if name.endswith("A_log"):
            parameter.copy_(torch.empty_like(parameter).uniform_(0.01, 16).log())
        elif name.endswith("dt_bias"):
            parameter.copy_(1.0 + 0.3 * torch.randn_like(parameter))
        elif name.endswith("linear_attn.norm.weight"):
            parameter.copy_(1.0 + 0.1 * torch.randn_like(parameter))
        else:
            parameter.copy_(0.1 * torch.randn_like(parameter))
model.save_pretrained(out)

vision = dict(depth=1, hidden_size=16, intermediate_size=32, num_heads=2, patch_size=14, spatial_merge_size=2,
              temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=16)
wrapper_class, generation = ((transformers.Qwen3_5MoeConfig, transformers.Qwen3_5MoeForConditionalGeneration) if moe
                              else (transformers.Qwen3_5Config, transformers.Qwen3_5ForConditionalGeneration))
wrapper_config = wrapper_class(text_config=text, vision_config=vision, bos_token_id=1, eos_token_id=2, pad_token_id=0)
wrapper = generation(wrapper_config).to(torch.float32)
with torch.no_grad():
    for name, parameter in wrapper.named_parameters():
        parameter.copy_(0.1 * torch.randn_like(parameter))
    wrapper.model.language_model.load_state_dict(model.model.state_dict())
    wrapper.lm_head.load_state_dict(model.lm_head.state_dict())
wrapper.save_pretrained(multimodal)
path = os.path.join(multimodal, "model.safetensors")
saved = safetensors.torch.load_file(path)
assert any(n.startswith("model.language_model.layers.") for n in saved), sorted(saved)[:5]
assert any(n.startswith("model.visual.") for n in saved), sorted(saved)[:5]
assert not moe or any(".mlp.experts.0.gate_proj." in n for n in saved), "transformers saved no expert of its own"
# The released checkpoints' multi-token-prediction head (transformers leaves it unread): one
# decoder layer of the text model's shape behind a fusing projection.
for name, shape in (("mtp.fc.weight", (32, 64)), ("mtp.pre_fc_norm_embedding.weight", (32,)),
                    ("mtp.pre_fc_norm_hidden.weight", (32,)), ("mtp.norm.weight", (32,)),
                    ("mtp.layers.0.self_attn.q_proj.weight", (128, 32)),
                    ("mtp.layers.0.mlp.experts.0.up_proj.weight" if moe else "mtp.layers.0.mlp.up_proj.weight",
                     (12, 32) if moe else (48, 32))):
    saved[name] = 0.1 * torch.randn(shape)
safetensors.torch.save_file(saved, path, metadata={"format": "pt"})

os.makedirs(lengths_dir, exist_ok=True)
rng = random.Random(0)
with open(os.path.join(lengths_dir, "pairs.jsonl"), "w") as f:
    for scored, prompt in ((1, 1), (63, 1), (64, 12), (65, 40), (150, 7)):
        ids = [rng.randint(3, 96) for _ in range(prompt + scored)]
        f.write(json.dumps({"prompt_ids": ids[:prompt], "completion_ids": ids[prompt:]}) + "\n")
print(f"qwen3_5{'_moe' if moe else ''}: {sum(p.numel() for p in model.parameters())} parameters in {out}; multimodal in {multimodal}; "
      f"lengths in {lengths_dir}")
