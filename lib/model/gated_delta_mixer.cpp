#include "model/gated_delta_mixer.h"

#include <ATen/ATen.h>

#include <cmath>

#include "model/gated_delta_rule.h"
#include "util/errors.h"

namespace st {
namespace {

// x [B, C, T] through the depthwise causal convolution (zeros before the row's start), then SiLU.
at::Tensor causal_conv_silu(const at::Tensor& x, const at::Tensor& weight, int64_t kernel) {
  const at::Tensor w = weight.dim() == 2 ? weight.unsqueeze(1) : weight;  // [C, 1, K]
  const at::Tensor out = at::conv1d(x, w.to(x.scalar_type()), {}, /*stride=*/{1}, /*padding=*/{kernel - 1},
                                    /*dilation=*/{1}, /*groups=*/x.size(1));
  return at::silu(out.narrow(2, 0, x.size(2)));
}

// transformers' l2norm (as the FLA library): x / sqrt(sum x^2 + 1e-6), in the computing dtype.
at::Tensor l2_normalised(const at::Tensor& x) { return x * at::rsqrt((x * x).sum(-1, true) + 1e-6); }

}  // namespace

at::Tensor gated_delta_mixer(const at::Tensor& hidden, const GatedDeltaWeights& w, const GatedDeltaShape& s) {
  if (hidden.dim() != 3 || s.value_heads % s.key_heads != 0) {
    throw ModelError("gated_delta_mixer: expected hidden [B, T, hidden] and value heads a multiple of key heads");
  }
  const int64_t batch = hidden.size(0), length = hidden.size(1);
  const at::ScalarType compute = hidden.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  // The projections in the model's dtype, as nn.Linear runs them.
  const at::Tensor mixed = at::matmul(hidden, w.in_proj_qkv.t());  // [B, T, C]
  const at::Tensor z = at::matmul(hidden, w.in_proj_z.t());         // [B, T, value_dim]
  const at::Tensor b = at::matmul(hidden, w.in_proj_b.t());         // [B, T, Hv]
  const at::Tensor a = at::matmul(hidden, w.in_proj_a.t());         // [B, T, Hv]
  const at::Tensor conv = causal_conv_silu(mixed.transpose(1, 2), w.conv1d, s.conv_kernel).transpose(1, 2);
  const auto heads = [&](const at::Tensor& x, int64_t count, int64_t dim) {  // [B, T, n*d] -> [B, n, T, d]
    return x.reshape({batch, length, count, dim}).transpose(1, 2).to(compute);
  };
  const int64_t ratio = s.value_heads / s.key_heads;
  at::Tensor q = heads(conv.narrow(2, 0, s.key_dim()), s.key_heads, s.key_head_dim);
  at::Tensor k = heads(conv.narrow(2, s.key_dim(), s.key_dim()), s.key_heads, s.key_head_dim);
  const at::Tensor v = heads(conv.narrow(2, 2 * s.key_dim(), s.value_dim()), s.value_heads, s.value_head_dim);
  if (ratio > 1) {  // key head h serves value heads h*ratio .. h*ratio + ratio - 1
    q = q.repeat_interleave(ratio, 1);
    k = k.repeat_interleave(ratio, 1);
  }
  GatedDeltaInputs in;
  in.q = l2_normalised(q) * std::pow(static_cast<double>(s.key_head_dim), -0.5);
  in.k = l2_normalised(k);
  in.v = v;
  in.beta = at::sigmoid(b).transpose(1, 2).to(compute);
  // g in fp32 at least, as transformers computes it (an fp16 A would overflow).
  in.g = (-w.A_log.to(compute).exp() * at::softplus(a.to(compute) + w.dt_bias.to(compute))).transpose(1, 2);
  const at::Tensor core = gated_delta_rule_chunked(in, s.chunk).out.to(hidden.scalar_type());  // [B, Hv, T, Dv]

  // RMSNorm per value head in fp32, the weight applied in the model's dtype, gated by silu(z).
  const at::Tensor x = core.transpose(1, 2).to(compute);  // [B, T, Hv, Dv]
  const at::Tensor normed = (x * at::rsqrt(x.pow(2).mean(-1, true) + s.norm_eps)).to(hidden.scalar_type());
  const at::Tensor gate = at::silu(z.reshape({batch, length, s.value_heads, s.value_head_dim}).to(compute));
  const at::Tensor gated = ((w.norm * normed).to(compute) * gate).to(hidden.scalar_type());
  return at::matmul(gated.reshape({batch, length, s.value_dim()}), w.out_proj.t());
}

}  // namespace st
