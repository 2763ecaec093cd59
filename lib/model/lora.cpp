#include "model/lora.h"

#include <ATen/ATen.h>

#include <cmath>

#include "util/errors.h"

namespace st {
namespace {

// Uniform [0, 1) per element of `like` [.., features] from (seed, stream, element index; with
// `token_places`, place x features + feature): splitmix64 in int64 tensor arithmetic (wrapping
// multiplies, logical shifts through masks), on its device.
at::Tensor hashed_uniform(const at::Tensor& like, int64_t seed, int64_t stream, const at::Tensor& token_places) {
  const auto options = like.options().dtype(at::kLong);
  const auto logical_shift = [](const at::Tensor& z, int bits) {
    return z.__rshift__(bits).bitwise_and((int64_t{1} << (64 - bits)) - 1);
  };
  // Unsigned arithmetic wraps where signed would overflow.
  const auto base = static_cast<int64_t>(static_cast<uint64_t>(seed) * 0x9e3779b97f4a7c15ull +
                                         static_cast<uint64_t>(stream) * 0x632be59bd9b4e019ull);
  const int64_t features = like.size(-1);
  const at::Tensor index = token_places.defined()
                               ? token_places.reshape({-1, 1}).mul(features).add(at::arange(features, options)).reshape({-1})
                               : at::arange(like.numel(), options);
  at::Tensor z = index.mul(static_cast<int64_t>(0x9e3779b97f4a7c15ull)).add(base);
  z = z.bitwise_xor(logical_shift(z, 30)).mul(static_cast<int64_t>(0xbf58476d1ce4e5b9ull));
  z = z.bitwise_xor(logical_shift(z, 27)).mul(static_cast<int64_t>(0x94d049bb133111ebull));
  z = z.bitwise_xor(logical_shift(z, 31));
  return logical_shift(z, 11).to(at::kDouble).mul(1.0 / 9007199254740992.0).view(like.sizes());
}

}  // namespace

at::Tensor lora_delta(const at::Tensor& x, const LoraPair& pair, const AdapterForward& adapter, int64_t stream,
                      const at::Tensor& token_places) {
  at::Tensor input = x;
  if (adapter.dropout > 0.0) {
    const at::Tensor keep = hashed_uniform(x, adapter.dropout_seed, stream, token_places).ge(adapter.dropout);
    input = x * keep.to(x.scalar_type()) * (1.0 / (1.0 - adapter.dropout));
  }
  return at::linear(at::linear(input, pair.a), pair.b) * adapter.scale;
}

LoraPair adapted_pair(const LoraPair& pair, const AdaptedWeight& piece, int64_t experts) {
  LoraPair slice = pair;
  if (piece.expert >= 0) {
    const int64_t r = pair.a.size(0) / experts;
    slice.a = pair.a.view({experts, r, pair.a.size(1)}).select(0, piece.expert);
    slice.b = pair.b.view({pair.b.size(0), r, experts}).select(2, piece.expert);
  }
  if (piece.b_row_count >= 0) slice.b = slice.b.narrow(0, piece.b_row_begin, piece.b_row_count);
  return slice;
}

at::Tensor merged_rows(const at::Tensor& weight_rows, const LoraPair& pair, double scale, int64_t row_begin) {
  const at::Tensor b_rows = pair.b.to(at::kFloat).narrow(0, row_begin, weight_rows.size(0));
  return weight_rows.to(at::kFloat) + b_rows.mm(pair.a.to(at::kFloat)) * scale;
}

}  // namespace st
