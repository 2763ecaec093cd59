"""transformers' Qwen3_5GatedDeltaNet forward and backward in fp32 on the CPU or the GPU (its torch
path: the FLA and causal-conv1d kernels are not installed), on bench_gated_delta's shape: the
baseline bench/gated_delta.sh prints beside it.
usage: gated_delta_peer.py TOKENS HIDDEN KEY_HEADS VALUE_HEADS HEAD_DIM REPS THREADS [DEVICE=cpu]"""
import sys
import time
import warnings

import torch
import transformers
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet

warnings.filterwarnings("ignore")
transformers.logging.set_verbosity_error()
tokens, hidden, key_heads, value_heads, head_dim, reps, threads = (int(a) for a in sys.argv[1:8])
device = sys.argv[8] if len(sys.argv) > 8 else "cpu"
torch.set_num_threads(threads)
torch.manual_seed(0)
config = transformers.Qwen3_5TextConfig(hidden_size=hidden, linear_num_key_heads=key_heads,
                                        linear_num_value_heads=value_heads, linear_key_head_dim=head_dim,
                                        linear_value_head_dim=head_dim)
layer = Qwen3_5GatedDeltaNet(config, 0).float().to(device)
x = torch.randn(1, tokens, hidden, device=device, requires_grad=True)
seconds = []
for rep in range(reps + 1):  # rep 0 warms up
    start = time.perf_counter()
    layer(x).sum().backward()
    x.grad.sum().item()  # a GPU's queue drained
    if rep:
        seconds.append(time.perf_counter() - start)
median = sorted(seconds)[len(seconds) // 2]
where = "GPU" if device == "cuda" else f"{threads} threads"
print(f"transformers Qwen3_5GatedDeltaNet fwd+bwd: {tokens} tokens, {where}: {median * 1e3:.1f} ms "
      f"({tokens / median:.0f} tokens/s), torch {torch.__version__}")
