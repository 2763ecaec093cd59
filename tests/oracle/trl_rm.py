"""TRL's own RewardTrainer on the CPU in fp32, as the oracle of `shardtune train --train.stage rm`:
trains the reward model MODEL_DIR (a *ForSequenceClassification export with num_labels 1, so both
start from the same score head) on the pairs of PAIRS.jsonl ({"prompt_ids", "chosen_ids",
"rejected_ids"} per line, and "margin" if they have one) in file order, and writes TRL's per-step log as one JSON line per
optimizer step: loss, grad_norm, learning_rate, and its accuracy and margin under shardtune's
names (rewards/accuracies, rewards/margins).

usage: trl_rm.py MODEL_DIR PAIRS.jsonl OUT.jsonl --steps N --micro-batch B --grad-accum A --lr LR
           --weight-decay WD --warmup-steps S --schedule NAME --grad-clip C [--center C]
           [--adapter PEFT_DIR]   (LoRA: MODEL_DIR is the causal LM, read as a sequence classifier;
                                   PEFT_DIR's adapters and saved score are trained on it)

As trl_dpo.py: the ids as given (RewardTrainer's tokenization and EOS appending are skipped:
its processed columns are prompt + completion), torch's AdamW, file order, pad id 0.
"""
import json

import datasets
import torch
import transformers
from torch.utils.data import SequentialSampler

import trl
from trl_dpo import id_tokenizer, shared_config, training_arguments

RENAMED = {"accuracy": "rewards/accuracies", "margin": "rewards/margins"}


class InOrderRewardTrainer(trl.RewardTrainer):
    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


class RewardStepLog(transformers.TrainerCallback):
    def __init__(self, path):
        self.out = open(path, "w")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            record = {RENAMED.get(key, key): value for key, value in logs.items()}
            self.out.write(json.dumps({"step": state.global_step, **record}) + "\n")
            self.out.flush()


def main():
    parser = training_arguments("pairs")
    parser.add_argument("--center", type=float, default=None)
    parser.add_argument("--adapter")
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.pairs) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    # A pair's "margin", when the pairs carry one, is RewardTrainer's margin column.
    dataset = datasets.Dataset.from_list([{"chosen_ids": r["prompt_ids"] + r["chosen_ids"],
                                           "rejected_ids": r["prompt_ids"] + r["rejected_ids"],
                                           **({"margin": r["margin"]} if "margin" in r else {})} for r in rows])
    if a.adapter:
        import peft
        base = transformers.AutoModelForSequenceClassification.from_pretrained(a.model_dir, dtype=dtype, num_labels=1,
                                                                              pad_token_id=0)
        model = peft.PeftModel.from_pretrained(base, a.adapter, is_trainable=True)
    else:
        model = transformers.AutoModelForSequenceClassification.from_pretrained(a.model_dir, dtype=dtype)
    assert model.config.num_labels == 1 and model.config.pad_token_id == 0, model.config
    config = trl.RewardConfig(center_rewards_coefficient=a.center, **shared_config(a))
    trainer = InOrderRewardTrainer(model=model, args=config, train_dataset=dataset,
                                   processing_class=id_tokenizer(model.config.vocab_size),
                                   callbacks=[RewardStepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}: "
          f"{a.steps} reward-model steps written to {a.out}")


if __name__ == "__main__":
    main()
