#!/usr/bin/env python3
"""The peer of `shardtune bench`: the stack users run today, on the same model shape and batch.

transformers' LlamaForCausalLM built from the config.json that `shardtune bench` wrote for its
preset, fp32 weights with bf16 autocast (HF Trainer's bf16=True), SDPA attention, non-reentrant
gradient checkpointing, torch's fused AdamW, and for DPO TRL's sigmoid loss with a frozen bf16
reference model run in the same step (chosen and rejected rows in one concatenated forward).
Rows have the length of the bench's synthetic rows. Prints the same figures as the bench;
bench/vs_peer.sh runs both and prints the ratios. The ladder of peers (--level):
  P0  as above (full-vocabulary logits at every position)
  P1  P0 with logits only where there are targets (transformers' logits_to_keep)
  P2  P1 with torch.compile of each decoder layer
With --lora-r R: the LoRA peer (peft.get_peft_model on a bf16 base, lora_alpha 2R, no dropout,
--lora-targets as PEFT module names, gradient checkpointing with input grads, AdamW over the
adapters); the DPO reference is the base with the adapters disabled, as TRL does for PEFT models.

usage: peer_transformers.py --config WORK/config.json [--seq 2048 --micro-batch 1 --stage dpo
                            --steps 20 --warmup 3 --level P0]
"""
import argparse
import json
import statistics
import sys
import time

import torch
import transformers

from peer_common import build_model, collate, read_pairs, sigmoid_dpo_loss, span_logps, update


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="HF config.json of the shape")
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--micro-batch", type=int, default=1, help="pairs (dpo) or sequences (sft) per step")
    parser.add_argument("--stage", choices=["dpo", "sft"], default="dpo")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--level", choices=["P0", "P1", "P2"], default="P0", help="the peer ladder (see above)")
    parser.add_argument("--data", help="real lengths: the pairs of a shardtune dataset (e.g. WORK/data/train), "
                        "micro-batches padded to their longest row (P0 only)")
    parser.add_argument("--profile", help="profile the measured steps: DIR/trace.json and the top-20 kernels")
    parser.add_argument("--lora-r", type=int, default=0, help="> 0: train LoRA adapters of this rank (peft)")
    parser.add_argument("--lora-targets", default="q_proj,k_proj,v_proj,o_proj", help="PEFT target_modules")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                        help="cpu: the same steps in fp32 without memory figures (the dry run of the GPU plan)")
    return parser.parse_args()


def completion_logps(logits, ids, first_target, first_logit):
    """Summed log-probs of ids[:, first_target:], a row at a time (as TRL's selective_log_softmax
    does for bf16 logits) so no [rows, tokens, vocab] fp32 copy is made. logits[:, first_logit - 1]
    predicts ids[:, first_target] (first_logit = first_target when every position has logits)."""
    sums = []
    for row_logits, row_ids in zip(logits, ids):
        predicted = row_logits[first_logit - 1:-1].float()
        sums.append(torch.log_softmax(predicted, dim=-1).gather(1, row_ids[first_target:, None]).sum())
    return torch.stack(sums)


def main():
    args = parse_args()
    with open(args.config) as handle:
        config = transformers.LlamaConfig(**json.load(handle))
    config.use_cache = False
    torch.manual_seed(0)
    on_gpu = args.device == "cuda"
    low_precision = torch.bfloat16 if on_gpu else torch.float32  # the CPU dry run keeps fp32 throughout
    policy = build_model(config, low_precision if args.lora_r else torch.float32, args.device)
    policy.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if args.lora_r:
        import peft

        policy.enable_input_require_grads()
        policy = peft.get_peft_model(policy, peft.LoraConfig(r=args.lora_r, lora_alpha=2 * args.lora_r, lora_dropout=0.0,
                                                             target_modules=args.lora_targets.split(","),
                                                             task_type="CAUSAL_LM"))
    policy.train()
    if args.level == "P2":
        for layer in (policy.base_model.model if args.lora_r else policy).model.layers:
            layer.compile()
    reference = None
    if args.stage == "dpo" and not args.lora_r:
        reference = build_model(config, low_precision, args.device)
        reference.load_state_dict(policy.state_dict())
        reference.eval().requires_grad_(False)
    trained = [parameter for parameter in policy.parameters() if parameter.requires_grad]
    optimizer = torch.optim.AdamW(trained, lr=1e-5, weight_decay=0.0, fused=on_gpu)

    # The bench's synthetic rows: BOS + prompt, completion + EOS, prompt and completion alike.
    half = (args.seq - 3) // 2
    row_tokens, first_target = 2 + 2 * half, 1 + half
    rows = args.micro_batch * (2 if args.stage == "dpo" else 1)
    generator = torch.Generator(device=args.device).manual_seed(1)
    if on_gpu:
        torch.cuda.reset_peak_memory_stats()
    sync = torch.cuda.synchronize if on_gpu else (lambda: None)

    def autocast():
        return torch.autocast(args.device, dtype=torch.bfloat16, enabled=on_gpu)

    # P1/P2: logits only from the last prompt token on (the positions that predict a target).
    keep = row_tokens - first_target + 1 if args.level != "P0" else 0
    first_logit = first_target if keep == 0 else 1  # where completion_logps starts in the kept logits

    def forward(model, ids):
        return model(input_ids=ids, logits_to_keep=keep).logits if keep else model(input_ids=ids).logits

    pairs = read_pairs(args.data)[0] if args.data else None
    if pairs is not None and args.level != "P0":
        raise SystemExit("peer: --data runs the P0 peer only")

    def row_logps(logits, ids, spans):
        return span_logps(logits, ids, spans) if spans else completion_logps(logits, ids, first_target, first_logit)

    def step(index):
        """One optimizer step; returns the real (unpadded) tokens it trained on."""
        spans = None
        if pairs is None:
            ids = torch.randint(3, config.vocab_size, (rows, row_tokens), device=args.device, generator=generator)
            real_tokens, completion_tokens = rows * row_tokens, rows * (row_tokens - first_target)
        else:
            first = index * args.micro_batch
            ids, spans = collate([pairs[(first + i) % len(pairs)] for i in range(args.micro_batch)], 0, args.stage,
                                 args.device)
            real_tokens = sum(end for _, end in spans)
            completion_tokens = sum(end - begin for begin, end in spans)
        with autocast():
            logits = forward(policy, ids)
        logps = row_logps(logits, ids, spans)
        if args.stage == "sft":
            loss = -logps.sum() / completion_tokens
        else:
            with torch.no_grad():
                if reference is None:  # LoRA: the base with the adapters off
                    with policy.disable_adapter(), autocast():
                        ref_logits = forward(policy, ids)
                else:
                    ref_logits = forward(reference, ids)
                ref_logps = row_logps(ref_logits, ids, spans)
            loss = sigmoid_dpo_loss(logps, ref_logps, args.beta)[0]
        update(loss, policy, optimizer)
        return real_tokens

    times, tokens = [], []
    profiler = None
    for index in range(args.warmup + args.steps):
        if args.profile and index == args.warmup:
            profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                          torch.profiler.ProfilerActivity.CUDA])
            profiler.__enter__()
        sync()
        start = time.perf_counter()
        real_tokens = step(index)
        sync()
        if index >= args.warmup:
            times.append(time.perf_counter() - start)
            tokens.append(real_tokens)
    if profiler:
        profiler.__exit__(None, None, None)
    step_s = statistics.median(times)
    lora = f", peft LoRA r {args.lora_r} on {args.lora_targets}" if args.lora_r else ""
    print(f"peer {args.level}: transformers {transformers.__version__} (torch {torch.__version__}) {args.stage}{lora}, seq {args.seq}, "
          f"micro-batch {args.micro_batch}, {'bf16 autocast' if on_gpu else 'fp32 on the CPU (dry run)'}, sdpa, "
          f"gradient checkpointing, {'fused ' if on_gpu else ''}AdamW; "
          f"median of {len(times)} steps after {args.warmup} warm-up")
    print(f"  step time     {step_s:.4f} s")
    if pairs is None:
        print(f"  tokens/s      {rows * row_tokens / step_s:.1f}")
    else:  # logical tokens: the real ones of the measured steps, over their time
        print(f"  tokens/s      {sum(tokens) / sum(times):.1f}")
        print(f"  data          {args.data}, rows padded to the longest of each micro-batch")
    print(f"  peak memory   {torch.cuda.max_memory_allocated() / 2**30 if on_gpu else 0.0:.2f} GiB")
    if profiler:
        print_top_kernels(profiler, args.profile, 20)


def print_top_kernels(profiler, directory, rows):
    """The table `shardtune bench --profile` prints: GPU kernels by total time."""
    import os
    os.makedirs(directory, exist_ok=True)
    profiler.export_chrome_trace(os.path.join(directory, "trace.json"))
    totals = {}
    for event in profiler.events():
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        duration = getattr(event, "device_time", None)
        if duration is None:
            duration = event.cuda_time
        total, calls = totals.get(event.name, (0.0, 0))
        totals[event.name] = (total + duration, calls + 1)
    everything = sum(total for total, _ in totals.values()) or 1.0
    print(f"  top GPU kernels by total time ({directory}/trace.json):")
    for name, (total, calls) in sorted(totals.items(), key=lambda item: -item[1][0])[:rows]:
        print(f"    {100 * total / everything:5.1f}% {total / 1000:10.3f} ms {calls:6d}  {name[:120]}")


if __name__ == "__main__":
    try:
        main()
    except torch.cuda.OutOfMemoryError as error:
        print(f"peer: out of GPU memory ({str(error).splitlines()[0]})")
        sys.exit(3)
