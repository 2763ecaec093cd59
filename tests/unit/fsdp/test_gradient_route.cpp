// GradientRoute: routed parameters get autograd's own gradients, written (or added) into their
// targets' flats; each is written as soon as it is complete, before backward moves on to the
// layers below; a parameter the loss does not reach reads zero where it was to be overwritten.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <limits>
#include <vector>

#include "fsdp/gradient_route.h"

namespace st {
namespace {

constexpr int64_t kWidth = 6;
constexpr int kLayers = 3;

// Layer i's weight [kWidth, kWidth] lives at [i * kWidth^2, (i + 1) * kWidth^2) of a flat.
at::Tensor weight_in(const at::Tensor& flat, int layer) {
  return flat.narrow(0, layer * kWidth * kWidth, kWidth * kWidth).view({kWidth, kWidth});
}

// Sits between layer `layer` and the one above it; records, on its way back, whether the
// layer above has its gradient written already (its destination was filled with NaN).
std::vector<bool> written_when_passed;
at::Tensor watched_flat;

class Probe : public torch::autograd::Function<Probe> {
 public:
  static at::Tensor forward(torch::autograd::AutogradContext* context, const at::Tensor& x, int64_t layer) {
    context->saved_data["layer"] = layer;
    return x.clone();
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* context,
                                               torch::autograd::tensor_list grads) {
    const int layer = static_cast<int>(context->saved_data["layer"].toInt());
    if (layer + 1 < kLayers) {
      written_when_passed.at(layer + 1) = !at::isnan(weight_in(watched_flat, layer + 1)).any().item<bool>();
    }
    return {grads[0], at::Tensor()};
  }
};

// x [4, kWidth] through kLayers tanh(x @ W) layers, a probe after each; the loss weights the
// output by fixed values so every gradient is distinct.
at::Tensor run_layers(const at::Tensor& x, const std::vector<at::Tensor>& weights) {
  at::Tensor y = x;
  for (int layer = 0; layer < kLayers; ++layer) y = Probe::apply(at::tanh(at::matmul(y, weights[layer])), layer);
  return (y * at::linspace(-1.0, 2.0, y.numel()).view(y.sizes())).sum();
}

struct Inputs {
  at::Tensor x, flat;
  Inputs() {
    at::manual_seed(3);
    x = at::randn({4, kWidth});
    flat = at::randn({kLayers * kWidth * kWidth}) * 0.5;
  }
};

TEST(GradientRoute, RoutedGradientsAreAutogradsOwnAndWrittenBeforeBackwardMovesOn) {
  const Inputs setup;
  // Reference: the weights as ordinary leaves.
  std::vector<at::Tensor> leaves;
  for (int layer = 0; layer < kLayers; ++layer) leaves.push_back(weight_in(setup.flat, layer).detach().requires_grad_(true));
  const at::Tensor x_leaf = setup.x.detach().requires_grad_(true);
  written_when_passed.assign(kLayers, false);
  watched_flat = at::full({kLayers * kWidth * kWidth}, std::numeric_limits<float>::quiet_NaN());
  torch::autograd::backward({run_layers(x_leaf, leaves)});

  // Routed: every weight routed before the forward runs, as a unit routes all its parameters.
  const auto route = c10::make_intrusive<GradientRoute>();
  std::vector<at::Tensor> routed;
  for (int layer = 0; layer < kLayers; ++layer) {
    routed.push_back(route->route(weight_in(setup.flat, layer), 0, layer * kWidth * kWidth));
  }
  route->resolve({watched_flat}, {true});
  const at::Tensor x = setup.x.detach().requires_grad_(true);
  at::Tensor loss;
  {
    at::AutoGradMode enable(true);
    loss = run_layers(x, routed);
  }
  const auto results = torch::autograd::grad({loss}, {x, route->anchor()}, {}, false, false, true);
  route->zero_unreached();

  for (int layer = 0; layer < kLayers; ++layer) {
    EXPECT_TRUE(at::equal(weight_in(watched_flat, layer), leaves[layer].grad())) << "layer " << layer;
  }
  EXPECT_TRUE(at::equal(results[0], x_leaf.grad()));
  // The probe below layer i runs after layer i's matmul backward, before the layers below.
  for (int layer = 1; layer < kLayers; ++layer) {
    EXPECT_TRUE(written_when_passed[layer]) << "layer " << layer << "'s gradient waited for the layers below";
  }
}

TEST(GradientRoute, AddsWhereNotOverwritingAndZeroesWhatNoGradientReached) {
  const Inputs setup;
  for (const bool overwrite : {true, false}) {
    const auto route = c10::make_intrusive<GradientRoute>();
    const at::Tensor used = route->route(weight_in(setup.flat, 0), 0, 0);
    route->route(weight_in(setup.flat, 1), 0, kWidth * kWidth);  // the loss never reads it
    const at::Tensor before = at::full({2 * kWidth * kWidth}, 5.0);
    at::Tensor flat = before.clone();
    route->resolve({flat}, {overwrite});
    at::Tensor loss;
    {
      at::AutoGradMode enable(true);
      loss = at::matmul(setup.x, used).sum();
    }
    torch::autograd::grad({loss}, {route->anchor()}, {}, false, false, true);
    route->zero_unreached();
    const at::Tensor expected_used = setup.x.sum(0).unsqueeze(1).expand({kWidth, kWidth}).reshape({-1});
    const at::Tensor untouched = before.narrow(0, kWidth * kWidth, kWidth * kWidth);
    EXPECT_TRUE(at::allclose(flat.narrow(0, 0, kWidth * kWidth), overwrite ? expected_used : expected_used + 5.0));
    EXPECT_TRUE(at::equal(flat.narrow(0, kWidth * kWidth, kWidth * kWidth), overwrite ? at::zeros_like(untouched) : untouched));
  }
}

TEST(GradientRoute, RefusesAGradientBeforeItsTargetsAreKnown) {
  const Inputs setup;
  const auto route = c10::make_intrusive<GradientRoute>();
  const at::Tensor used = route->route(weight_in(setup.flat, 0), 0, 0);
  at::Tensor loss;
  {
    at::AutoGradMode enable(true);
    loss = used.sum();
  }
  EXPECT_THROW(torch::autograd::grad({loss}, {route->anchor()}, {}, false, false, true), std::exception);
}

}  // namespace
}  // namespace st
