#!/usr/bin/env python3
"""TRL itself as the speed peer of `shardtune train --train.stage grpo` (bench/vs_trl_grpo.sh):
trl.GRPOTrainer on the same prompts, generating with transformers' generate (its default path:
no vLLM), for one model shape.

The model is transformers' LlamaForCausalLM built from a config.json (random init), fp32 master
weights under bf16 autocast (the Trainer's bf16=True), SDPA attention, non-reentrant gradient
checkpointing, torch's fused AdamW, beta 0 (TRL's default: no reference model). The prompts are
token ids (a word-level tokenizer of "t<id>" words feeds them through TRL's own tokenisation);
the reward is TRL's get_soft_overlong_punishment on the completion ids. Per measured step it
prints the step's seconds, its phases (generation: `_generate`; rewards: `_calculate_rewards`;
the rest of `_generate_and_score_completions`: old log-probs and bookkeeping; training: the
step less all of that), tokens (prompt + completion of every completion) per second and the peak
memory.

usage: trl_grpo_peer.py --config config.json --prompts prompts.jsonl [--prompts-per-step 16]
                        [--num-generations 8] [--completion 512] [--micro-batch 16]
                        [--steps 3 --warmup 1] [--device cuda|cpu]
--device cpu runs the same path in fp32 without memory figures: the dry run of the GPU plan.
"""
import argparse
import json
import time

import datasets
import torch
import transformers
from tokenizers import Tokenizer, models, pre_tokenizers

import trl
from trl.rewards import get_soft_overlong_punishment

from peer_common import build_model


def word_tokenizer(vocab_size):
    """Words t0..t{vocab-1} (pad t0, BOS t1, EOS t2, as shardtune synth's ids), split at spaces."""
    tokenizer = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab_size)}, unk_token="t0"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="t0", bos_token="t1",
                                                eos_token="t2")


class Phases:
    """Seconds spent in the trainer's methods, per optimizer step (the device synchronised)."""

    def __init__(self, trainer, device, names):
        self.sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        self.current = {name: 0.0 for name in names}
        for name in names:
            method = getattr(trainer, name)

            def timed(*args, _method=method, _name=name, **kwargs):
                self.sync()
                start = time.perf_counter()
                result = _method(*args, **kwargs)
                self.sync()
                self.current[_name] += time.perf_counter() - start
                return result

            setattr(trainer, name, timed)


class StepTimes(transformers.TrainerCallback):
    def __init__(self, phases):
        self.phases = phases
        self.steps = []

    def on_step_begin(self, args, state, control, **kwargs):
        self.phases.sync()
        self.start = time.perf_counter()
        for name in self.phases.current:
            self.phases.current[name] = 0.0

    def on_step_end(self, args, state, control, **kwargs):
        self.phases.sync()
        self.steps.append((time.perf_counter() - self.start, dict(self.phases.current)))


class CountingRewards:
    """get_soft_overlong_punishment, counting the tokens of every completion it scores."""

    def __init__(self, limit, cache):
        self.function = get_soft_overlong_punishment(limit, cache)
        self.__name__ = self.function.__name__
        self.completion_tokens = []

    def __call__(self, completion_ids, **kwargs):
        self.completion_tokens.append(sum(len(ids) for ids in completion_ids))
        return self.function(completion_ids=completion_ids, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--prompts", required=True, help="JSONL of {\"prompt_ids\": [...]} (shardtune synth --jsonl)")
    parser.add_argument("--prompts-per-step", type=int, default=16)
    parser.add_argument("--num-generations", type=int, default=8)
    parser.add_argument("--completion", type=int, default=512)
    parser.add_argument("--micro-batch", type=int, default=16, help="completions per training micro-batch")
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    a = parser.parse_args()
    on_gpu = a.device == "cuda"
    with open(a.config) as handle:
        config = transformers.LlamaConfig(**json.load(handle))
    with open(a.prompts) as handle:
        prompts = [json.loads(line)["prompt_ids"] for line in handle if line.strip()]
    completions = a.prompts_per_step * a.num_generations
    if completions % a.micro_batch:
        raise SystemExit(f"trl_grpo_peer: {completions} completions per step is no multiple of --micro-batch")
    rows = [prompts[i % len(prompts)] for i in range(a.prompts_per_step * (a.warmup + a.steps))]
    # Each measured step's prompt tokens, once per completion.
    prompt_tokens = sum(len(p) for p in rows[a.prompts_per_step * a.warmup:]) * a.num_generations
    dataset = datasets.Dataset.from_list([{"prompt": " ".join(f"t{i}" for i in p)} for p in rows])
    torch.manual_seed(0)
    model = build_model(config, torch.float32, a.device)
    reward = CountingRewards(a.completion, a.completion // 4)
    args = trl.GRPOConfig(
        output_dir="/tmp/trl_grpo_peer_work", max_steps=a.warmup + a.steps, per_device_train_batch_size=a.micro_batch,
        gradient_accumulation_steps=completions // a.micro_batch, num_generations=a.num_generations,
        max_completion_length=a.completion, temperature=1.0, beta=0.0, learning_rate=1e-6,
        lr_scheduler_type="constant", optim="adamw_torch_fused" if on_gpu else "adamw_torch", weight_decay=0.0,
        gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": False}, bf16=on_gpu,
        use_cpu=not on_gpu, logging_steps=10**6, save_strategy="no", report_to=[], disable_tqdm=True,
        shuffle_dataset=False, seed=0)
    trainer = trl.GRPOTrainer(model=model, reward_funcs=[reward], args=args, train_dataset=dataset,
                              processing_class=word_tokenizer(config.vocab_size))
    phases = Phases(trainer, a.device, ["_generate", "_calculate_rewards", "_generate_and_score_completions"])
    times = StepTimes(phases)
    trainer.add_callback(times)
    trainer.remove_callback(transformers.PrinterCallback)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    trainer.train()
    peak = torch.cuda.max_memory_allocated() / 2**30 if on_gpu else 0.0
    measured = times.steps[a.warmup:]
    step = sum(s for s, _ in measured) / len(measured)
    phase = {name: sum(p[name] for _, p in measured) / len(measured) for name in phases.current}
    tokens = (sum(reward.completion_tokens[a.warmup:]) + prompt_tokens) / a.steps
    print(f"trl_grpo_peer: trl {trl.__version__}, transformers {transformers.__version__}, torch {torch.__version__}; "
          f"{a.prompts_per_step} prompts x {a.num_generations} generations, completion <= {a.completion}, "
          f"micro-batch {a.micro_batch}; {a.steps} steps after {a.warmup} warm-up")
    print(f"  step time         {step:.3f} s")
    print(f"  rollout           {phase['_generate']:.3f} s")
    print(f"  reward            {phase['_calculate_rewards']:.3f} s")
    other = phase["_generate_and_score_completions"] - phase["_generate"] - phase["_calculate_rewards"]
    print(f"  old logps         {other:.3f} s")
    print(f"  train             {step - phase['_generate_and_score_completions']:.3f} s")
    print(f"  tokens/s          {tokens / step:.1f}")
    print(f"  peak memory       {peak:.2f} GiB")


if __name__ == "__main__":
    main()
