"""tiny_gemma3_model.py OUT_DIR MULTIMODAL_DIR RENAMED_DIR: a tiny random Gemma 3 made and saved by
transformers (seed 0, fp32, vocabulary 97 as the reference fixtures' pairs), for the Gemma oracles.

OUT_DIR: Gemma3ForCausalLM (model_type gemma3_text): 5 layers, sliding, full, sliding, sliding,
full; a window of 4 tokens (shorter than every row the oracles score); query_pre_attn_scalar 12
over head_dim 8 (the scale differs from head_dim's); the full layers' rotary base 1e6 scaled
linearly x2, the sliding ones' 1e4; tied embeddings.
MULTIMODAL_DIR: the same language model inside a Gemma3ForConditionalGeneration with a tiny
SigLIP vision tower, as save_pretrained writes it and as the released google/gemma-3-*b
checkpoints hold it (language_model.model.*, vision_tower.*).
RENAMED_DIR: MULTIMODAL_DIR's tensors under the names transformers 5 holds in memory
(model.language_model.*, model.vision_tower.*), as other tools save them.

Weights are N(0, 0.1), the norms' too (Gemma's norms scale by 1 + w).
"""
import os
import shutil
import sys

import safetensors.torch
import torch
import transformers

out, multimodal, renamed_dir = sys.argv[1:4]
torch.manual_seed(0)
text = dict(vocab_size=97, hidden_size=32, intermediate_size=48, num_hidden_layers=5, num_attention_heads=4,
            num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=12, sliding_window=4,
            layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                         "full_attention"],
            rope_parameters={"full_attention": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
            max_position_embeddings=128, rms_norm_eps=1e-6, bos_token_id=1, eos_token_id=2, pad_token_id=0,
            tie_word_embeddings=True)
config = transformers.Gemma3TextConfig(**text)
model = transformers.Gemma3ForCausalLM(config).to(torch.float32)
with torch.no_grad():
    for name, parameter in model.named_parameters():
        parameter.copy_(0.1 * torch.randn_like(parameter))
model.save_pretrained(out)

vision = transformers.SiglipVisionConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, image_size=28, patch_size=14)
wrapper_config = transformers.Gemma3Config(text_config=config, vision_config=vision, mm_tokens_per_image=4,
                                           bos_token_id=1, eos_token_id=2, pad_token_id=0)
wrapper = transformers.Gemma3ForConditionalGeneration(wrapper_config).to(torch.float32)
with torch.no_grad():
    for name, parameter in wrapper.named_parameters():
        parameter.copy_(0.1 * torch.randn_like(parameter))
    wrapper.model.language_model.load_state_dict(model.model.state_dict())
wrapper.save_pretrained(multimodal)

os.makedirs(renamed_dir, exist_ok=True)
saved = safetensors.torch.load_file(os.path.join(multimodal, "model.safetensors"))
assert any(n.startswith("language_model.model.layers.") for n in saved), sorted(saved)[:5]
renamed = {}
for name, tensor in saved.items():
    for old, new in (("language_model.model.", "model.language_model."), ("vision_tower.", "model.vision_tower."),
                     ("multi_modal_projector.", "model.multi_modal_projector.")):
        if name.startswith(old):
            name = new + name[len(old):]
    renamed[name] = tensor
safetensors.torch.save_file(renamed, os.path.join(renamed_dir, "model.safetensors"), metadata={"format": "pt"})
shutil.copy(os.path.join(multimodal, "config.json"), os.path.join(renamed_dir, "config.json"))
print(f"gemma3: {sum(p.numel() for p in model.parameters())} parameters in {out}; multimodal in {multimodal} "
      f"and {renamed_dir}")
