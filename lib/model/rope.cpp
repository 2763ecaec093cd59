#include "model/rope.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

#include <cmath>

#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/rope.h"
#include "model/activation_kernels.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

#if ST_HAVE_CUDA
bool fused(const at::Tensor& x, const RopeTables& tables) {
  const at::ScalarType type = x.scalar_type();
  return kernel_activation(x) && x.dim() == 4 && x.stride(3) == 1 && x.size(3) % 2 == 0 &&
         tables.cos.scalar_type() == type &&
         tables.sin.scalar_type() == type && tables.cos.is_cuda() && tables.cos.is_contiguous() &&
         tables.sin.is_contiguous() && tables.cos.dim() == 2 && tables.cos.size(0) == x.size(2) &&
         tables.cos.size(1) == x.size(3) && tables.sin.sizes() == tables.cos.sizes();
}

StHeads heads_of(const at::Tensor& t) { return {t.data_ptr(), t.stride(0), t.stride(1), t.stride(2)}; }

// The output keeps x's layout (as the op sequence's would), so attention sees the same strides.
class FusedRotary : public torch::autograd::Function<FusedRotary> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& x, const at::Tensor& cos,
                            const at::Tensor& sin) {
    context->save_for_backward({cos, sin});
    const at::Tensor out = at::empty_strided(x.sizes(), x.strides(), x.options());
    ST_CHECK_CUDA(st_rope_forward(heads_of(x), heads_of(out), cos.data_ptr(), sin.data_ptr(), activation_dtype(x),
                                  x.size(0), x.size(1), x.size(2), x.size(3), compat::current_cuda_stream()));
    return out;
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* context,
                                               torch::autograd::tensor_list grads) {
    const auto saved = context->get_saved_variables();
    at::Tensor grad_out = grads[0];
    if (grad_out.stride(3) != 1) grad_out = grad_out.contiguous();
    const at::Tensor grad_x = at::empty_like(grad_out, at::MemoryFormat::Preserve);
    ST_CHECK_CUDA(st_rope_backward(heads_of(grad_out), heads_of(grad_x), saved[0].data_ptr(), saved[1].data_ptr(),
                                   activation_dtype(grad_out), grad_out.size(0), grad_out.size(1), grad_out.size(2),
                                   grad_out.size(3), compat::current_cuda_stream()));
    return {grad_x, at::Tensor(), at::Tensor()};
  }
};
#endif

}  // namespace

at::Tensor rope_inverse_frequencies(const ModelConfig& config) {
  const int64_t dim = config.rotary_dim();
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

at::Tensor local_rope_inverse_frequencies(const ModelConfig& config) {
  ModelConfig local = config;
  local.rope_theta = config.local_rope_theta;
  local.rope_scaling = RopeScaling{};
  return rope_inverse_frequencies(local);
}

namespace {

// angles [..., head_dim / 2] fp32 (position x frequency) -> cos and sin over both halves.
RopeTables tables_of(const at::Tensor& angles, at::ScalarType dtype) {
  const at::Tensor both = at::cat({angles, angles}, -1);
  return {both.cos().to(dtype), both.sin().to(dtype)};
}

}  // namespace

RopeTables make_rope_tables(const at::Tensor& inverse_frequencies, int64_t length, at::ScalarType dtype) {
  const at::Tensor positions =
      at::arange(length, at::TensorOptions().dtype(at::kFloat).device(inverse_frequencies.device()));
  return tables_of(at::outer(positions, inverse_frequencies), dtype);  // [T, head_dim / 2] angles
}

RopeTables make_rope_tables_at(const at::Tensor& inverse_frequencies, const at::Tensor& position_ids,
                               at::ScalarType dtype) {
  const at::Tensor positions = position_ids.to(inverse_frequencies.device(), at::kFloat).unsqueeze(-1);
  // [R, 1, T, head_dim / 2] angles, each the same product at::outer forms.
  return tables_of((positions * inverse_frequencies).unsqueeze(1), dtype);
}

at::Tensor apply_rotary_reference(const at::Tensor& x, const RopeTables& tables) {
  const int64_t half = x.size(-1) / 2;
  const at::Tensor rotated = at::cat({-x.narrow(-1, half, half), x.narrow(-1, 0, half)}, -1);
  return x * tables.cos + rotated * tables.sin;
}

at::Tensor apply_rotary(const at::Tensor& x, const RopeTables& tables) {
  const int64_t rotary = tables.cos.size(-1);
  if (rotary < x.size(-1)) {  // partial rotary: the head's first `rotary` dimensions turn, the rest pass
    return at::cat({apply_rotary(x.narrow(-1, 0, rotary), tables), x.narrow(-1, rotary, x.size(-1) - rotary)}, -1);
  }
#if ST_HAVE_CUDA
  if (fused(x, tables)) return FusedRotary::apply(x, tables.cos, tables.sin);
#endif
  return apply_rotary_reference(x, tables);
}

}  // namespace st
