"""tiny_reward_model.py OUT_POLICY_DIR OUT_REWARD_DIR: a tiny random Llama policy and a tiny random
Llama reward model (LlamaForSequenceClassification, one label; seeds 0 and 1: 2 layers, hidden
32), both over one byte-level tokenizer (ids 0-255 the bytes, then <|begin_of_text|>,
<|start_header_id|>, <|end_header_id|>, <|eot_id|> = 256-259) with a Llama 3 style chat
template and Llama 2's post-processor (BOS before a text tokenized with special tokens: TRL's text
prompts get it, the reward model's inputs do not), for grpo_test.sh's reward_model case.

The tokenizer names an EOS (<|eot_id|>) and no pad token: TRL then pads the reward model's inputs
with EOS and sets the model's pad_token_id to it, so each reward is read before the template's
closing <|eot_id|> (the rule under test). The template writes `mode` when given
(chat_template_kwargs), so the case sees the keyword reach the reward model's template.
"""
import json
import os
import sys

import torch
import transformers

policy_dir, reward_dir = sys.argv[1:3]
SPECIALS = ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
TEMPLATE = ("{% if mode is defined %}[{{ mode }}]{% endif %}"
            "{% for m in messages %}<|start_header_id|>{{ m['role'] }}<|end_header_id|>\n\n{{ m['content'] }}<|eot_id|>"
            "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")


def write_tokenizer(directory):
    # GPT-2's byte alphabet: printable bytes stand for themselves, the others for 256 + k.
    printable = [b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or b >= 0xAE]
    extra = iter(range(256, 512))
    vocab = {chr(b if b in printable else next(extra)): b for b in range(256)}
    tokenizer = {"version": "1.0", "model": {"type": "BPE", "vocab": vocab, "merges": []},
                 "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True,
                                   "trim_offsets": False},
                 "decoder": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True, "trim_offsets": False},
                 # Llama 2's way: BOS before a text tokenized with its special tokens (a text prompt).
                 "post_processor": {"type": "TemplateProcessing",
                                    "single": [{"SpecialToken": {"id": SPECIALS[0], "type_id": 0}},
                                               {"Sequence": {"id": "A", "type_id": 0}}],
                                    "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                             {"Sequence": {"id": "B", "type_id": 1}}],
                                    "special_tokens": {SPECIALS[0]: {"id": SPECIALS[0], "ids": [256],
                                                                     "tokens": [SPECIALS[0]]}}},
                 "added_tokens": [{"id": 256 + i, "content": t, "special": True, "single_word": False,
                                   "lstrip": False, "rstrip": False, "normalized": False}
                                  for i, t in enumerate(SPECIALS)]}
    with open(os.path.join(directory, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f)
    with open(os.path.join(directory, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": SPECIALS[0], "eos_token": SPECIALS[3],
                   "chat_template": TEMPLATE}, f)


shape = dict(vocab_size=260, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, max_position_embeddings=256, bos_token_id=256, eos_token_id=259,
             tie_word_embeddings=False)
for directory, seed, make in ((policy_dir, 0, transformers.LlamaForCausalLM),
                              (reward_dir, 1, transformers.LlamaForSequenceClassification)):
    torch.manual_seed(seed)
    extra = {"num_labels": 1} if make is transformers.LlamaForSequenceClassification else {}
    model = make(transformers.LlamaConfig(**shape, **extra)).to(torch.float32)
    if extra:  # a trained head's scale: rewards that differ by more than fp32 noise
        torch.nn.init.normal_(model.score.weight, std=1.0)
    model.save_pretrained(directory, safe_serialization=True)
    write_tokenizer(directory)
print(f"policy {policy_dir}, reward model {reward_dir}")
