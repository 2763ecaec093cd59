# Sourced by e2e scripts that tokenize text without a real vocabulary (they define $bin, $work
# and fail: harness.sh).
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

# tiny_model DIR [SPECIAL ...]: a Hugging Face model directory: the debug preset's shape (vocab
# 512) after one step, exported, with a byte-level tokenizer holding the given chat tokens
# (default Llama 3's).
tiny_model() {
  local dir=$1
  shift
  "$bin" synth --output "$work/tiny_data" --pairs 16 --seed 3 >/dev/null || fail "synth"
  "$bin" train --model.preset=debug --data.train="$work/tiny_data/train" --train.output_dir="$work/tiny_run" \
    --train.max_steps=1 --ckpt.export=true --ckpt.export_dtype=fp32 --progress off >/dev/null || fail "tiny model"
  mkdir -p "$dir"
  cp "$work/tiny_run/export/config.json" "$work/tiny_run/export/model.safetensors" "$dir/"
  byte_tokenizer "$dir" "$@"
  rm -rf "$work/tiny_data" "$work/tiny_run"
}
