#include "model/gated_delta_rule.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "model/gated_delta_kernel.h"
#include "util/errors.h"

namespace st {
namespace {

at::ScalarType computing_dtype(const at::Tensor& t) {
  return t.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

void check_shapes(const GatedDeltaInputs& in) {
  const auto& q = in.q;
  if (q.dim() != 4 || !in.k.sizes().equals(q.sizes()) || in.v.dim() != 4 || in.v.size(0) != q.size(0) ||
      in.v.size(1) != q.size(1) || in.v.size(2) != q.size(2) || in.g.dim() != 3 || in.beta.dim() != 3 ||
      in.g.size(2) != q.size(2) || in.beta.size(2) != q.size(2)) {
    throw ModelError("gated_delta_rule: expected q, k [B, H, T, Dk], v [B, H, T, Dv], g and beta [B, H, T]");
  }
}

at::Tensor initial_or_zeros(const GatedDeltaInputs& in, at::ScalarType dtype) {
  if (in.initial_state.defined()) return in.initial_state.to(dtype);
  return at::zeros({in.q.size(0), in.q.size(1), in.q.size(3), in.v.size(3)}, in.q.options().dtype(dtype));
}

}  // namespace

GatedDeltaInputs token_range(const GatedDeltaInputs& in, int64_t begin, int64_t count, const at::Tensor& initial_state) {
  GatedDeltaInputs out;
  out.q = in.q.narrow(2, begin, count);
  out.k = in.k.narrow(2, begin, count);
  out.v = in.v.narrow(2, begin, count);
  out.g = in.g.narrow(2, begin, count);
  out.beta = in.beta.narrow(2, begin, count);
  out.initial_state = initial_state;
  return out;
}

GatedDeltaOutputs gated_delta_rule_chunked(const GatedDeltaInputs& in, int64_t chunk) {
  check_shapes(in);
  const at::ScalarType dtype = computing_dtype(in.q);
  const int64_t batch = in.q.size(0), heads = in.q.size(1), length = in.q.size(2);
  const int64_t key_dim = in.q.size(3), value_dim = in.v.size(3);
  const int64_t pad = (chunk - length % chunk) % chunk, chunks = (length + pad) / chunk;
  // Padded tokens have k = v = 0 and g = 0: they leave the state as it is.
  const auto padded = [&](const at::Tensor& x) {
    at::Tensor t = x.to(dtype);
    return pad == 0 ? t : at::constant_pad_nd(t, t.dim() == 4 ? std::vector<int64_t>{0, 0, 0, pad}
                                                                 : std::vector<int64_t>{0, pad});
  };
  const at::Tensor q = padded(in.q).view({batch, heads, chunks, chunk, key_dim});
  const at::Tensor k = padded(in.k).view({batch, heads, chunks, chunk, key_dim});
  const at::Tensor v = padded(in.v).view({batch, heads, chunks, chunk, value_dim});
  const at::Tensor beta = padded(in.beta).view({batch, heads, chunks, chunk}).unsqueeze(-1);
  const at::Tensor decay = padded(in.g).view({batch, heads, chunks, chunk}).cumsum(-1);  // log decay from the chunk's start

  // Inside a chunk: pairwise decay exp(G_i - G_j) for j <= i (0 above the diagonal).
  const at::Tensor upper = at::ones({chunk, chunk}, in.q.options().dtype(at::kBool)).triu(1);
  const at::Tensor pairwise = (decay.unsqueeze(-1) - decay.unsqueeze(-2)).masked_fill(upper, -INFINITY).exp();
  const at::Tensor k_beta = k * beta, v_beta = v * beta;
  // (I + strictly-lower(beta_i k_i.k_j decay_ij)) U = [beta v | beta k exp(G)]: the delta rule's
  // in-chunk corrections solved at once (the UT transform).
  const at::Tensor system = at::matmul(k_beta, k.transpose(-1, -2)) * pairwise;
  const at::Tensor lower = system.tril(-1) + at::eye(chunk, system.options());
  const at::Tensor new_values = at::linalg_solve_triangular(lower, v_beta, /*upper=*/false, /*left=*/true,
                                                            /*unitriangular=*/true);
  const at::Tensor k_cumdecay = at::linalg_solve_triangular(lower, k_beta * decay.exp().unsqueeze(-1), false, true, true);
  const at::Tensor intra = (at::matmul(q, k.transpose(-1, -2)) * pairwise);
  const at::Tensor q_decayed = q * decay.exp().unsqueeze(-1);
  const at::Tensor chunk_end = decay.narrow(-1, chunk - 1, 1);  // [.., C, 1]
  const at::Tensor k_to_end = k * (chunk_end - decay).exp().unsqueeze(-1);
  const at::Tensor chunk_decay = chunk_end.exp().unsqueeze(-1);  // [.., C, 1, 1]

  at::Tensor state = initial_or_zeros(in, dtype);
  std::vector<at::Tensor> outs;
  outs.reserve(static_cast<size_t>(chunks));
  for (int64_t c = 0; c < chunks; ++c) {
    const at::Tensor corrected = new_values.select(2, c) - at::matmul(k_cumdecay.select(2, c), state);
    outs.push_back(at::matmul(q_decayed.select(2, c), state) + at::matmul(intra.select(2, c), corrected));
    state = state * chunk_decay.select(2, c) + at::matmul(k_to_end.select(2, c).transpose(-1, -2), corrected);
  }
  at::Tensor out = at::stack(outs, 2).view({batch, heads, chunks * chunk, value_dim}).narrow(2, 0, length);
  return {out.to(in.v.scalar_type()), state};
}

namespace {

// Packed rows: `rule` on each sequence from a zero state, the outputs joined again (no final state).
template <typename Rule>
GatedDeltaOutputs each_sequence(const GatedDeltaInputs& in, const std::vector<int64_t>& starts, Rule rule) {
  std::vector<at::Tensor> parts;
  for (size_t i = 0; i + 1 < starts.size(); ++i) {
    const int64_t begin = starts[i], count = starts[i + 1] - begin;
    if (count > 0) parts.push_back(rule(token_range(in, begin, count)).out);
  }
  return {at::cat(parts, 2), at::Tensor()};
}

// The definition on one sequence, one token at a time.
GatedDeltaOutputs recurrent_one_sequence(const GatedDeltaInputs& in) {
  const at::ScalarType dtype = computing_dtype(in.q);
  const at::Tensor q = in.q.to(dtype), k = in.k.to(dtype), v = in.v.to(dtype);
  const at::Tensor g = in.g.to(dtype), beta = in.beta.to(dtype);
  at::Tensor state = initial_or_zeros(in, dtype);  // [B, H, Dk, Dv]
  std::vector<at::Tensor> outs;
  for (int64_t t = 0; t < q.size(2); ++t) {
    state = state * g.select(2, t).exp().unsqueeze(-1).unsqueeze(-1);
    const at::Tensor k_t = k.select(2, t).unsqueeze(-1);  // [B, H, Dk, 1]
    const at::Tensor remembered = (state * k_t).sum(-2);    // [B, H, Dv]
    const at::Tensor delta = (v.select(2, t) - remembered) * beta.select(2, t).unsqueeze(-1);
    state = state + k_t * delta.unsqueeze(-2);
    outs.push_back((state * q.select(2, t).unsqueeze(-1)).sum(-2));
  }
  return {at::stack(outs, 2).to(in.v.scalar_type()), state};
}

}  // namespace

GatedDeltaOutputs gated_delta_rule(const GatedDeltaInputs& in, int64_t chunk,
                                   const std::vector<int64_t>* sequence_starts) {
  check_shapes(in);
  if (gated_delta_kernel_applies(in)) return gated_delta_rule_kernel(in, chunk, sequence_starts);
  if (!sequence_starts) return gated_delta_rule_chunked(in, chunk);
  return each_sequence(in, *sequence_starts, [chunk](const GatedDeltaInputs& one) {
    return gated_delta_rule_chunked(one, chunk);
  });
}

GatedDeltaOutputs gated_delta_rule_recurrent(const GatedDeltaInputs& in, const std::vector<int64_t>* sequence_starts) {
  check_shapes(in);
  return sequence_starts ? each_sequence(in, *sequence_starts, recurrent_one_sequence) : recurrent_one_sequence(in);
}

}  // namespace st
