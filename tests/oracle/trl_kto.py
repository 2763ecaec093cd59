"""TRL's own KTOTrainer on the CPU in fp32, as the oracle of `shardtune train --train.stage kto`:
trains MODEL_DIR on the unpaired examples of EXAMPLES.jsonl ({"prompt_ids", "completion_ids",
"label"} per line, the ids shardtune's prep reads too) in file order, and writes TRL's per-step log
(loss, grad_norm, learning_rate, kl, rewards/*, logps/*) as one JSON line per optimizer step.

usage: trl_kto.py MODEL_DIR EXAMPLES.jsonl OUT.jsonl --steps N --micro-batch B --grad-accum A --lr LR
           --beta BETA --desirable-weight W --undesirable-weight W --weight-decay WD --warmup-steps S
           --schedule NAME --grad-clip C

As trl_dpo.py: the ids as given (TRL's tokenization is skipped), torch's AdamW, file order. KTO's
mismatched pairs are TRL's own rule, applied here where its dataset preparation would: within
each run of B examples in file order, example i takes example i-1's completion (the first the
last's), B being the per-device batch.
"""
import json

import datasets
import torch
import transformers

import hf_models

import trl
from trl_dpo import StepLog, id_tokenizer, shared_config, training_arguments


class IdsKTOTrainer(trl.KTOTrainer):
    """KTOTrainer on token ids: only the mismatched completions are added, as TRL adds them."""

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        def add_kl_completion_ids(examples):
            examples["KL_completion_ids"] = [examples["completion_ids"][-1]] + examples["completion_ids"][:-1]
            return examples

        return dataset.map(add_kl_completion_ids, batched=True, batch_size=args.per_device_train_batch_size)


def main():
    parser = training_arguments("examples")
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--desirable-weight", type=float, default=1.0)
    parser.add_argument("--undesirable-weight", type=float, default=1.0)
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.examples) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    dataset = datasets.Dataset.from_list(
        [{"prompt_ids": r["prompt_ids"], "completion_ids": r["completion_ids"], "label": r["label"]} for r in rows])
    model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    ref_model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    config = trl.KTOConfig(beta=a.beta, desirable_weight=a.desirable_weight, undesirable_weight=a.undesirable_weight,
                           train_sampling_strategy="sequential", **shared_config(a))
    trainer = IdsKTOTrainer(model=model, ref_model=ref_model, args=config, train_dataset=dataset,
                            processing_class=id_tokenizer(model.config.vocab_size), callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}: "
          f"{a.steps} KTO steps written to {a.out}")


if __name__ == "__main__":
    main()
