#include "optim/adamw8bit.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "optim/adamw_host.h"
#include "util/dynamic_quant.h"

namespace st {
namespace {

int64_t blocks_of(int64_t n) { return (n + kDynamicBlockSize - 1) / kDynamicBlockSize; }

}  // namespace

int64_t shard_multiple_of(OptimizerName name) { return name == OptimizerName::adamw8bit ? kDynamicBlockSize : 1; }

Moments8bit Moments8bit::zeros(int64_t n, const at::Device& device) {
  const auto blocks = blocks_of(n);
  const auto codes = at::TensorOptions(at::kByte).device(device);
  const auto absmax = at::TensorOptions(at::kFloat).device(device);
  return {at::full({n}, zero_code(DynamicMap::signed_values), codes),
          at::full({n}, zero_code(DynamicMap::unsigned_values), codes), at::zeros({blocks}, absmax),
          at::zeros({blocks}, absmax)};
}

Moments8bit Moments8bit::quantize(const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq) {
  const DynamicCoded m = quantize_dynamic(exp_avg, DynamicMap::signed_values);
  const DynamicCoded v = quantize_dynamic(exp_avg_sq, DynamicMap::unsigned_values);
  const at::Device device = exp_avg.device();
  return {m.codes.to(device), v.codes.to(device), m.absmax.to(device), v.absmax.to(device)};
}

int64_t Moments8bit::bytes() const {
  return static_cast<int64_t>(m_codes.nbytes() + v_codes.nbytes() + m_absmax.nbytes() + v_absmax.nbytes());
}

at::Tensor Moments8bit::exp_avg() const { return dequantize_dynamic(m_codes, m_absmax, DynamicMap::signed_values); }

at::Tensor Moments8bit::exp_avg_sq() const {
  return dequantize_dynamic(v_codes, v_absmax, DynamicMap::unsigned_values);
}

void adamw8bit_host_step(at::Tensor& master, Moments8bit& moments, const at::Tensor& grad, float grad_scale,
                         const std::vector<ElementRange>& decayed, const StAdamWScalars& scalars, int threads) {
  const at::Tensor host_grad = grad.to(at::kCPU).to(at::kFloat).contiguous();
  const float* smap = dynamic_map_values(DynamicMap::signed_values);
  const float* umap = dynamic_map_values(DynamicMap::unsigned_values);
  float* p = master.data_ptr<float>();
  const float* g = host_grad.data_ptr<float>();
  uint8_t* m_codes = moments.m_codes.data_ptr<uint8_t>();
  uint8_t* v_codes = moments.v_codes.data_ptr<uint8_t>();
  float* m_absmax = moments.m_absmax.data_ptr<float>();
  float* v_absmax = moments.v_absmax.data_ptr<float>();
  parallel_blocks(
      master.numel(), threads,
      [&](int64_t begin, int64_t end) {
        float m[kDynamicBlockSize], v[kDynamicBlockSize];
        for (int64_t first = begin; first < end; first += kDynamicBlockSize) {
          const int64_t n = std::min(end - first, kDynamicBlockSize), block = first / kDynamicBlockSize;
          for (int64_t i = 0; i < n; ++i) {
            m[i] = smap[m_codes[first + i]] * m_absmax[block];
            v[i] = umap[v_codes[first + i]] * v_absmax[block];
          }
          for_each_segment(first, first + n, decayed, [&](int64_t from, int64_t to, bool decay) {
            fused_adamw(p + first, m, v, g + first, grad_scale, from - first, to - first, scalars, decay);
          });
          quantize_dynamic_block(m, n, DynamicMap::signed_values, m_codes + first, m_absmax + block);
          quantize_dynamic_block(v, n, DynamicMap::unsigned_values, v_codes + first, v_absmax + block);
        }
      },
      kDynamicBlockSize);
}

}  // namespace st
