#include "optim/sharded_adamw.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "optim/adamw_host.h"
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
  const AdamWScalars scalars = adamw_scalars(options_, lr, steps_);
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
