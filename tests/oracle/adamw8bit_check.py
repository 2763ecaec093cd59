"""shardtune's AdamW8bit (optim/adamw8bit.h, through adamw8bit_steps) against bitsandbytes'
`bnb.optim.AdamW8bit` on the CPU, and both against torch's fp32 AdamW: the same parameter
vector (n not a multiple of 256: a short last block), the same gradients for STEPS steps
(their scale changing over steps and across blocks, some exact zeros), lr, betas, eps and
weight decay.

bitsandbytes codes a moment as the nearest map value in its CUDA kernel (dQuantize), but its CPU
backend finds the value's interval with an approximate lookup (BinSearch's Direct2) and then
takes the nearer of that interval's two ends: 0.1-0.3% of codes land one step off the nearest.
shardtune codes to the nearest, as the kernel. So the oracle is bitsandbytes' own optimizer
(its state, maps, blockwise update and requantization) with the CPU backend's quantizer swapped
for the nearest-value rule: its parameters must equal shardtune's to fp32 rounding (relative 1e-5
of the step's update scale). bitsandbytes' unpatched CPU run is reported beside, with its
distance from the fp32 AdamW run, which bounds what 8-bit states change.
Prints the figures; exits 1 on a difference.

usage: adamw8bit_check.py ADAMW8BIT_STEPS WORK_DIR [STEPS]
"""
import os
import subprocess
import sys

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
import tolerance_log  # noqa: E402

N, LR, WEIGHT_DECAY = 5 * 4096 + 100, 1e-3, 0.01


def nearest_blockwise(values, code, absmax_out, out_uint8, blocksize):
    """The CPU backend's requantization with the CUDA kernel's rule: per block the fp32
    reciprocal of its absmax, then the nearest map value (a midpoint goes down)."""
    n = values.numel()
    blocks = (n + blocksize - 1) // blocksize
    padded = torch.nn.functional.pad(values.reshape(-1), (0, blocks * blocksize - n))
    absmax = padded.reshape(blocks, blocksize).abs().amax(1)
    scaled = (padded.reshape(blocks, blocksize) * (1.0 / absmax)[:, None]).reshape(-1)[:n]
    midpoints = (code[:-1] + code[1:]) * 0.5
    out_uint8.copy_(torch.searchsorted(midpoints, scaled.contiguous(), side="left").to(torch.uint8).reshape(out_uint8.shape))
    absmax_out.copy_(absmax)


def main():
    tool, work = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 60
    import bitsandbytes as bnb
    torch.manual_seed(0)
    param = torch.randn(N) * 0.05
    scales = torch.logspace(-4, 0, N // 256 + 1).repeat_interleave(256)[:N]  # blocks of very different sizes
    grads = torch.stack([torch.randn(N) * scales * (1.0 + 0.5 * torch.sin(torch.tensor(float(s))))
                         for s in range(steps)])
    grads[:, :300] = 0.0  # a whole block and a bit of zeros
    os.makedirs(f"{work}/in", exist_ok=True)
    save_file({"param": param.contiguous(), "grads": grads.contiguous()}, f"{work}/in/model.safetensors")
    subprocess.run([tool, f"{work}/in", f"{work}/out", str(LR), str(WEIGHT_DECAY)], check=True)
    ours = load_file(f"{work}/out/model.safetensors")["params"]

    def run(make):
        p = torch.nn.Parameter(param.clone())
        optimizer = make([p])
        out = []
        for g in grads:
            p.grad = g.clone()
            optimizer.step()
            out.append(p.detach().clone())
        return torch.stack(out), optimizer.state[p]

    make_8bit = lambda ps: bnb.optim.AdamW8bit(ps, lr=LR, weight_decay=WEIGHT_DECAY, min_8bit_size=0)
    cpu_backend, _ = run(make_8bit)
    cpu_ops = bnb.backends.cpu.ops
    approximate = cpu_ops._quant_blockwise_fp32_direct
    cpu_ops._quant_blockwise_fp32_direct = nearest_blockwise
    try:
        theirs, state = run(make_8bit)
    finally:
        cpu_ops._quant_blockwise_fp32_direct = approximate
    fp32, _ = run(lambda ps: torch.optim.AdamW(ps, lr=LR, weight_decay=WEIGHT_DECAY, foreach=False))
    # Two codings bitsandbytes itself ships (its CPU backend's lookup, the kernel's nearest rule)
    # differ by this much: the tolerance of the algorithm. shardtune, coding to the nearest with
    # torch's arithmetic up to FMA contraction (1 ulp), must stay within it, step by step.
    # Where both codings agree (the yardstick is 0, as at step 1 on some machines), FMA contraction
    # alone may still move each parameter by one unit in its last place: the floor is the RMS of
    # those units (about 4e-9 here; a wrong code or update is of the order of LR = 1e-3).
    rms = lambda a, b: (a - b).pow(2).mean().sqrt().item()
    one_ulp = lambda a: (torch.nextafter(a.abs(), torch.tensor(float("inf"))) - a.abs()).pow(2).mean().sqrt().item()
    worst, bad = 0.0, []
    for step in range(steps):
        ours_off = rms(ours[step], theirs[step])
        yardstick = max(rms(cpu_backend[step], theirs[step]), one_ulp(theirs[step]))
        ratio = ours_off / yardstick
        worst = max(worst, ratio)
        if ratio > 1.0:
            bad.append(f"step {step + 1}: RMS shardtune - bnb (nearest) {ours_off:.3g} > bnb CPU - bnb (nearest) "
                       f"{yardstick:.3g}")
    tolerance_log.record("adamw8bit RMS ratio", "bnb nearest", "", worst, 1.0)
    final = load_file(f"{work}/out/model.safetensors")
    same_m = (final["m_codes"] == state["state1"]).float().mean().item()
    same_v = (final["v_codes"] == state["state2"]).float().mean().item()
    print(f"| AdamW8bit, {N} elements, {steps} steps (bitsandbytes {bnb.__version__}) | RMS(shardtune - bnb nearest) / "
          f"RMS(bnb CPU - bnb nearest), worst step {worst:.3g} (bound 1) | final codes equal to bnb nearest: "
          f"m {same_m:.5f}, v {same_v:.5f} | last step RMS: shardtune - bnb nearest {rms(ours[-1], theirs[-1]):.3g}, "
          f"bnb CPU - bnb nearest {rms(cpu_backend[-1], theirs[-1]):.3g}, bnb nearest - fp32 AdamW "
          f"{rms(theirs[-1], fp32[-1]):.3g} | {'ok' if not bad else 'DIFFERS'} |")
    for line in bad[:8]:
        print("  " + line)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
