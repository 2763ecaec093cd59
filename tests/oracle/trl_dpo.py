"""TRL's own preference trainers on the CPU in fp32, as the oracle of `shardtune train --train.stage
dpo`: trains MODEL_DIR on the pairs of PAIRS.jsonl ({"prompt_ids", "chosen_ids", "rejected_ids"}
per line, the token ids shardtune's prep reads too), in file order, and writes TRL's per-step log
(loss, grad_norm, learning_rate, rewards/*, logps/*) as one JSON line per optimizer step.
--loss picks the trainer: sigmoid, hinge, ipo and sigmoid+sft (the DPO loss plus --sft-weight x
TRL's "sft" term) are DPOTrainer's; simpo is CPOTrainer's (loss_type "simpo", cpo_alpha 0: no
NLL term) and orpo ORPOTrainer's, both in trl.experimental since TRL 1.0.

usage: trl_dpo.py MODEL_DIR PAIRS.jsonl OUT.jsonl --steps N --micro-batch B --grad-accum A
           --lr LR --beta BETA --loss sigmoid|hinge|ipo|sigmoid+sft|simpo|orpo --sft-weight W
           --simpo-gamma G --weight-decay WD --warmup-steps S --schedule cosine|linear|constant
           --grad-clip C
           [--adapter PEFT_DIR]   (LoRA: train this PEFT adapter on the model; the reference is the
                                   model with adapters off, TRL's way for a PEFT model)

What is fixed to match shardtune rather than TRL's defaults, and why:
- the order: TRL (transformers' Trainer) shuffles with its seed; here a sequential sampler, as
  shardtune's `--data.shuffle=false` (manifest order), so both see the same pairs each step;
- the ids: the dataset is already tokenized, so TRL's own tokenization (tested elsewhere: the
  tokenizer and chat-template oracles) is skipped;
- the optimizer: torch's AdamW (transformers' `adamw_torch`), no dropout (the models have none).
"""
import argparse
import json

import datasets
import torch
import transformers

import hf_models
from torch.utils.data import SequentialSampler

import trl


class InOrderDPOTrainer(trl.DPOTrainer):
    """DPOTrainer that takes token ids as given and draws pairs in file order."""

    def _prepare_dataset(self, dataset, processing_class, args, dataset_name):
        return dataset

    def _get_train_sampler(self, *args, **kwargs):
        return SequentialSampler(self.train_dataset)


def in_order_legacy(trainer_class):
    """CPOTrainer / ORPOTrainer (TRL's older pipeline) taking rows already in their tokenized
    layout (legacy_rows) and drawing them in file order."""

    class InOrder(trainer_class):
        def tokenize_row(self, feature, model=None):
            return feature

        def _get_train_sampler(self, *args, **kwargs):
            return SequentialSampler(self.train_dataset)

    return InOrder


def legacy_rows(rows):
    """The rows as CPO's and ORPO's tokenize_row would leave them: prompt + completion ids, the
    prompt's labels -100."""
    out = []
    for r in rows:
        prompt = r["prompt_ids"]
        row = {"prompt_input_ids": prompt, "prompt_attention_mask": [1] * len(prompt)}
        for side in ("chosen", "rejected"):
            ids = prompt + r[f"{side}_ids"]
            row[f"{side}_input_ids"] = ids
            row[f"{side}_attention_mask"] = [1] * len(ids)
            row[f"{side}_labels"] = [-100] * len(prompt) + r[f"{side}_ids"]
        out.append(row)
    return out


def id_tokenizer(vocab_size):
    """A tokenizer of tokens t0..t{vocab-1} (pad t0, BOS t1, EOS t2, as shardtune synth's ids): TRL
    wants one for its padding id, and the data is ids already."""
    from tokenizers import Tokenizer, models
    vocab = {f"t{i}": i for i in range(vocab_size)}
    return transformers.PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="t0")),
                                                pad_token="t0", bos_token="t1", eos_token="t2")


def training_arguments(data_name):
    """The command line both TRL oracles share: model, data, log, and the hyperparameters."""
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument(data_name)
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
    parser.add_argument("--router-aux-loss-coef", type=float,
                        help="a mixture-of-experts model's router loss coefficient (default: the model's)")
    parser.add_argument("--work", default="/tmp/trl_oracle_work")
    return parser


def shared_config(a):
    """TrainingArguments both trainers take alike: torch's AdamW, one log per step, CPU, no saves."""
    return dict(
        output_dir=a.work, max_steps=a.steps, per_device_train_batch_size=a.micro_batch,
        gradient_accumulation_steps=a.grad_accum, learning_rate=a.lr, weight_decay=a.weight_decay,
        warmup_steps=a.warmup_steps, lr_scheduler_type=a.schedule, max_grad_norm=a.grad_clip, optim="adamw_torch",
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, logging_steps=1, save_strategy="no", report_to=[],
        use_cpu=True, bf16=False, fp16=False, max_length=None, dataloader_drop_last=True, seed=42,
        dataset_num_proc=None, remove_unused_columns=False,
        **({} if a.router_aux_loss_coef is None else {"router_aux_loss_coef": a.router_aux_loss_coef}))


class StepLog(transformers.TrainerCallback):
    def __init__(self, path):
        self.out = open(path, "w")

    def on_log(self, args, state, control, logs=None, **kwargs):
        if logs and "loss" in logs:
            self.out.write(json.dumps({"step": state.global_step, **logs}) + "\n")
            self.out.flush()


def main():
    parser = training_arguments("pairs")
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--loss", default="sigmoid")
    parser.add_argument("--sft-weight", type=float, default=1.0)
    parser.add_argument("--simpo-gamma", type=float, default=0.5)
    parser.add_argument("--adapter")
    a = parser.parse_args()

    dtype = torch.float64 if a.float64 else torch.float32
    with open(a.pairs) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    tokenizer = id_tokenizer(model.config.vocab_size)
    if a.loss in ("simpo", "orpo"):
        from trl.experimental.cpo import CPOConfig, CPOTrainer
        from trl.experimental.orpo import ORPOConfig, ORPOTrainer
        if a.loss == "simpo":
            trainer_class, config = CPOTrainer, CPOConfig(beta=a.beta, loss_type="simpo", cpo_alpha=0.0,
                                                          simpo_gamma=a.simpo_gamma, **shared_config(a))
        else:
            trainer_class, config = ORPOTrainer, ORPOConfig(beta=a.beta, **shared_config(a))
        trainer = in_order_legacy(trainer_class)(model=model, args=config,
                                                 train_dataset=datasets.Dataset.from_list(legacy_rows(rows)),
                                                 processing_class=tokenizer, callbacks=[StepLog(a.out)])
        trainer.train()
        print(f"trl {trl.__version__}: {a.steps} {trainer_class.__name__} steps ({a.loss}) written to {a.out}")
        return
    dataset = datasets.Dataset.from_list(
        [{"prompt_ids": r["prompt_ids"], "chosen_ids": r["chosen_ids"], "rejected_ids": r["rejected_ids"]} for r in rows])
    ref_model = hf_models.load(transformers.AutoModelForCausalLM, a.model_dir, dtype)
    if a.adapter:
        import peft
        model = peft.PeftModel.from_pretrained(model, a.adapter, is_trainable=True)
        ref_model = None
    loss_types = a.loss.split("+")
    config = trl.DPOConfig(
        beta=a.beta, loss_type=loss_types,
        loss_weights=[1.0 if t != "sft" else a.sft_weight for t in loss_types] if len(loss_types) > 1 else None,
        **shared_config(a))
    trainer = InOrderDPOTrainer(model=model, ref_model=ref_model, args=config, train_dataset=dataset,
                                processing_class=tokenizer, callbacks=[StepLog(a.out)])
    trainer.train()
    print(f"trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}: "
          f"{a.steps} DPO steps ({a.loss}) written to {a.out}")


if __name__ == "__main__":
    main()
