// The MLP's activation, silu(gate) * up (gate, up [.., I]: the gate_proj and up_proj outputs),
// or the family's other gate activation (GeGLU: GELU's tanh approximation, Gemma).
#pragma once

#include <ATen/core/Tensor.h>

#include "hf/model_family.h"

namespace st {

// act(gate) * up for the family's Activation: swiglu, or at::gelu(gate, "tanh") * up (as
// transformers' gelu_pytorch_tanh). Differentiable.
at::Tensor gated_activation(const at::Tensor& gate, const at::Tensor& up, Activation activation);

// Differentiable. CUDA fp32/bf16/fp16 inputs whose rows are evenly strided (contiguous, or the
// halves of one fused gate/up output) run cuda/'s fused kernel: one pass forward and one
// backward, fp32 inside, no silu temporary. Everything else runs swiglu_reference.
at::Tensor swiglu(const at::Tensor& gate, const at::Tensor& up);

// The op sequence (at::silu, then a multiply): the CPU path and the kernel's test oracle.
at::Tensor swiglu_reference(const at::Tensor& gate, const at::Tensor& up);

}  // namespace st
