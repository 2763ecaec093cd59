"""tiktoken_from_json.py TOKENIZER_JSON OUT: writes a byte-level BPE tokenizer.json's vocabulary
(its regular tokens, not the added ones) as a tiktoken rank file, "<base64 bytes> <rank>" per
line - the format of Llama 3's original tokenizer.model - so tokenizer_parity.sh can check the tiktoken
loader against the tokenizer.json encoders on the same vocabulary."""
import base64
import json
import sys

printable = {b for b in range(256) if 33 <= b <= 126 or 0xA1 <= b <= 0xAC or b >= 0xAE}
to_byte, extra = {}, 256
for b in range(256):  # GPT-2's byte alphabet
    if b in printable:
        to_byte[chr(b)] = b
    else:
        to_byte[chr(extra)] = b
        extra += 1

model = json.load(open(sys.argv[1], encoding="utf-8"))
added = {entry["id"] for entry in model.get("added_tokens", [])}
with open(sys.argv[2], "w") as out:
    for token, rank in sorted(model["model"]["vocab"].items(), key=lambda item: item[1]):
        if rank not in added:
            out.write(f"{base64.b64encode(bytes(to_byte[c] for c in token)).decode()} {rank}\n")
