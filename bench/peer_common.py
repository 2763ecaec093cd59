"""What the peers (peer_transformers.py, peer_dpo_train.py) share: TRL's sigmoid DPO loss and
the HF Trainer's update (global-norm clipping at 1.0, optimizer step, gradients dropped)."""
import torch
import torch.nn.functional as F


def sigmoid_dpo_loss(logps, ref_logps, beta):
    """Rows are chosen then rejected; returns (mean loss over pairs, chosen rewards, rejected rewards)."""
    chosen, rejected = (logps - ref_logps).chunk(2)
    return -F.logsigmoid(beta * (chosen - rejected)).mean(), chosen, rejected


def update(loss, model, optimizer):
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
