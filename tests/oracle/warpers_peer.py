"""transformers' own sampling warpers on warpers_inputs.py's logits: the processors
GenerationMixin._get_logits_processor builds for each case's GenerationConfig (do_sample; the
temperature, top_k, top_p and min_p warpers in its order), applied to the fp32 logits, and the
softmax generate samples from. The peer of warpers_test.sh.

usage: warpers_peer.py INPUTS.json OUT.json
"""
import json
import sys

import torch
from transformers import GenerationConfig, GenerationMixin


def main():
    data = json.load(open(sys.argv[1]))
    logits = torch.tensor([data["logits"]], dtype=torch.float32)
    out = {}
    for case in data["cases"]:
        config = GenerationConfig(do_sample=True, temperature=case.get("temperature", 1.0), top_k=case.get("top_k", 0),
                                  top_p=case.get("top_p", 1.0), min_p=case.get("min_p"))
        processors = GenerationMixin._get_logits_processor(
            GenerationMixin(), generation_config=config, input_ids_seq_length=1, encoder_input_ids=None,
            prefix_allowed_tokens_fn=None, logits_processor=None)
        scores = processors(torch.zeros(1, 1, dtype=torch.long), logits.clone())
        out[case["name"]] = {"processors": [type(p).__name__ for p in processors],
                             "probabilities": torch.softmax(scores, -1)[0].tolist()}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
