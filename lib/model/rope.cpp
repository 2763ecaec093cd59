#include "model/rope.h"

#include <ATen/ATen.h>

#include <cmath>

namespace st {

at::Tensor rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t dim = config.head_dim;
  const at::Tensor exponents = at::arange(0, dim, 2, at::kLong).to(at::kFloat) / dim;
  at::Tensor inverse = 1.0 / at::pow(config.rope_theta, exponents);
  const RopeScaling& rope = config.rope_scaling;
  if (rope.type == RopeScaling::Type::linear) return inverse / rope.factor;
  if (rope.type != RopeScaling::Type::llama3) return inverse;

  // Llama 3.1: long wavelengths are divided by `factor`, short ones kept, the band between
  // them interpolated smoothly.
  const double old_length = static_cast<double>(rope.original_max_position_embeddings);
  const double low_freq_wavelength = old_length / rope.low_freq_factor;
  const double high_freq_wavelength = old_length / rope.high_freq_factor;
  const at::Tensor wavelength = 2 * M_PI / inverse;
  const at::Tensor scaled =
      at::where(wavelength > low_freq_wavelength, inverse / rope.factor, inverse);
  const at::Tensor smooth = (old_length / wavelength - rope.low_freq_factor) /
                            (rope.high_freq_factor - rope.low_freq_factor);
  const at::Tensor smoothed = (1 - smooth) * scaled / rope.factor + smooth * scaled;
  const at::Tensor medium =
      at::logical_not(wavelength < high_freq_wavelength)
          .logical_and(at::logical_not(wavelength > low_freq_wavelength));
  return at::where(medium, smoothed, scaled);
}

RopeTables make_rope_tables(const at::Tensor& inverse_frequencies, int64_t length, at::ScalarType dtype) {
  const at::Tensor positions =
      at::arange(length, at::TensorOptions().dtype(at::kFloat).device(inverse_frequencies.device()));
  const at::Tensor angles = at::outer(positions, inverse_frequencies);  // [T, head_dim / 2] fp32
  const at::Tensor both = at::cat({angles, angles}, -1);
  return {both.cos().to(dtype), both.sin().to(dtype)};
}

at::Tensor apply_rotary(const at::Tensor& x, const RopeTables& tables) {
  const int64_t half = x.size(-1) / 2;
  const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * tables.cos + rotated * tables.sin;
}

}  // namespace st
