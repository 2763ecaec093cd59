"""What the peers (peer_transformers.py, peer_dpo_train.py) share: reading shardtune's HDF5
pairs and padding them as TRL does, TRL's sigmoid DPO loss and the HF Trainer's update
(global-norm clipping at 1.0, optimizer step, gradients dropped)."""
import json
import os

import h5py
import torch
import torch.nn.functional as F
import transformers


def build_model(config, dtype, device):
    """transformers' model of `config` with SDPA attention, random init, built on `device`."""
    with torch.device(device):
        try:
            return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=dtype)
        except TypeError:  # transformers < 4.56 names it torch_dtype
            return transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa",
                                                                 torch_dtype=dtype)


def sigmoid_dpo_loss(logps, ref_logps, beta):
    """Rows are chosen then rejected; returns (mean loss over pairs, chosen rewards, rejected rewards)."""
    chosen, rejected = (logps - ref_logps).chunk(2)
    return -F.logsigmoid(beta * (chosen - rejected)).mean(), chosen, rejected


def update(loss, model, optimizer):
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def read_pairs(directory):
    """(prompt, chosen, rejected) id lists in manifest and file order (SFT shards: rejected empty)."""
    with open(os.path.join(directory, "manifest.json")) as handle:
        manifest = json.load(handle)
    pairs = []
    for shard in manifest["shards"]:
        with h5py.File(os.path.join(directory, shard["file"]), "r") as f:
            columns = {}
            for name in ("prompt", "chosen", "rejected"):
                if name not in f:
                    continue
                values, offsets = f[name][:], f[name + "_offsets"][:]
                columns[name] = [values[offsets[i]:offsets[i + 1]].tolist() for i in range(len(offsets) - 1)]
            columns.setdefault("rejected", [[] for _ in columns["prompt"]])
            pairs += list(zip(columns["prompt"], columns["chosen"], columns["rejected"]))
    return pairs, manifest


def collate(pairs, pad_id, stage="dpo", device="cuda"):
    """Rows prompt + chosen, then (dpo) prompt + rejected, right-padded to the longest row (no
    attention mask is needed: padding follows every real token); the completion span of each."""
    rows = [p + c for p, c, _ in pairs]
    spans = [(len(p), len(p) + len(c)) for p, c, _ in pairs]
    if stage == "dpo":
        rows += [p + r for p, _, r in pairs]
        spans += [(len(p), len(p) + len(r)) for p, _, r in pairs]
    longest = max(len(row) for row in rows)
    ids = torch.full((len(rows), longest), pad_id, dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, :len(row)] = torch.tensor(row)
    return ids.to(device), spans


def span_logps(logits, ids, spans):
    """Summed log-probs of ids[row, first:end] per row, predicted by logits[row, first - 1:end - 1]."""
    sums = []
    for row_logits, row_ids, (first, end) in zip(logits, ids, spans):
        predicted = row_logits[first - 1:end - 1].float()
        sums.append(torch.log_softmax(predicted, dim=-1).gather(1, row_ids[first:end, None]).sum())
    return torch.stack(sums)
