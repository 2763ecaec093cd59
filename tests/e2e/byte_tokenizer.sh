# Sourced by e2e scripts that tokenize text without a real vocabulary.
# byte_tokenizer DIR [SPECIAL ...]: a Llama 3 style byte-level tokenizer: ids 0-255 are the bytes
# (GPT-2's alphabet), then the special tokens (default <|begin_of_text|>, <|start_header_id|>,
# <|end_header_id|>, <|eot_id|>).
byte_tokenizer() {
  mkdir -p "$1"
  python3 - "$@" <<'PY'
import json, sys
printable = [b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or b >= 0xAE]
extra = iter(range(256, 512))
vocab = {chr(b if b in printable else next(extra)): b for b in range(256)}
specials = sys.argv[2:] or ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
tokenizer = {"model": {"type": "BPE", "vocab": vocab, "merges": []},
             "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
             "added_tokens": [{"id": 256 + i, "content": t, "special": True} for i, t in enumerate(specials)]}
json.dump(tokenizer, open(sys.argv[1] + "/tokenizer.json", "w"))
PY
}
