#include "optim/grad_clip.h"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include "util/errors.h"
#include "util/torch_compat.h"
#if ST_HAVE_CUDA
#include "cuda/sum_squares.h"
#include "util/check_cuda.h"
#endif

namespace st {
namespace {

double host_sum_of_squares(const float* x, int64_t n) {
  constexpr int64_t kBlock = 1 << 16;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
  std::vector<double> partial(static_cast<size_t>(blocks), 0.0);
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t block = first; block < last; ++block) {
      double sum = 0.0;
      const int64_t end = std::min(n, (block + 1) * kBlock);
      for (int64_t i = block * kBlock; i < end; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
      partial[static_cast<size_t>(block)] = sum;
    }
  });
  double total = 0.0;
  for (double value : partial) total += value;
  return total;
}

}  // namespace

void add_sum_of_squares(const at::Tensor& values, at::Tensor& sum) {
  // bf16 gradient shards (train.reduce_dtype) are summed from fp32, one shard at a time.
  const at::Tensor x = values.scalar_type() == at::kBFloat16 ? values.to(at::kFloat) : values;
  if (x.scalar_type() != at::kFloat || !x.is_contiguous() || sum.scalar_type() != at::kDouble) {
    throw ModelError("sum of squares: expected a contiguous fp32 or bf16 tensor and an fp64 sum");
  }
#if ST_HAVE_CUDA
  if (x.is_cuda()) {
    ST_CHECK_CUDA(st_sum_squares_fp64(x.data_ptr<float>(), x.numel(), sum.data_ptr<double>(),
                                      compat::current_cuda_stream()));
    return;
  }
#endif
  if (!x.is_cpu()) throw ModelError("sum of squares: no kernel for device " + x.device().str());
  sum.add_(host_sum_of_squares(x.data_ptr<float>(), x.numel()));
}

GradClip global_grad_clip(const std::vector<at::Tensor>& grads, double max_norm, Communicator& group,
                          double gradient_scale) {
  const at::Device device = grads.empty() ? at::Device(at::kCPU) : grads.front().device();
  at::Tensor squares = at::zeros({1}, at::TensorOptions(at::kDouble).device(device));
  for (const at::Tensor& grad : grads) add_sum_of_squares(grad, squares);
  group.all_reduce(squares, ReduceOp::sum);
  GradClip clip;
  clip.norm = squares.sqrt_().mul_(gradient_scale);
  if (max_norm > 0.0) {
    clip.scale = (max_norm / (clip.norm + 1e-6)).clamp_max_(1.0).mul_(gradient_scale).to(at::kFloat);
  } else {
    clip.scale = at::full({1}, gradient_scale, at::TensorOptions(at::kFloat).device(device));
  }
  return clip;
}

}  // namespace st
