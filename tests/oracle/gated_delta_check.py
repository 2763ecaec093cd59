"""Gated DeltaNet's token mixer (lib/model/gated_delta_mixer.h, through gated_delta_outputs)
against transformers' own Qwen3_5GatedDeltaNet (no cache: its chunked path), on a tiny random
layer with more value heads than key heads and non-trivial A_log, dt_bias and gated-norm
weights, at lengths around and across the 64-token chunk (1, 63, 64, 65, 150), 2 rows each.
float64: shardtune's output equals transformers' to 1e-10 relative, transformers' own code run
with its fp32 casts made float64 (float64_copy; unpatched it computes the rule, the decay and the
gated norm in fp32 even for float64 inputs); measured about 1e-15: float64 rounding.
fp32: judged by that float64 output, within 1e-4 of the output's scale: fp32's unit roundoff
(6e-8) over the longest dependent chain (150 tokens scanned, 8-term sums, the gated norm's
1/rms amplifying up to about 10 here) is about 1e-4. Measured at most 4e-6 under OpenBLAS
(shardtune) and under PyTorch's BLAS (transformers' fp32, printed beside): 25x margin. The two
fp32 errors differ by up to 4x at one length: the same chunked algorithm run under PyTorch
gives transformers' error exactly, so the spread is the BLAS's summation order.
Prints the figures; exits 1 on a difference.

usage: gated_delta_check.py GATED_DELTA_OUTPUTS WORK_DIR
"""
import inspect
import os
import subprocess
import sys
import textwrap

import torch
from safetensors.torch import load_file, save_file
from transformers import Qwen3_5TextConfig
from transformers.models.qwen3_5 import modeling_qwen3_5 as modeling
from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5GatedDeltaNet

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402

binary, work = sys.argv[1:3]
os.makedirs(work, exist_ok=True)
LENGTHS = [1, 63, 64, 65, 150]
shape = dict(hidden_size=32, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
             linear_value_head_dim=6, linear_conv_kernel_dim=4)
config = Qwen3_5TextConfig(**shape, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
                           layer_types=["linear_attention"] * 3 + ["full_attention"], rms_norm_eps=1e-6)
torch.manual_seed(0)
# Every weight and input is drawn in fp32 (the checkpoint reader's widest dtype) and computed
# in float64 from those same values.
layer32 = Qwen3_5GatedDeltaNet(config, layer_idx=0).float().eval()
with torch.no_grad():
    for name, p in layer32.named_parameters():
        p.normal_(0.0, 0.3)
    layer32.A_log.copy_(torch.log(torch.empty(4).uniform_(0.5, 4.0)))
    layer32.dt_bias.copy_(torch.randn(4))
    layer32.norm.weight.copy_(1.0 + 0.3 * torch.randn(6))
layer = Qwen3_5GatedDeltaNet(config, layer_idx=0).double().eval()
layer.load_state_dict({k: v.double() for k, v in layer32.state_dict().items()})
tensors = {name: p.detach().contiguous() for name, p in layer32.named_parameters()}
expected64, expected32 = {}, {}
with torch.no_grad():
    for length in LENGTHS:
        hidden = torch.randn(2, length, 32)
        tensors[f"hidden_{length}"] = hidden
        expected32[length] = layer32(hidden).double()


def float64_copy(function):
    """transformers' own code with its fp32 casts made float64 (its chunked rule, the decay and the
    gated norm compute in fp32 whatever the inputs): the float64 judge of the same computation."""
    lines = textwrap.dedent(inspect.getsource(function)).splitlines()
    source = "\n".join(line for line in lines if not line.lstrip().startswith("@"))
    source = source.replace("torch.float32", "torch.float64").replace(".float()", ".double()")
    assert source.count("float64") + source.count(".double()") > 0, function
    scope = {}
    exec(compile(source, f"<float64 {function.__qualname__}>", "exec"), vars(modeling), scope)
    return scope[function.__name__]


modeling.torch_chunk_gated_delta_rule = float64_copy(modeling.torch_chunk_gated_delta_rule)
modeling.Qwen3_5GatedDeltaNet.forward = float64_copy(modeling.Qwen3_5GatedDeltaNet.forward)
modeling.Qwen3_5RMSNormGated.forward = float64_copy(modeling.Qwen3_5RMSNormGated.forward)
with torch.no_grad():
    for length in LENGTHS:
        expected64[length] = layer(tensors[f"hidden_{length}"].double())
in_dir = os.path.join(work, "in")
os.makedirs(in_dir, exist_ok=True)
save_file(tensors, os.path.join(in_dir, "model.safetensors"))
out_dir = os.path.join(work, "out")
subprocess.run([binary, in_dir, out_dir, "2", "4", "8", "6", "4", ",".join(map(str, LENGTHS))], check=True)
ours = load_file(os.path.join(out_dir, "model.safetensors"))
failed = False
for length in LENGTHS:
    z = expected64[length]
    scale = z.abs().max().item()
    ours64 = ours[f"out64hi_{length}"].double() + ours[f"out64lo_{length}"].double()
    ours32 = ours[f"out32_{length}"].double()
    rel64 = (ours64 - z).abs().max().item() / scale
    rel32 = (ours32 - z).abs().max().item() / scale
    peer32 = (expected32[length] - z).abs().max().item() / scale
    ok = rel64 <= 1e-10 and rel32 <= 1e-4
    failed |= not ok
    tolerance_log.record("gated delta mixer float64", f"length {length}", "transformers", rel64, 1e-10)
    tolerance_log.record("gated delta mixer fp32", f"length {length}", "float64", rel32, 1e-4)
    print(f"length {length:3d}: float64 relative difference {rel64:.2e} (bound 1e-10); fp32 from float64, relative "
          f"to the scale: shardtune {rel32:.2e} (bound 1e-4), transformers {peer32:.2e}{'' if ok else '  FAILED'}")
sys.exit(1 if failed else 0)
