#include "optim/sharded_adamw.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "util/errors.h"

namespace st {
namespace {

struct AdamWScalars {
  // Rounded to float from double, as torch rounds its Scalar arguments: 1 - beta in float would
  // differ in the last bit.
  float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, step_size, correction2_sqrt, decay_factor;
};

// The fused update of elements [begin, end): decay, moments, parameter, in one pass.
void fused_adamw(float* p, float* m, float* v, const float* g, int64_t begin, int64_t end,
                 const AdamWScalars& s, bool decay) {
  for (int64_t i = begin; i < end; ++i) {
    if (decay) p[i] *= s.decay_factor;
    m[i] = m[i] * s.beta1 + s.one_minus_beta1 * g[i];
    v[i] = v[i] * s.beta2 + s.one_minus_beta2 * g[i] * g[i];
    p[i] -= s.step_size * m[i] / (std::sqrt(v[i]) / s.correction2_sqrt + s.eps);  // addcdiv_'s order
  }
}

// Calls work(begin, end) on up to `threads` threads over [0, n) in contiguous blocks.
template <typename Work>
void parallel_blocks(int64_t n, int threads, const Work& work) {
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(threads, n / 65536));
  if (blocks == 1) return work(0, n);
  std::vector<std::thread> pool;
  const int64_t per_block = (n + blocks - 1) / blocks;
  for (int64_t b = 0; b < blocks; ++b) {
    pool.emplace_back([&, b] { work(b * per_block, std::min(n, (b + 1) * per_block)); });
  }
  for (auto& thread : pool) thread.join();
}

// The update of one host-resident shard; `decayed` (sorted, disjoint) gets weight decay.
void host_step(at::Tensor& master, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
               const std::vector<ElementRange>& decayed, const AdamWScalars& scalars, int threads) {
  const at::Tensor host_grad = grad.to(at::kCPU).contiguous();
  float* p = master.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  const float* g = host_grad.data_ptr<float>();
  parallel_blocks(master.numel(), threads, [&](int64_t begin, int64_t end) {
    int64_t at_element = begin;  // [begin, end) split at the decayed ranges
    for (const ElementRange& range : decayed) {
      const int64_t first = std::max(begin, range.offset);
      const int64_t last = std::min(end, range.offset + range.length);
      if (first >= last) continue;
      fused_adamw(p, m, v, g, at_element, first, scalars, false);
      fused_adamw(p, m, v, g, first, last, scalars, true);
      at_element = last;
    }
    fused_adamw(p, m, v, g, at_element, end, scalars, false);
  });
}

}  // namespace

ShardedAdamW::ShardedAdamW(const std::vector<UnitLayout>& units, int shard_rank, const OptimOptions& options,
                           const std::vector<at::Tensor>& masters, int threads)
    : options_(options), threads_(std::max(1, threads)) {
  for (size_t u = 0; u < units.size(); ++u) {
    m_.push_back(at::zeros_like(masters[u]));
    v_.push_back(at::zeros_like(masters[u]));
    std::vector<ElementRange> decayed;
    for (const ParamSlot& slot : units[u].params) {
      if (slot.spec.shape.size() < 2) continue;  // norms and biases: no decay
      const SlotOverlap part = overlap(slot, units[u].shard_offset(shard_rank), units[u].shard_numel);
      if (part.length > 0) decayed.push_back({part.range_offset, part.length});
    }
    decayed_.push_back(decayed);
  }
}

int64_t ShardedAdamW::state_bytes() const {
  int64_t bytes = 0;
  for (size_t u = 0; u < m_.size(); ++u) bytes += static_cast<int64_t>(m_[u].nbytes() + v_[u].nbytes());
  return bytes;
}

void ShardedAdamW::step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr) {
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  const AdamWScalars host_scalars{static_cast<float>(options_.beta1), static_cast<float>(1.0 - options_.beta1),
                                  static_cast<float>(options_.beta2), static_cast<float>(1.0 - options_.beta2),
                                  static_cast<float>(options_.eps), static_cast<float>(lr / correction1),
                                  static_cast<float>(std::sqrt(correction2)),
                                  static_cast<float>(1.0 - lr * options_.weight_decay)};
  for (size_t u = 0; u < masters.size(); ++u) {
    at::Tensor& p = masters[u];
    if (options_.offload == "cpu" || p.is_cpu()) {  // fused, threaded, no temporaries
      // Without weight decay the decay factor is exactly 1.
      host_step(p, m_[u], v_[u], grads[u], decayed_[u], host_scalars, threads_);
      continue;
    }
    if (options_.weight_decay != 0.0) {
      for (const ElementRange& range : decayed_[u]) {
        p.narrow(0, range.offset, range.length).mul_(1.0 - lr * options_.weight_decay);
      }
    }
    m_[u].mul_(options_.beta1).add_(grads[u], 1.0 - options_.beta1);
    v_[u].mul_(options_.beta2).addcmul_(grads[u], grads[u], 1.0 - options_.beta2);
    const at::Tensor denominator = (v_[u].sqrt() / std::sqrt(correction2)).add_(options_.eps);
    p.addcdiv_(m_[u], denominator, -lr / correction1);
  }
}

double clip_grad_norm(std::vector<at::Tensor>& grads, double max_norm, Communicator& group) {
  // Sum of squares in fp64 (the clip scale feeds Adam, which amplifies tiny differences), a
  // block at a time so no full-size fp64 copy is made; summed on the grads' device so a GPU
  // step syncs once, and the collective gets a tensor where its backend wants it.
  constexpr int64_t kBlock = 1 << 20;
  const at::Device device = grads.empty() ? at::Device(at::kCPU) : grads.front().device();
  at::Tensor squares = at::zeros({1}, at::TensorOptions(at::kDouble).device(device));
  for (const auto& grad : grads) {
    for (int64_t first = 0; first < grad.numel(); first += kBlock) {
      const at::Tensor block = grad.narrow(0, first, std::min(kBlock, grad.numel() - first)).to(at::kDouble);
      squares += block.dot(block);
    }
  }
  group.all_reduce(squares, ReduceOp::sum);
  const double norm = std::sqrt(squares.item<double>());
  if (max_norm > 0.0) {
    const double scale = max_norm / (norm + 1e-6);
    if (scale < 1.0) {
      for (auto& grad : grads) grad.mul_(scale);
    }
  }
  return norm;
}

}  // namespace st
