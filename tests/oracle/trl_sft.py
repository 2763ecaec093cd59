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
import json

import datasets
import torch
import transformers

import hf_models
from torch.utils.data import SequentialSampler

import trl
from trl_dpo import StepLog, id_tokenizer, shared_config, training_arguments


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
    a = training_arguments("sequences").parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.sequences) as f:
        dataset = datasets.Dataset.from_list([example(json.loads(line)) for line in f if line.strip()])
    model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    config = trl.SFTConfig(packing=False, completion_only_loss=False, **shared_config(a))
    trainer = InOrderSFTTrainer(model=model, args=config, train_dataset=dataset,
                                processing_class=id_tokenizer(model.config.vocab_size), callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}: {a.steps} SFT steps written to {a.out}")


if __name__ == "__main__":
    main()
