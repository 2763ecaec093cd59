"""TRL 1.16's GRPOTrainer._compute_loss (and RLOOTrainer's for the "rloo" cases) itself on fixed
per-token inputs, in float64: the peer of the GRPO and RLOO loss oracle (grpo_loss_test.sh). The
trainer's method runs on a stand-in for the trainer (its attributes as __init__ sets them from the
case's config values, one process) whose _get_per_token_logps_and_entropies returns the case's
log-probs as a leaf tensor, so the loss, its gradient in the log-probs and the metrics TRL logs are
TRL's own code's. RLOO's loss is recorded as _compute_loss returns it: the micro-batch's mean,
which TRL's Trainer then divides by gradient accumulation.

usage: grpo_loss_peer.py INPUTS.json OUT.json
"""
import json
import sys
import types
from collections import defaultdict

import torch
from trl import GRPOConfig, RLOOConfig
from trl.trainer.grpo_trainer import GRPOTrainer
from trl.trainer.rloo_trainer import RLOOTrainer


class OneProcess:
    num_processes = 1

    def gather(self, x):
        return x.reshape(-1) if x.dim() == 0 else x

    gather_for_metrics = gather

    def reduce(self, x, reduction="sum"):
        return x

    def pad_across_processes(self, x, dim=0, pad_index=0):
        return x


def trainer_for(case, logps, entropies):
    args = GRPOConfig(output_dir="/tmp/unused", loss_type=case["loss_type"], beta=case.get("beta", 0.0),
                      epsilon=case["epsilon"], epsilon_high=case["epsilon_high"], delta=case.get("delta"),
                      importance_sampling_level=case.get("importance_sampling_level", "token"),
                      top_entropy_quantile=case.get("top_entropy_quantile", 1.0),
                      use_bias_correction_kl=case.get("use_bias_correction_kl", False),
                      max_completion_length=case["max_completion_length"],
                      per_device_train_batch_size=6, num_generations=2,
                      gradient_accumulation_steps=case["gradient_accumulation_steps"],
                      steps_per_generation=case["steps_per_generation"], report_to="none",
                      use_cpu=True, bf16=False)
    t = types.SimpleNamespace()
    t.args = args
    t.loss_type, t.beta, t.importance_sampling_level = args.loss_type, args.beta, args.importance_sampling_level
    t.epsilon_low, t.epsilon_high = args.epsilon, args.epsilon_high
    t.top_entropy_quantile, t.off_policy_mask_threshold = args.top_entropy_quantile, None
    t.use_vllm, t.vllm_importance_sampling_correction = False, False
    t.max_completion_length = args.max_completion_length
    t.current_gradient_accumulation_steps = args.gradient_accumulation_steps
    t.accelerator = OneProcess()
    t.model = types.SimpleNamespace(training=True)
    t._entropy_bonus_enabled, t.aux_loss_enabled = False, False
    t._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    t._get_per_token_logps_and_entropies = lambda *a, **k: (logps, entropies, None)
    t.get_high_entropy_mask = types.MethodType(GRPOTrainer.get_high_entropy_mask, t)
    return t


def rloo_trainer_for(case, logps, entropies):
    args = RLOOConfig(output_dir="/tmp/unused", epsilon=case["epsilon"], epsilon_high=case["epsilon_high"],
                      per_device_train_batch_size=6, num_generations=2,
                      gradient_accumulation_steps=case["gradient_accumulation_steps"], report_to="none",
                      use_cpu=True, bf16=False)
    t = types.SimpleNamespace()
    t.args = args
    t.epsilon_low = args.epsilon
    t.epsilon_high = args.epsilon_high if args.epsilon_high is not None else args.epsilon
    t.accelerator = OneProcess()
    t.model = types.SimpleNamespace(training=True)
    t.aux_loss_enabled = False
    t._metrics = {"train": defaultdict(list), "eval": defaultdict(list)}
    t._get_per_token_logps_and_entropies = lambda *a, **k: (logps, entropies, None)
    return t


def main():
    data = json.load(open(sys.argv[1]))
    tensors = {k: torch.tensor(v, dtype=torch.float64) for k, v in data["tensors"].items()}
    out = {}
    for case in data["cases"]:
        logps = tensors["logps"].clone().requires_grad_(True)
        B, T = logps.shape
        inputs = {"prompt_ids": torch.zeros(B, 1, dtype=torch.long), "prompt_mask": torch.ones(B, 1, dtype=torch.long),
                  "completion_ids": torch.zeros(B, T, dtype=torch.long), "completion_mask": tensors["mask"].long(),
                  "advantages": tensors["advantages"] * case.get("advantage_scale", 1.0),
                  "num_items_in_batch": torch.tensor(case["num_items_in_batch"], dtype=torch.float64)}
        if case["old"]:
            inputs["old_per_token_logps"] = tensors["old_logps"]
        if case.get("beta", 0.0) != 0.0:
            inputs["ref_per_token_logps"] = tensors["ref_logps"]
        if case["trainer"] == "rloo":
            trainer = rloo_trainer_for(case, logps, tensors["entropies"])
            old = tensors["old_logps"] if case["old"] else logps.detach()
            inputs["old_logps"] = (old * tensors["mask"]).sum(1)
            loss = RLOOTrainer._compute_loss(trainer, None, inputs)
        else:
            trainer = trainer_for(case, logps, tensors["entropies"])
            loss = GRPOTrainer._compute_loss(trainer, None, inputs)
        loss.backward()
        metrics = {k: v[-1] for k, v in trainer._metrics["train"].items()}
        out[case["name"]] = {"loss": loss.item(), "grad": logps.grad.tolist(), "metrics": metrics}
    with open(sys.argv[2], "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
