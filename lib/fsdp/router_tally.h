// The router's load-balancing loss of a mixture-of-experts model, as transformers computes it
// (load_balancing_loss_func) and TRL's trainers add it: over every sparse layer's routing of the
// forward's non-padding tokens, E x sum over experts of F_e x P_e, F_e the share of the top-k
// picks that went to expert e and P_e its mean router probability, both over (sparse layers x
// tokens). Each rank's over its own micro-batch, as each of TRL's data-parallel processes takes
// it over its own (the trainer averages them over the ranks, as DDP averages the gradients).
//
// The units of a differentiated forward each add their layer's routing to the forward's tally;
// router_loss then makes the loss of it as an autograd node after the model's output, whose
// backward (which runs before any unit's) leaves the gradient of the router probabilities in the
// tally for each sparse unit's backward to add to its own (unit_function.cpp). The gradient
// flows through the probabilities only: the picks are a top-k.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/custom_class.h>

#include <vector>

#include "distributed/communicator.h"
#include "hf/model_config.h"
#include "model/moe_block.h"

namespace st {

struct RouterTally : torch::CustomClassHolder {
  // `token_weights` [N] fp32 on the device (TokenBatch::token_weights).
  RouterTally(const ModelConfig& config, at::Tensor token_weights);

  // Layer `layer`'s routing of the forward's tokens (a sparse layer's).
  void add(int64_t layer, const Routing& routing);
  // What a sparse unit's backward sends back through its router probabilities [N, E]; undefined
  // while no loss was made of this tally, or it has no gradient.
  at::Tensor probability_grad() const;

  at::Tensor token_weights;  // [N]
  at::Tensor picks;          // [L, E] fp32: weighted top-k picks per sparse layer and expert
  at::Tensor probabilities;  // [L, E] fp32: weighted router probabilities, summed over tokens (no graph)
  at::Tensor expert_grad;    // [E]: d loss / d p_e of a token of weight 1; set by the loss's backward
  std::vector<int64_t> slot_of_layer;  // a sparse layer's row; -1 for a dense one
  int64_t experts = 0;
};

// One forward's loss on this rank.
struct RouterLoss {
  at::Tensor loss;   // scalar, differentiable (through the routers, in the units' backward)
  at::Tensor picks;  // [L, E]: the top-k picks of every rank's tokens (each sparse layer's expert load)
};

// Collective over `data_parallel` (each group in turn; null ones skipped), for the picks only.
// `output` is the forward's output: the loss's node comes after it, so its backward runs before
// the units'.
RouterLoss router_loss(const c10::intrusive_ptr<RouterTally>& tally, const at::Tensor& output,
                       const std::vector<Communicator*>& data_parallel);

}  // namespace st
