// Where a unit run's parameter gradients go, one parameter at a time. Each trained parameter
// view is routed through a sink node that writes its gradient into the unit's target flat (an
// fp32 shard or reduce buffer) the moment autograd has it, and frees it: the unit's gradients
// never exist whole in the compute dtype beside the target. The targets are resolved when the
// unit's backward starts, so a unit that keeps its graph from forward (recompute none) holds no
// gradient buffer until then.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/Tensor.h>

#include <cstddef>
#include <vector>

namespace st {

// Made by c10::make_intrusive (its sink nodes share it); travels in an autograd context as a
// capsule from a kept forward to its backward.
class GradientRoute : public torch::CustomClassHolder {
 public:
  GradientRoute();

  // `parameter`'s values (detached) as a tensor whose gradient goes to [offset, offset + numel)
  // of target `target`'s flat.
  at::Tensor route(const at::Tensor& parameter, size_t target, int64_t offset);
  // The leaf every sink reaches: differentiate with respect to it, or the sinks never run.
  const at::Tensor& anchor() const { return anchor_; }

  // The destinations: one flat per target, and whether this run's write replaces what is there
  // (the step's first contribution) or adds to it.
  void resolve(std::vector<at::Tensor> flats, std::vector<bool> overwrite);
  bool resolved() const { return resolved_; }
  const at::Tensor& flat(size_t target) const { return flats_.at(target); }

  // After the backward: a destination no gradient reached is zeroed where it was to be
  // overwritten (a parameter the loss does not depend on has gradient zero).
  void zero_unreached();
  // Called by the sink nodes only.
  void write(size_t sink, const at::Tensor& grad);

 private:
  struct Sink {
    size_t target = 0;
    int64_t offset = 0, numel = 0;
    bool reached = false;
  };
  at::Tensor destination(const Sink& sink) const { return flats_.at(sink.target).narrow(0, sink.offset, sink.numel); }

  at::Tensor anchor_;
  std::vector<Sink> sinks_;
  std::vector<at::Tensor> flats_;
  std::vector<bool> overwrite_;
  bool resolved_ = false;
};

}  // namespace st
