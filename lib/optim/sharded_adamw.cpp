#include "optim/sharded_adamw.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <thread>

#include "util/check.h"
#include "util/errors.h"
#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/fused_adamw.h"
#include "util/check_cuda.h"
#else
#include "cuda/adamw_scalars.h"
#endif

namespace st {
namespace {

using AdamWScalars = StAdamWScalars;

// The fused update of elements [begin, end): decay, moments, parameter, in one pass.
void fused_adamw(float* p, float* m, float* v, const float* g, float grad_scale, int64_t begin, int64_t end,
                 const AdamWScalars& s, bool decay) {
  for (int64_t i = begin; i < end; ++i) {
    const float grad = g[i] * grad_scale;
    if (decay) p[i] *= s.decay_factor;
    m[i] = m[i] * s.beta1 + s.one_minus_beta1 * grad;
    v[i] = v[i] * s.beta2 + s.one_minus_beta2 * grad * grad;
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

// The update of one host-resident shard.
void host_step(at::Tensor& master, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
               float grad_scale, const std::vector<ElementRange>& decayed, const AdamWScalars& scalars, int threads) {
  const at::Tensor host_grad = grad.to(at::kCPU).contiguous();
  float* p = master.data_ptr<float>();
  float* m = exp_avg.data_ptr<float>();
  float* v = exp_avg_sq.data_ptr<float>();
  const float* g = host_grad.data_ptr<float>();
  parallel_blocks(master.numel(), threads, [&](int64_t begin, int64_t end) {
    for_each_segment(begin, end, decayed, [&](int64_t first, int64_t last, bool decay) {
      fused_adamw(p, m, v, g, grad_scale, first, last, scalars, decay);
    });
  });
}

#if ST_HAVE_CUDA
// The update of one GPU shard by cuda/'s fused kernel, writing `copy` (the compute-dtype
// shard; undefined = none) in the same pass.
void device_step(at::Tensor& master, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                 const at::Tensor& grad_scale, const at::Tensor& copy, const std::vector<ElementRange>& decayed, const AdamWScalars& scalars) {
  StCopyDtype copy_dtype = ST_COPY_NONE;
  if (copy.defined()) copy_dtype = copy.scalar_type() == at::kBFloat16 ? ST_COPY_BF16 : ST_COPY_FP16;
  const cudaStream_t stream = compat::current_cuda_stream();
  for_each_segment(0, master.numel(), decayed, [&](int64_t first, int64_t last, bool decay) {
    AdamWScalars segment = scalars;
    if (!decay) segment.decay_factor = 1.0f;
    void* copy_at = copy.defined() ? static_cast<char*>(copy.data_ptr()) + first * copy.element_size() : nullptr;
    ST_CHECK_CUDA(st_fused_adamw(master.data_ptr<float>() + first, exp_avg.data_ptr<float>() + first,
                                 exp_avg_sq.data_ptr<float>() + first, grad.data_ptr<float>() + first,
                                 grad_scale.defined() ? grad_scale.data_ptr<float>() : nullptr, copy_at,
                                 copy_dtype, last - first, segment, stream));
  });
}
#endif

// The libtorch op sequence of torch.optim.AdamW (foreach=False) on one shard: the GPU path
// without cuda/'s kernel, and the fused kernel's reference.
void reference_step(at::Tensor& p, at::Tensor& m, at::Tensor& v, const at::Tensor& unscaled_grad,
                    const at::Tensor& grad_scale, const std::vector<ElementRange>& decayed, const OptimOptions& o, double lr, double correction1,
                    double correction2) {
  const at::Tensor grad = grad_scale.defined() ? unscaled_grad * grad_scale : unscaled_grad;
  if (o.weight_decay != 0.0) {
    for (const ElementRange& range : decayed) p.narrow(0, range.offset, range.length).mul_(1.0 - lr * o.weight_decay);
  }
  m.mul_(o.beta1).add_(grad, 1.0 - o.beta1);
  v.mul_(o.beta2).addcmul_(grad, grad, 1.0 - o.beta2);
  const at::Tensor denominator = (v.sqrt() / std::sqrt(correction2)).add_(o.eps);
  p.addcdiv_(m, denominator, -lr / correction1);
}

}  // namespace

ShardedAdamW::ShardedAdamW(DecayedRanges decayed, const OptimOptions& options, const std::vector<at::Tensor>& masters,
                           int threads)
    : options_(options), threads_(std::max(1, threads)), decayed_(std::move(decayed)) {
  ST_ASSERT(decayed_.size() == masters.size(), "ShardedAdamW: one decayed-range list per master shard");
  for (const at::Tensor& master : masters) {
    m_.push_back(at::zeros_like(master));
    v_.push_back(at::zeros_like(master));
  }
}

int64_t ShardedAdamW::state_bytes() const {
  int64_t bytes = 0;
  for (size_t u = 0; u < m_.size(); ++u) bytes += static_cast<int64_t>(m_[u].nbytes() + v_[u].nbytes());
  return bytes;
}

bool ShardedAdamW::step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr,
                       const at::Tensor& grad_scale, const std::vector<at::Tensor>& compute_copies) {
  ++steps_;
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  const AdamWScalars scalars{static_cast<float>(options_.beta1), static_cast<float>(1.0 - options_.beta1),
                             static_cast<float>(options_.beta2), static_cast<float>(1.0 - options_.beta2),
                             static_cast<float>(options_.eps), static_cast<float>(lr / correction1),
                             static_cast<float>(std::sqrt(correction2)),
                             static_cast<float>(1.0 - lr * options_.weight_decay)};
  bool copies_written = !compute_copies.empty();
  const auto host_resident = [&](const at::Tensor& master) { return options_.offload == Offload::cpu || master.is_cpu(); };
  float host_grad_scale = 1.0f;  // host updates read the factor once (offload copies the gradients anyway)
  if (grad_scale.defined() && std::any_of(masters.begin(), masters.end(), host_resident)) {
    host_grad_scale = grad_scale.to(at::kCPU).data_ptr<float>()[0];
  }
  for (size_t u = 0; u < masters.size(); ++u) {
    at::Tensor& p = masters[u];
    if (host_resident(p)) {  // fused, threaded, no temporaries
      // Without weight decay the decay factor is exactly 1.
      host_step(p, m_[u], v_[u], grads[u], host_grad_scale, decayed_[u], scalars, threads_);
      copies_written = false;
      continue;
    }
#if ST_HAVE_CUDA
    if (fused_kernel_) {
      device_step(p, m_[u], v_[u], grads[u], grad_scale, compute_copies.empty() ? at::Tensor() : compute_copies[u], decayed_[u],
                  scalars);
      continue;
    }
#endif
    reference_step(p, m_[u], v_[u], grads[u], grad_scale, decayed_[u], options_, lr, correction1, correction2);
    copies_written = false;
  }
  return copies_written;
}

}  // namespace st
