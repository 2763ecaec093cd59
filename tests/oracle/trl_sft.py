"""TRL's own SFTTrainer on the CPU in fp32, as the oracle of `shardtune train --train.stage sft`:
trains MODEL_DIR on SEQUENCES.jsonl ({"prompt_ids", "completion_ids"[, "loss_mask"]} per line:
the loss on completion tokens only, or on those the mask marks - multi-turn SFT) in file order,
and writes TRL's per-step log (loss, grad_norm, learning_rate) as one JSON line per step. The
loss is transformers' token-normalised one: the step's summed NLL over the number of trained
tokens of the whole step (`num_items_in_batch`), across its accumulation micro-batches.

usage: trl_sft.py MODEL_DIR SEQUENCES.jsonl OUT.jsonl --steps N --micro-batch B --grad-accum A
           --lr LR --weight-decay WD --warmup-steps S --schedule NAME --grad-clip C

As in trl_dpo.py: a sequential sampler (shardtune's --data.shuffle=false), the ids as given
(labels -100 where no loss), torch's AdamW.
"""
import argparse
import json

import datasets
import torch
import transformers
from torch.utils.data import SequentialSampler

import trl
from trl_dpo import StepLog, id_tokenizer


class InOrderSFTTrainer(trl.SFTTrainer):
    """SFTTrainer that takes token ids and labels as given and draws sequences in file order."""

    def _prepare_dataset(self, dataset, *args, **kwargs):
        return dataset

    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def example(row):
    mask = row.get("loss_mask", [1] * len(row["completion_ids"]))
    ids = row["prompt_ids"] + row["completion_ids"]
    labels = [-100] * len(row["prompt_ids"]) + [t if m else -100 for t, m in zip(row["completion_ids"], mask)]
    return {"input_ids": ids, "labels": labels}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("sequences")
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, required=True)
    parser.add_argument("--micro-batch", type=int, default=2)
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--warmup-steps", type=int, default=0)
    parser.add_argument("--schedule", default="cosine")
    parser.add_argument("--grad-clip", type=float, default=1.0)
    parser.add_argument("--float64", action="store_true", help="the whole run in float64 (the judge of fp32 noise)")
    parser.add_argument("--work", default="/tmp/trl_sft_work")
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.sequences) as f:
        dataset = datasets.Dataset.from_list([example(json.loads(line)) for line in f if line.strip()])
    model = transformers.AutoModelForCausalLM.from_pretrained(a.model_dir, dtype=dtype)
    config = trl.SFTConfig(
        output_dir=a.work, max_steps=a.steps, per_device_train_batch_size=a.micro_batch,
        gradient_accumulation_steps=a.grad_accum, learning_rate=a.lr, weight_decay=a.weight_decay,
        warmup_steps=a.warmup_steps, lr_scheduler_type=a.schedule, max_grad_norm=a.grad_clip, optim="adamw_torch",
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, bf16=False, fp16=False, max_length=None, dataloader_drop_last=True, seed=42, packing=False,
        completion_only_loss=False, dataset_num_proc=None, remove_unused_columns=False)
    trainer = InOrderSFTTrainer(model=model, args=config, train_dataset=dataset,
                                processing_class=id_tokenizer(model.config.vocab_size), callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}: {a.steps} SFT steps written to {a.out}")


if __name__ == "__main__":
    main()
