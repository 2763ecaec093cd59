"""hf_encode.py MODEL_DIR CORPUS.jsonl IDS.jsonl: Hugging Face tokenizers (the Rust reference) encodes
each line (a JSON string) with MODEL_DIR/tokenizer.json, no special tokens added, and writes its ids
as a JSON array per line; prints the throughput on one core, as tokenize_corpus does for shardtune's."""
import json
import os
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # one core, as the C++ side
from tokenizers import Tokenizer  # noqa: E402

model_dir, corpus, output = sys.argv[1:4]
tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
texts = [json.loads(line) for line in open(corpus, encoding="utf-8") if line.strip()]
start = time.perf_counter()
rows = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
seconds = time.perf_counter() - start
with open(output, "w", encoding="utf-8") as out:
    out.writelines(json.dumps(row) + "\n" for row in rows)
megabytes = sum(len(text.encode("utf-8")) for text in texts) / 1e6
print(f"hf (tokenizers, Rust): {len(texts)} strings, {megabytes:.2f} MB in {seconds:.3f} s = "
      f"{megabytes / seconds:.2f} MB/s on one core")
