#!/usr/bin/env python3
"""The peer's side of bench/parity_dpo.sh: DPO training with transformers + plain torch on the
rows shardtune trains on (its HDF5 shards in file order, as data.shuffle = false reads them),
from the same initial weights (an HF directory), with the same recipe: bf16 autocast over fp32
weights, a frozen bf16 reference, TRL's sigmoid loss (mean over pairs), global-norm clipping,
AdamW with weight decay on matrices only, a constant learning rate. Prints, per step, the loss
and the reward accuracy, and the means over the last --window steps as
`peer: final loss X reward accuracy Y`.

usage: peer_dpo_train.py --model HF_DIR --data TRAIN_DIR --steps 200 --micro-batch 4 [--lr 5e-5]
"""
import argparse
import numpy as np
import torch
import transformers

from peer_common import collate, read_pairs, sigmoid_dpo_loss, span_logps, update


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--data", required=True, help="a shardtune dataset directory (manifest.json + shards)")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--micro-batch", type=int, default=4, help="pairs per step")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--beta", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--window", type=int, default=20)
    return parser.parse_args()


def main():
    args = parse_args()
    pairs, manifest = read_pairs(args.data)
    needed = args.steps * args.micro_batch
    if len(pairs) < needed:
        raise SystemExit(f"peer: {args.data} has {len(pairs)} pairs, {needed} needed")
    policy = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32,
                                                               attn_implementation="sdpa").cuda()
    reference = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.bfloat16,
                                                                  attn_implementation="sdpa").cuda()
    reference.eval().requires_grad_(False)
    policy.train()
    decayed = [p for p in policy.parameters() if p.dim() >= 2]
    other = [p for p in policy.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decayed, "weight_decay": args.weight_decay},
                                   {"params": other, "weight_decay": 0.0}], lr=args.lr, fused=True)
    pad_id = 0
    losses, accuracies = [], []
    for step in range(args.steps):
        ids, spans = collate(pairs[step * args.micro_batch:(step + 1) * args.micro_batch], pad_id)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logps = span_logps(policy(input_ids=ids).logits, ids, spans)
        with torch.no_grad():
            ref = span_logps(reference(input_ids=ids).logits, ids, spans)
        loss, chosen, rejected = sigmoid_dpo_loss(logps, ref, args.beta)
        update(loss, policy, optimizer)
        losses.append(loss.item())
        accuracies.append((chosen > rejected).float().mean().item())
        print(f"peer step {step + 1}: loss {losses[-1]:.5f} accuracy {accuracies[-1]:.3f}", flush=True)
    window = slice(-args.window, None)
    print(f"peer: final loss {np.mean(losses[window]):.5f} reward accuracy {np.mean(accuracies[window]):.4f} "
          f"(means of the last {args.window} steps; transformers {transformers.__version__}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
