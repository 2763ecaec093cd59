#include "fsdp/gradient_route.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <limits>

#include "util/errors.h"

namespace st {
namespace {

// Takes one parameter's gradient, hands it to the route and passes nothing on: its only edge,
// to the route's anchor, exists so that autograd runs it. It runs as soon as its gradient is
// complete (the top priority, as autograd gives its own AccumulateGrad), not after the nodes
// made later in forward: so the gradients never pile up.
class GradientSinkNode : public torch::autograd::Node {
 public:
  GradientSinkNode(c10::intrusive_ptr<GradientRoute> route, size_t sink, const at::Tensor& anchor)
      : Node(std::numeric_limits<uint64_t>::max(), torch::autograd::collect_next_edges(anchor)),
        route_(std::move(route)),
        sink_(sink) {}

  torch::autograd::variable_list apply(torch::autograd::variable_list&& grads) override {
    route_->write(sink_, grads.at(0));
    return {at::Tensor()};
  }
  std::string name() const override { return "GradientSink"; }

 private:
  c10::intrusive_ptr<GradientRoute> route_;
  size_t sink_;
};

}  // namespace

GradientRoute::GradientRoute() : anchor_(at::zeros({}).requires_grad_(true)) {}

at::Tensor GradientRoute::route(const at::Tensor& parameter, size_t target, int64_t offset) {
  sinks_.push_back({target, offset, parameter.numel()});
  at::Tensor routed = parameter.detach();
  auto node = std::make_shared<GradientSinkNode>(c10::intrusive_ptr<GradientRoute>::reclaim_copy(this),
                                                 sinks_.size() - 1, anchor_);
  torch::autograd::set_history(routed, node);
  return routed;
}

void GradientRoute::resolve(std::vector<at::Tensor> flats, std::vector<bool> overwrite) {
  flats_ = std::move(flats);
  overwrite_ = std::move(overwrite);
  resolved_ = true;
}

void GradientRoute::write(size_t index, const at::Tensor& grad) {
  Sink& sink = sinks_.at(index);
  if (!resolved()) throw ModelError("gradient route: a gradient arrived before the unit's targets were resolved");
  if (!grad.defined()) return;
  at::Tensor destination = this->destination(sink);
  if (overwrite_.at(sink.target)) {
    destination.copy_(grad.reshape({-1}));  // fp32 = bf16 in one pass
  } else {
    destination.add_(grad.reshape({-1}));
  }
  sink.reached = true;
}

void GradientRoute::zero_unreached() {
  for (Sink& sink : sinks_) {
    if (!sink.reached && overwrite_.at(sink.target)) destination(sink).zero_();
  }
}

}  // namespace st
