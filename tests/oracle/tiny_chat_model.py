"""tiny_chat_model.py FAMILY TOKENIZER_DIR OUT_MODEL_DIR OUT_CONVERSATIONS.jsonl ALPACA.json: a tiny
random model (2 layers, hidden 32, seed 0) of a real tokenizer's vocabulary, with that tokenizer's
files beside it, and 64 conversations of 1-3 turns from LlamaFactory's alpaca demo, for the SFT
oracle against TRL (trl_test.sh).

FAMILY:
  smollm2  Llama, SmolLM2's vocabulary (49152) and chat template; untied. pad_token_id 0, a token
           the data never holds: transformers builds the embedding with padding_idx =
           pad_token_id, whose row never gets a gradient, and SmolLM2's own pad token is
           <|im_end|> (2), which ends every turn; shardtune trains every row it uses.
  qwen3    Qwen3 (q/k norms, head_dim 16), Qwen3's vocabulary, tied embeddings; pad_token_id a row
           past the tokenizer's 151669 tokens. Every other conversation's replies carry reasoning
           (<think>...</think>), which its thinking template writes on the last reply only.
"""
import json
import shutil
import sys

import torch
import transformers

family, vocabulary, tiny, out, alpaca = sys.argv[1:6]
torch.manual_seed(0)
shape = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             max_position_embeddings=512)
if family == "smollm2":
    model = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=49152, tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0, **shape))
    files, longest, reasoning = ["tokenizer.json", "tokenizer_config.json", "chat_template.jinja"], 400, False
elif family == "qwen3":
    model = transformers.Qwen3ForCausalLM(transformers.Qwen3Config(
        vocab_size=151936, head_dim=16, tie_word_embeddings=True, bos_token_id=151643, eos_token_id=151645,
        pad_token_id=151935, **shape))
    files, longest, reasoning = ["tokenizer.json", "tokenizer_config.json"], 300, True
else:
    sys.exit(f"unknown family {family}: smollm2 or qwen3")
model.save_pretrained(tiny)
for name in files:
    shutil.copy(f"{vocabulary}/{name}", f"{tiny}/{name}")
records = [r for r in json.load(open(alpaca)) if not r["input"] and len(r["instruction"]) + len(r["output"]) < longest]
with open(out, "w") as f:
    at = 0
    for i in range(64):
        messages = []
        for _ in range(1 + i % 3):
            reply = records[at]["output"]
            if reasoning and i % 2:
                reply = f"<think>\nThe user asks: {records[at]['instruction']}\n</think>\n\n{reply}"
            messages += [{"role": "user", "content": records[at]["instruction"]}, {"role": "assistant", "content": reply}]
            at += 1
        f.write(json.dumps({"messages": messages}) + "\n")
