"""load(cls, path, dtype, **kwargs): a transformers model for the oracles. A mixture-of-experts
model runs its experts eagerly (a loop over experts, as written in modeling_*.py): transformers'
default grouped_mm takes no float64, which the float64 judges run in, and the eager loop is the
definition the issue names as the oracle."""
import json
import os


def load(cls, path, dtype, **kwargs):
    with open(os.path.join(path, "config.json")) as f:
        config = json.load(f)
    if "num_experts" in config or "num_local_experts" in config:
        kwargs["experts_implementation"] = "eager"
    return cls.from_pretrained(path, dtype=dtype, **kwargs)
