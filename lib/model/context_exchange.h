// Context parallelism's collectives as the model sees them: the ranks that hold the chunks of
// one micro-batch's rows (a context group). The model code knows no ranks: the FSDP layer
// hands in an implementation over its communicator (fsdp/context_group.h), the token batch
// carries it (context_split.h), and the attention and the head call the two differentiable
// operations below.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>

namespace st {

class ContextExchange {
 public:
  virtual ~ContextExchange() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // full = every rank's `part` in rank order (full.size(0) == size() * part.size(0)).
  virtual void all_gather(const at::Tensor& full, const at::Tensor& part) = 0;
  // part = the sum over ranks of this rank's rows of `full`.
  virtual void reduce_scatter_sum(const at::Tensor& part, const at::Tensor& full) = 0;
  // In place: the sum over ranks.
  virtual void all_reduce_sum(const at::Tensor& tensor) = 0;
};

// part [n, ...] -> [size * n, ...], the ranks' parts in rank order. Backward: each rank's
// rows of the gradient, summed over the ranks (every rank's queries read every rank's keys).
at::Tensor gather_context(const std::shared_ptr<ContextExchange>& exchange, const at::Tensor& part);

// Partial values (each rank's share of per-sequence log-probs) -> their sum over the group.
// Backward: the gradient as it is (every rank computes the same loss from the same sums, so each
// part's gradient is the sum's).
at::Tensor sum_over_context(const std::shared_ptr<ContextExchange>& exchange, const at::Tensor& partial);

}  // namespace st
