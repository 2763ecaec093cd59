"""A peer's float64 run without float32 islands: the judge of fp32 noise must itself be free of it.

transformers and TRL keep some values in float32 whatever the model's dtype: RMSNorm's variance
(`hidden_states.to(torch.float32)`), Gemma's norms (`x.float()`), the rotary tables
(`inv_freq.float()`, `position_ids.float()`), attention's softmax (`dtype=torch.float32`), the
mixture-of-experts router loss (`routing_weights.float()`), TRL's chunked log-prob statistics. A
"float64" run then carries fp32 rounding of about 1e-7 relative: as noisy as the fp32 runs it
judges. Inside `exact_float64()` every operation that would make a float32 tensor (a cast, a dtype
argument, a factory with the default dtype) makes a float64 one instead, at the dispatcher, so
forward and backward alike; any float32 result an operation still makes from float64 inputs is
counted, and must be none. A file's float32 data (a LoRA adapter read by safetensors: bytes viewed
as float32) is read as it is, and widened exactly where the model takes it.
"""
import contextlib

import torch
from torch.utils._python_dispatch import TorchDispatchMode


def _widen(value):
    if value is torch.float32:
        return torch.float64
    if isinstance(value, (list, tuple)):
        return type(value)(_widen(v) for v in value)
    return value


class _Float64Everywhere(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.float32_results = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is not torch.ops.aten.view.dtype:  # a reinterpretation of bytes (a file's fp32 data), not a cast
            kwargs = {key: _widen(value) for key, value in kwargs.items()}
            args = tuple(_widen(a) for a in args)
        result = func(*args, **kwargs)
        narrowing = any(isinstance(a, torch.Tensor) and a.dtype == torch.float64
                        for a in [*args, *kwargs.values()])
        for tensor in (result if isinstance(result, (list, tuple)) else [result]):
            if narrowing and isinstance(tensor, torch.Tensor) and tensor.dtype == torch.float32:
                self.float32_results += 1
        return result


@contextlib.contextmanager
def exact_float64():
    """Runs the body with float64 as the default dtype and every float32 request widened; raises
    if any operation still made a float32 tensor from float64 ones."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    mode = _Float64Everywhere()
    try:
        with mode:
            yield mode
    finally:
        torch.set_default_dtype(previous)
    if mode.float32_results:
        raise RuntimeError(f"exact_float64: {mode.float32_results} operations still made float32 tensors of float64 ones")
