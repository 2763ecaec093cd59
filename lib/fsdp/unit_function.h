// One FSDP unit as an autograd node. Forward gathers the unit's parameters, runs lib/model's
// unit forward and keeps what the unit's recompute policy says: only its input (full), also
// its matmul outputs (selective), or its whole graph (none, and the head). Backward re-gathers
// where needed, recomputes, and writes every parameter's gradient into its target (the fp32
// shard or a reduce-scatter buffer; FsdpModel::grad_targets) as autograd makes it
// (gradient_route.h) before returning the input's. Targets are taken when backward starts.
#pragma once

#include <ATen/core/ivalue.h>
#include <ATen/core/Tensor.h>

#include <cstddef>

#include "fsdp/router_tally.h"
#include "model/llama_units.h"

namespace st {

class FsdpModel;

// One micro-batch's inputs, shared by handle by every unit of a pass and kept by each unit's
// node until its backward (two forwards may precede their backwards).
struct HeldBatch : torch::CustomClassHolder {
  explicit HeldBatch(TokenBatch batch) : batch(std::move(batch)) {}
  const TokenBatch batch;
  // A differentiated forward of a model with experts whose batch has token weights: the sparse
  // units' routing, and in their backward the gradient of their router probabilities.
  c10::intrusive_ptr<RouterTally> tally;
};

// Unit `unit` of `model` on `input` (the previous unit's output; an empty tensor for the
// embedding). `anchor` is an empty tensor that requires grad, so the embedding unit (whose
// real input, the token ids, needs none) still gets a backward call.
at::Tensor apply_unit(FsdpModel& model, size_t unit, const at::Tensor& input, const at::Tensor& anchor,
                      const c10::intrusive_ptr<HeldBatch>& batch);

}  // namespace st
