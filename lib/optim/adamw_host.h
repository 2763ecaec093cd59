// The host loops of AdamW shared by the fp32 moments (sharded_adamw.cpp) and the 8-bit ones
// (adamw8bit.cpp): one fused pass per element range, split at the weight-decayed ranges, over
// contiguous blocks on host threads.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "cuda/adamw_scalars.h"
#include "optim/decayed_ranges.h"
#include "optim/optim_options.h"

namespace st {

// The scalars of step `step` (1 for the first) at learning rate `lr`.
inline StAdamWScalars adamw_scalars(const OptimOptions& o, double lr, int64_t step) {
  const double correction1 = 1.0 - std::pow(o.beta1, static_cast<double>(step));
  const double correction2 = 1.0 - std::pow(o.beta2, static_cast<double>(step));
  return {static_cast<float>(o.beta1),         static_cast<float>(1.0 - o.beta1), static_cast<float>(o.beta2),
          static_cast<float>(1.0 - o.beta2),   static_cast<float>(o.eps),         static_cast<float>(lr / correction1),
          static_cast<float>(std::sqrt(correction2)), static_cast<float>(1.0 - lr * o.weight_decay)};
}

// The fused update of elements [begin, end): decay, moments, parameter, in one pass
// (torch.optim.AdamW's arithmetic; the division in addcdiv_'s order).
inline void fused_adamw(float* p, float* m, float* v, const float* g, float grad_scale, int64_t begin, int64_t end,
                        const StAdamWScalars& s, bool decay) {
  for (int64_t i = begin; i < end; ++i) {
    const float grad = g[i] * grad_scale;
    if (decay) p[i] *= s.decay_factor;
    m[i] = m[i] * s.beta1 + s.one_minus_beta1 * grad;
    v[i] = v[i] * s.beta2 + s.one_minus_beta2 * grad * grad;
    p[i] -= s.step_size * m[i] / (std::sqrt(v[i]) / s.correction2_sqrt + s.eps);
  }
}

// Calls work(begin, end) on up to `threads` threads over [0, n) in contiguous blocks whose
// bounds are multiples of `align` (except n).
template <typename Work>
void parallel_blocks(int64_t n, int threads, const Work& work, int64_t align = 1) {
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(threads, n / 65536));
  if (blocks == 1) return work(0, n);
  std::vector<std::thread> pool;
  const int64_t per_block = ((n + blocks - 1) / blocks + align - 1) / align * align;
  for (int64_t b = 0; b < blocks && b * per_block < n; ++b) {
    pool.emplace_back([&, b] { work(b * per_block, std::min(n, (b + 1) * per_block)); });
  }
  for (auto& thread : pool) thread.join();
}

// Calls segment(first, last, decay) over [begin, end) split at the `decayed` ranges (sorted,
// disjoint), which get weight decay.
template <typename Segment>
void for_each_segment(int64_t begin, int64_t end, const std::vector<ElementRange>& decayed, const Segment& segment) {
  int64_t at_element = begin;
  for (const ElementRange& range : decayed) {
    const int64_t first = std::max(begin, range.offset);
    const int64_t last = std::min(end, range.offset + range.length);
    if (first >= last) continue;
    if (at_element < first) segment(at_element, first, false);
    segment(first, last, true);
    at_element = last;
  }
  if (at_element < end) segment(at_element, end, false);
}

}  // namespace st
