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

// The same over packed sequences: x [1, C, N] (N flattened tokens), each token's window cut at its
// sequence's start (`sequence` [N]: the sequence each token belongs to).
at::Tensor packed_causal_conv_silu(const at::Tensor& x, const at::Tensor& weight, int64_t kernel,
                                   const at::Tensor& sequence) {
  const at::Tensor w = (weight.dim() == 3 ? weight.squeeze(1) : weight).to(x.scalar_type());  // [C, K]
  at::Tensor out = at::zeros_like(x);
  const int64_t n = x.size(2);
  for (int64_t back = 0; back < kernel && back < n; ++back) {  // the tap `back` tokens before
    const at::Tensor same = sequence.narrow(0, back, n - back).eq(sequence.narrow(0, 0, n - back)).to(x.scalar_type());
    const at::Tensor tap = x.narrow(2, 0, n - back) * same * w.select(1, kernel - 1 - back).unsqueeze(-1);
    out = out + at::constant_pad_nd(tap, {back, 0});
  }
  return at::silu(out);
}

// transformers' l2norm (as the FLA library): x / sqrt(sum x^2 + 1e-6), in the computing dtype.
at::Tensor l2_normalised(const at::Tensor& x) { return x * at::rsqrt((x * x).sum(-1, true) + 1e-6); }

struct Projections {
  at::Tensor mixed, z, b, a;  // [B, T, C], [B, T, value_dim], [B, T, Hv] x 2: in the model's dtype, as nn.Linear
};

// x W^T, plus what an adapter adds to that projection.
at::Tensor projected(const at::Tensor& x, const at::Tensor& weight, const GatedDeltaWeights& w,
                     GatedDeltaProjection which) {
  at::Tensor out = at::matmul(x, weight.t());
  if (w.delta) {
    const at::Tensor delta = w.delta(which, x);
    if (delta.defined()) out = out + delta;
  }
  return out;
}

Projections project(const at::Tensor& hidden, const GatedDeltaWeights& w) {
  return {projected(hidden, w.in_proj_qkv, w, GatedDeltaProjection::qkv),
          projected(hidden, w.in_proj_z, w, GatedDeltaProjection::z),
          projected(hidden, w.in_proj_b, w, GatedDeltaProjection::b),
          projected(hidden, w.in_proj_a, w, GatedDeltaProjection::a)};
}

// From the convolved q, k, v channels conv [B, T, C] on: the heads, the delta rule (each
// sequence of `starts` from a zero state when given, else each row from `initial_state`), the
// gated norm and out_proj. `final_state` receives the rule's state at the end (rows only).
at::Tensor mix_after_conv(const at::Tensor& conv, const Projections& p, const GatedDeltaWeights& w,
                          const GatedDeltaShape& s, at::ScalarType dtype, const std::vector<int64_t>* starts,
                          const at::Tensor& initial_state, at::Tensor* final_state) {
  const int64_t batch = conv.size(0), length = conv.size(1);
  const at::ScalarType compute = dtype == at::kDouble ? at::kDouble : at::kFloat;
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
  in.beta = at::sigmoid(p.b).transpose(1, 2).to(compute);
  // g in fp32 at least, as transformers computes it (an fp16 A would overflow).
  in.g = (-w.A_log.to(compute).exp() * at::softplus(p.a.to(compute) + w.dt_bias.to(compute))).transpose(1, 2);
  in.initial_state = initial_state;
  GatedDeltaOutputs rule = gated_delta_rule(in, s.chunk, starts);  // with starts: each sequence from zeros
  const at::Tensor core = rule.out.to(dtype);  // [B, Hv, T, Dv]
  if (final_state && !starts) *final_state = rule.final_state;
  // RMSNorm per value head in fp32, the weight applied in the model's dtype, gated by silu(z).
  const at::Tensor x = core.transpose(1, 2).to(compute);  // [B, T, Hv, Dv]
  const at::Tensor normed = (x * at::rsqrt(x.pow(2).mean(-1, true) + s.norm_eps)).to(dtype);
  const at::Tensor gate = at::silu(p.z.reshape({batch, length, s.value_heads, s.value_head_dim}).to(compute));
  const at::Tensor gated = ((w.norm * normed).to(compute) * gate).to(dtype);
  return projected(gated.reshape({batch, length, s.value_dim()}), w.out_proj, w, GatedDeltaProjection::out);
}

void check_shape(const at::Tensor& hidden, const GatedDeltaShape& s) {
  if (hidden.dim() != 3 || s.value_heads % s.key_heads != 0) {
    throw ModelError("gated_delta_mixer: expected hidden [B, T, hidden] and value heads a multiple of key heads");
  }
}

}  // namespace

at::Tensor gated_delta_mixer(const at::Tensor& hidden_rows, const GatedDeltaWeights& w, const GatedDeltaShape& s,
                             const std::vector<int64_t>* sequence_starts) {
  check_shape(hidden_rows, s);
  // Packed rows run as one row of their flattened tokens, cut into sequences.
  const at::Tensor hidden = sequence_starts ? hidden_rows.reshape({1, -1, hidden_rows.size(2)}) : hidden_rows;
  const int64_t length = hidden.size(1);
  const Projections p = project(hidden, w);
  at::Tensor conv;
  if (sequence_starts) {
    const std::vector<int64_t>& starts = *sequence_starts;
    if (starts.size() < 2 || starts.front() != 0 || starts.back() != length) {
      throw ModelError("gated_delta_mixer: sequence_starts must run from 0 to the row's tokens");
    }
    std::vector<int64_t> ids(static_cast<size_t>(length));
    for (size_t i = 0; i + 1 < starts.size(); ++i) {
      for (int64_t t = starts[i]; t < starts[i + 1]; ++t) ids[static_cast<size_t>(t)] = static_cast<int64_t>(i);
    }
    const at::Tensor sequence = at::tensor(ids, at::TensorOptions().dtype(at::kLong)).to(hidden.device());
    conv = packed_causal_conv_silu(p.mixed.transpose(1, 2), w.conv1d, s.conv_kernel, sequence).transpose(1, 2);
  } else {
    conv = causal_conv_silu(p.mixed.transpose(1, 2), w.conv1d, s.conv_kernel).transpose(1, 2);
  }
  return mix_after_conv(conv, p, w, s, hidden.scalar_type(), sequence_starts, at::Tensor(), nullptr)
      .reshape(hidden_rows.sizes());
}

GatedDeltaStep gated_delta_mixer_step(const at::Tensor& hidden, const GatedDeltaWeights& w, const GatedDeltaShape& s,
                                      const GatedDeltaCarry& from) {
  check_shape(hidden, s);
  const int64_t batch = hidden.size(0), length = hidden.size(1), history = s.conv_kernel - 1;
  const Projections p = project(hidden, w);
  // The conv reads the carried inputs (zeros at a sequence's start) before this part's own.
  const at::Tensor before = from.conv_inputs.defined()
                                ? from.conv_inputs.to(p.mixed.scalar_type())
                                : at::zeros({batch, history, p.mixed.size(2)}, p.mixed.options());
  const at::Tensor inputs = at::cat({before, p.mixed}, 1);  // [B, history + T, C]
  const at::Tensor conv =
      causal_conv_silu(inputs.transpose(1, 2), w.conv1d, s.conv_kernel).transpose(1, 2).narrow(1, history, length);
  GatedDeltaStep step;
  step.out = mix_after_conv(conv, p, w, s, hidden.scalar_type(), nullptr, from.state, &step.carry.state);
  step.carry.conv_inputs = inputs.narrow(1, length, history);
  return step;
}

}  // namespace st
