#!/usr/bin/env python3
"""TRL itself as the speed peer of `shardtune bench`: trl.DPOTrainer on the bench's own pairs.

The model is transformers' LlamaForCausalLM built from the config.json `shardtune bench` wrote
for its preset (random init, as the bench), fp32 master weights trained under bf16 autocast (the
Trainer's bf16=True: shardtune's numerics), SDPA attention, non-reentrant gradient checkpointing,
torch's fused AdamW, and a frozen bf16 copy as the reference model (run every step, as the bench's
online reference). TRL's own collator pads each micro-batch to its longest row; the pairs are drawn
in file order (the oracle tier's InOrderDPOTrainer). --liger: the Trainer's use_liger_kernel
(Liger's RMSNorm, RoPE and SwiGLU kernels; TRL 1.x keeps its own fused LM head for the log-probs).

It climbs the micro-batch ladder (--micro-batches) in one process, a fresh model and trainer per
rung, and stops at the first rung that runs out of memory or gains less than --min-gain over the
one below: the best rung is TRL's best micro-batch that fits. Per rung it prints logical tokens/s
(the attention masks' real tokens over the measured steps' time) and peak memory; then the best.

usage: trl_peer.py --config WORK/config.json --data WORK/data/train [--micro-batches 4,8,16,32,64,128]
                   [--steps 6 --warmup 2 --beta 0.1 --liger --min-gain 0.03 --device cuda|cpu]
--device cpu runs the same path in fp32 without memory figures: the dry run of the GPU plan.
"""
import argparse
import gc
import json
import os
import sys
import time

import datasets
import torch
import transformers

import trl

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "oracle"))
from peer_common import build_model, read_pairs  # noqa: E402
from trl_dpo import InOrderDPOTrainer, id_tokenizer  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="HF config.json of the shape (shardtune bench's WORK/config.json)")
    parser.add_argument("--data", required=True, help="the pairs: a shardtune dataset directory (manifest.json + shards)")
    parser.add_argument("--micro-batches", default="4,8,16,32,64,128", help="the ladder of pairs per step, climbed in order")
    parser.add_argument("--steps", type=int, default=6, help="measured steps per rung")
    parser.add_argument("--warmup", type=int, default=2, help="steps run first and not measured")
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--liger", action="store_true", help="the Trainer's use_liger_kernel")
    parser.add_argument("--min-gain", type=float, default=0.03, help="stop when a rung gains less than this over the last")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    return parser.parse_args()


class TimedSteps(transformers.TrainerCallback):
    """Each optimizer step's wall time, the device synchronised at both ends."""

    def __init__(self, device):
        self.sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self.times = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.sync()
        self.start = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        self.sync()
        self.times.append(time.perf_counter() - self.start)


class CountingDPOTrainer(InOrderDPOTrainer):
    """Counts the real tokens of every micro-batch it trains on (chosen and rejected rows, prompt
    in both: the logical tokens `shardtune bench` counts)."""

    def compute_loss(self, model, inputs, *args, **kwargs):
        self.step_tokens.append(inputs["attention_mask"].sum())
        return super().compute_loss(model, inputs, *args, **kwargs)


def run_rung(a, config, dataset, tokenizer, micro_batch):
    """One rung of the ladder: (logical tokens, seconds of the measured steps, peak GiB, GiB already
    held when it started: the models and nothing a previous rung left)."""
    on_gpu = a.device == "cuda"
    torch.manual_seed(0)
    policy = build_model(config, torch.float32, a.device)
    reference = build_model(config, torch.bfloat16 if on_gpu else torch.float32, a.device)
    reference.load_state_dict(policy.state_dict())
    args = trl.DPOConfig(
        output_dir="/tmp/trl_peer_work", max_steps=a.warmup + a.steps, per_device_train_batch_size=micro_batch,
        learning_rate=1e-5, lr_scheduler_type="constant", optim="adamw_torch_fused" if on_gpu else "adamw_torch",
        weight_decay=0.0, max_grad_norm=1.0, beta=a.beta, loss_type=["sigmoid"], max_length=None,
        gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False},
        bf16=on_gpu, use_cpu=not on_gpu, use_liger_kernel=a.liger, logging_steps=10**6, save_strategy="no",
        report_to=[], disable_tqdm=True, dataloader_drop_last=True, remove_unused_columns=False, seed=0, dataset_num_proc=None)
    timer = TimedSteps(a.device)
    trainer = CountingDPOTrainer(model=policy, ref_model=reference, args=args, train_dataset=dataset,
                                 processing_class=tokenizer, callbacks=[timer])
    trainer.step_tokens = []
    trainer.remove_callback(transformers.PrinterCallback)  # its end-of-training dict: not a figure here
    if on_gpu:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    held = torch.cuda.memory_allocated() / 2**30 if on_gpu else 0.0
    try:
        trainer.train()
        measured = slice(a.warmup, None)
        tokens = sum(int(t) for t in trainer.step_tokens[measured])
        seconds = sum(timer.times[measured])
        peak = torch.cuda.max_memory_allocated() / 2**30 if on_gpu else 0.0
        return tokens, seconds, peak, held
    finally:
        trainer.accelerator.free_memory()  # its references to the model, optimizer and loaders
        del trainer, policy, reference
        gc.collect()
        if on_gpu:
            torch.cuda.empty_cache()


def main():
    a = parse_args()
    if a.liger and a.device != "cuda":
        raise SystemExit("trl_peer: --liger needs a GPU (Liger's kernels are Triton)")
    with open(a.config) as handle:
        config = transformers.LlamaConfig(**json.load(handle))
    config.use_cache = False
    pairs = read_pairs(a.data)[0]
    ladder = [int(m) for m in a.micro_batches.split(",")]
    needed = ladder[-1] * (a.warmup + a.steps)
    # The pairs in file order, repeated to fill the largest rung's steps (one epoch: no reshuffle).
    rows = [pairs[i % len(pairs)] for i in range(needed)]
    dataset = datasets.Dataset.from_list([{"prompt_ids": p, "chosen_ids": c, "rejected_ids": r} for p, c, r in rows])
    tokenizer = id_tokenizer(config.vocab_size)
    setup = ("bf16 autocast over fp32 weights, sdpa, gradient checkpointing, fused AdamW, bf16 reference"
             + (", Liger kernels" if a.liger else "")) if a.device == "cuda" else "fp32 on the CPU (dry run)"
    print(f"trl_peer: trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}; "
          f"DPOTrainer sigmoid, {setup}; "
          f"{len(pairs)} pairs of {a.data}; {a.steps} steps after {a.warmup} warm-up per rung")
    best = None
    for micro_batch in ladder:
        try:
            tokens, seconds, peak, held = run_rung(a, config, dataset, tokenizer, micro_batch)
        except torch.cuda.OutOfMemoryError:
            print(f"  micro-batch {micro_batch:3d}  out of memory")
            break
        tokens_per_s = tokens / seconds
        print(f"  micro-batch {micro_batch:3d}  {tokens_per_s:10.1f} tokens/s  {peak:7.2f} GiB peak  "
              f"({tokens} logical tokens in {seconds:.3f} s; {held:.2f} GiB held at its start)")
        gained = best is None or tokens_per_s >= best[1] * (1 + a.min_gain)
        if best is None or tokens_per_s > best[1]:
            best = (micro_batch, tokens_per_s, peak)
        if not gained:
            break
    if best is None:
        raise SystemExit("trl_peer: no micro-batch fits")
    print(f"  best micro-batch {best[0]}")
    print(f"  tokens/s      {best[1]:.1f}")
    print(f"  peak memory   {best[2]:.2f} GiB")


if __name__ == "__main__":
    main()
