"""The inputs of the GRPO and RLOO loss oracle (grpo_loss_test.sh): completions' per-token log-probs
(the policy's, the generating policy's, the reference's), entropies, masks and advantages, and one
case per loss setting TRL 1.16's GRPOTrainer._compute_loss distinguishes, and RLOOTrainer's
(trainer "rloo": one ratio per completion from its summed log-probs; a wide clip region in one
case so that some completions stay inside it). The completions' summed log-ratios (-1.3 .. 0.8)
make the pessimistic bound pick the unclipped term under the advantages as given; advantage_scale
-1 flips their signs so that the clip binds (a case's advantages are the tensor's times its
advantage_scale, 1 where absent). The generating policy's
log-probs sit up to 0.4 nats off the policy's, so the clip region [1 - 0.2, 1 + 0.28] bites on
both sides; some completions have no masked tokens past a few (right padding) and one none at all.
Standard library only, seeded: the same file on every machine.

usage: grpo_loss_inputs.py OUT.json
"""
import json
import random
import sys

B, T = 6, 9


def tensors(rng):
    lengths = [9, 7, 4, 9, 1, 0]  # the last completion was masked whole (mask_truncated_completions)
    mask = [[1.0 if t < lengths[b] else 0.0 for t in range(T)] for b in range(B)]
    logps = [[-rng.uniform(0.05, 4.0) for _ in range(T)] for _ in range(B)]
    old = [[v + rng.uniform(-0.4, 0.4) for v in row] for row in logps]
    ref = [[v + rng.uniform(-0.6, 0.6) for v in row] for row in logps]
    entropies = [[rng.uniform(0.0, 3.0) for _ in range(T)] for _ in range(B)]
    advantages = [1.3, -0.7, 0.0, -1.9, 0.8, 0.5]
    return {"logps": logps, "old_logps": old, "ref_logps": ref, "entropies": entropies, "mask": mask,
            "advantages": advantages}


# Each case: TRL's GRPOConfig values it sets (the rest TRL's defaults: epsilon 0.2, token level,
# beta 0) and whether old log-probs are given (else the policy's own, detached).
BASE = {"trainer": "grpo", "gradient_accumulation_steps": 2, "steps_per_generation": 2, "num_items_in_batch": 61.0,
        "max_completion_length": 12, "epsilon": 0.2, "epsilon_high": 0.28, "old": True}
CASES = [
    {"name": "dapo_on_policy", "loss_type": "dapo", "old": False},
    {"name": "dapo_clipped", "loss_type": "dapo"},
    {"name": "dapo_four_generation_steps", "loss_type": "dapo", "steps_per_generation": 4},
    {"name": "grpo_kl", "loss_type": "grpo", "beta": 0.04},
    {"name": "dr_grpo_kl_bias_corrected", "loss_type": "dr_grpo", "beta": 0.1, "use_bias_correction_kl": True},
    {"name": "bnpo", "loss_type": "bnpo"},
    {"name": "gspo_sequence_ratio", "loss_type": "grpo", "importance_sampling_level": "sequence", "beta": 0.02,
     "epsilon": 0.03, "epsilon_high": 0.04},
    {"name": "two_sided_delta", "loss_type": "dapo", "delta": 1.1},
    {"name": "entropy_quantile", "loss_type": "dapo", "top_entropy_quantile": 0.4, "beta": 0.05},
    {"name": "rloo_on_policy", "trainer": "rloo", "old": False, "epsilon_high": 0.2},
    {"name": "rloo_clipped", "trainer": "rloo", "advantage_scale": -1.0},
    {"name": "rloo_wide_region", "trainer": "rloo", "epsilon": 0.6, "epsilon_high": 2.5, "advantage_scale": -1.0},
]


def main():
    rng = random.Random(20261204)
    cases = [dict(BASE, **case) for case in CASES]
    with open(sys.argv[1], "w") as f:
        json.dump({"tensors": tensors(rng), "cases": cases}, f)


if __name__ == "__main__":
    main()
