#include "optim/sharded_adamw.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

#include "optim/adamw_host.h"
#include "util/check.h"
#include "util/dynamic_quant.h"
#include "util/errors.h"
#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/adamw8bit.h"
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
StCopyDtype copy_dtype_of(const at::Tensor& copy) {
  if (!copy.defined()) return ST_COPY_NONE;
  return copy.scalar_type() == at::kBFloat16 ? ST_COPY_BF16 : ST_COPY_FP16;
}

// The update of one GPU shard by cuda/'s fused kernel, writing `copy` (the compute-dtype
// shard; undefined = none) in the same pass.
void device_step(at::Tensor& master, at::Tensor& exp_avg, at::Tensor& exp_avg_sq, const at::Tensor& grad,
                 const at::Tensor& grad_scale, const at::Tensor& copy, const std::vector<ElementRange>& decayed, const AdamWScalars& scalars) {
  const StCopyDtype copy_dtype = copy_dtype_of(copy);
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

// The same with 8-bit moments: one launch over the shard (blocks must not be split), the
// decayed ranges in device memory.
void device_step_8bit(at::Tensor& master, Moments8bit& moments, const at::Tensor& grad, const at::Tensor& grad_scale,
                      const at::Tensor& copy, const at::Tensor& decayed, const at::Tensor& signed_map,
                      const at::Tensor& unsigned_map, const AdamWScalars& scalars) {
  ST_CHECK_CUDA(st_adamw8bit(master.data_ptr<float>(), moments.m_codes.data_ptr<uint8_t>(),
                             moments.m_absmax.data_ptr<float>(), moments.v_codes.data_ptr<uint8_t>(),
                             moments.v_absmax.data_ptr<float>(), grad.data_ptr<float>(),
                             grad_scale.defined() ? grad_scale.data_ptr<float>() : nullptr,
                             signed_map.data_ptr<float>(), unsigned_map.data_ptr<float>(), decayed.data_ptr<int64_t>(),
                             static_cast<int>(decayed.numel() / 2), copy.defined() ? copy.data_ptr() : nullptr,
                             copy_dtype_of(copy), master.numel(), scalars, compat::current_cuda_stream()));
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
  for (size_t u = 0; u < masters.size(); ++u) {
    const at::Tensor& master = masters[u];
    if (options_.name == OptimizerName::adamw) {
      m_.push_back(at::zeros_like(master));
      v_.push_back(at::zeros_like(master));
      continue;
    }
    if (master.numel() % kDynamicBlockSize != 0) {
      throw ConfigError("optim.name = adamw8bit: a shard of " + std::to_string(master.numel()) +
                        " elements is not whole blocks of 256 (lay the units out with shard_multiple_of)");
    }
    coded_.push_back(Moments8bit::zeros(master.numel(), master.device()));
    if (master.is_cpu()) continue;
    std::vector<int64_t> pairs;
    for (const ElementRange& range : decayed_[u]) pairs.insert(pairs.end(), {range.offset, range.length});
    decayed_on_device_.resize(u + 1);
    decayed_on_device_[u] = at::tensor(pairs.empty() ? std::vector<int64_t>{0, 0} : pairs, at::kLong).to(master.device());
    if (signed_map_.defined()) continue;
    signed_map_ = dynamic_map(DynamicMap::signed_values).to(master.device());
    unsigned_map_ = dynamic_map(DynamicMap::unsigned_values).to(master.device());
  }
}

int64_t ShardedAdamW::state_bytes() const {
  int64_t bytes = 0;
  for (size_t u = 0; u < m_.size(); ++u) bytes += static_cast<int64_t>(m_[u].nbytes() + v_[u].nbytes());
  for (const Moments8bit& moments : coded_) bytes += moments.bytes();
  return bytes;
}

void ShardedAdamW::begin_step(double lr, const at::Tensor& grad_scale) {
  ++steps_;
  lr_ = lr;
  scalars_ = adamw_scalars(options_, lr, steps_);
  grad_scale_ = grad_scale;
  const bool host_resident = options_.offload == Offload::cpu ||
                             (!m_.empty() && m_.front().is_cpu()) || (!coded_.empty() && coded_.front().m_codes.is_cpu());
  // Host updates read the factor once (offload copies the gradients anyway).
  host_grad_scale_ = grad_scale.defined() && host_resident ? grad_scale.to(at::kCPU).data_ptr<float>()[0] : 1.0f;
}

bool ShardedAdamW::step_unit(size_t u, at::Tensor& p, const at::Tensor& reduced, const at::Tensor& compute_copy) {
  const bool host_resident = options_.offload == Offload::cpu || p.is_cpu();
  // bf16 gradient shards (train.reduce_dtype) are updated from fp32, one unit at a time.
  const at::Tensor grad = reduced.scalar_type() == at::kFloat ? reduced : reduced.to(at::kFloat);
  if (options_.name == OptimizerName::adamw8bit) {
    if (host_resident) {
      adamw8bit_host_step(p, coded_[u], grad, host_grad_scale_, decayed_[u], scalars_, threads_);
      return false;
    }
#if ST_HAVE_CUDA
    device_step_8bit(p, coded_[u], grad, grad_scale_, compute_copy, decayed_on_device_[u], signed_map_, unsigned_map_,
                     scalars_);
    return compute_copy.defined();
#else
    throw ConfigError("optim.name = adamw8bit on a GPU needs shardtune built with CUDA");
#endif
  }
  if (host_resident) {  // fused, threaded, no temporaries
    host_step(p, m_[u], v_[u], grad, host_grad_scale_, decayed_[u], scalars_, threads_);
    return false;
  }
#if ST_HAVE_CUDA
  if (fused_kernel_) {
    device_step(p, m_[u], v_[u], grad, grad_scale_, compute_copy, decayed_[u], scalars_);
    return compute_copy.defined();
  }
#endif
  const double correction1 = 1.0 - std::pow(options_.beta1, static_cast<double>(steps_));
  const double correction2 = 1.0 - std::pow(options_.beta2, static_cast<double>(steps_));
  reference_step(p, m_[u], v_[u], grad, grad_scale_, decayed_[u], options_, lr_, correction1, correction2);
  return false;
}

bool ShardedAdamW::step(std::vector<at::Tensor>& masters, const std::vector<at::Tensor>& grads, double lr,
                       const at::Tensor& grad_scale, const std::vector<at::Tensor>& compute_copies) {
  begin_step(lr, grad_scale);
  bool copies_written = !compute_copies.empty();
  for (size_t u = 0; u < masters.size(); ++u) {
    const bool written = step_unit(u, masters[u], grads[u], compute_copies.empty() ? at::Tensor() : compute_copies[u]);
    copies_written = copies_written && written;
  }
  return copies_written;
}

}  // namespace st
