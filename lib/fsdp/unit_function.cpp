#include "fsdp/unit_function.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>

#include "fsdp/fsdp_model.h"
#include "fsdp/gradient_route.h"
#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// A unit run with another's parameters takes the lm_head weight (a tied head) or the experts (a
// sparse layer) of it.
bool takes(const FsdpModel& model, size_t needed_index, const ParamSlot& slot) {
  return needed_index == 0 || slot.spec.key.is(lm_head_param(model.config())) || slot.spec.key.expert >= 0;
}

// A unit's parameters bound by key for the model: views of the gathered flats (a frozen base's
// never require grad; trained ones are left out while the adapters are off). With a `route`,
// each trained one (target i for needed unit i) sends its gradient there, except those the
// model writes itself (`sinks`).
UnitWeights unit_inputs(const FsdpModel& model, const std::vector<size_t>& needed, const UnitFlats& flats,
                        GradientRoute* route = nullptr, const UnitGradSinks& sinks = {}) {
  UnitWeights params;
  for (size_t i = 0; i < flats.frozen.size(); ++i) {
    const UnitLayout& layout = model.base().units[needed[i]];
    const int64_t first = model.gathered_first(layout, needed[i]);
    for (const ParamSlot& slot : layout.params) {
      const at::Tensor view = takes(model, i, slot) ? gathered_param_view(flats.frozen[i], slot, first) : at::Tensor();
      if (view.defined()) params.bind(slot.spec.key, view);
    }
  }
  if (!model.adapters_on()) return params;
  for (size_t i = 0; i < needed.size(); ++i) {
    const UnitLayout& layout = model.units()[needed[i]];
    const int64_t first = model.gathered_first(layout, needed[i]);
    for (const ParamSlot& slot : layout.params) {
      at::Tensor view = takes(model, i, slot) ? gathered_param_view(flats.trainable[i], slot, first) : at::Tensor();
      if (!view.defined()) continue;
      if (route && !sinks.writes(slot.spec.key)) view = route->route(view, i, slot.offset - first);
      params.bind(slot.spec.key, view);
    }
  }
  return params;
}

// The route's destinations are the unit's targets.
void resolve(GradientRoute& route, const std::vector<FsdpModel::GradTarget>& targets) {
  std::vector<at::Tensor> flats;
  std::vector<bool> overwrite;
  for (const FsdpModel::GradTarget& target : targets) {
    flats.push_back(target.flat);
    overwrite.push_back(target.overwrite);
  }
  route.resolve(std::move(flats), std::move(overwrite));
}

// The model writes the lm_head's gradient itself when it can sum it in fp32 (an fp32
// destination and a compute dtype whose log-prob reduction is fp32).
UnitGradSinks head_sinks(const FsdpModel& model, size_t unit, const std::vector<FsdpModel::GradTarget>& targets) {
  UnitGradSinks sinks;
  if (unit_role(model.config(), unit) != UnitRole::head || model.options().compute_dtype == at::kDouble) {
    return sinks;
  }
  const ModelParam head = lm_head_param(model.config());
  for (const FsdpModel::GradTarget& target : targets) {
    for (const ParamSlot& slot : model.units()[target.unit].params) {
      if (!slot.spec.key.is(head)) continue;
      sinks[head] = target.flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      sinks.overwrite = target.overwrite;
    }
  }
  return sinks;
}

// Backward through `output` (upstream `grad`) and, in a sparse unit whose forward's router loss
// has a gradient, its router probabilities: the routed parameters' gradients go to their
// targets as autograd makes them; returns the gradient of `input`.
at::Tensor differentiate(const at::Tensor& output, const at::Tensor& grad, GradientRoute& route,
                         const at::Tensor& input, const at::Tensor& probs = {}, const at::Tensor& probs_grad = {}) {
  tensor_list outputs{output}, grads{grad};
  if (probs.defined() && probs_grad.defined()) {
    outputs.push_back(probs);
    grads.push_back(probs_grad);
  }
  const auto results = torch::autograd::grad(outputs, {input, route.anchor()}, grads, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
  route.zero_unreached();
  return results.front();
}

// A sparse layer's unit in a forward that tallies its routing (router_tally.h).
bool routes(const FsdpModel& model, size_t unit, const HeldBatch& held) {
  return held.tally && unit_role(model.config(), unit) == UnitRole::layer &&
         model.config().sparse_layer(static_cast<int64_t>(unit) - 1);
}

// The node of unit_function.h; the model, unit and batch travel as addresses (saved_data holds
// the batch's tensors for backward).
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, const at::Tensor& anchor,
                            int64_t model_address, int64_t unit, int64_t held_batch_address) {
    auto& model = *reinterpret_cast<FsdpModel*>(model_address);
    const auto& held = *reinterpret_cast<const c10::intrusive_ptr<HeldBatch>*>(held_batch_address);
    const TokenBatch& batch = held->batch;
    (void)anchor;
    const auto u = static_cast<size_t>(unit);
    context->saved_data["model"] = model_address;
    context->saved_data["unit"] = unit;
    context->saved_data["batch"] = c10::IValue::make_capsule(held);
    context->save_for_backward({input});
    if (model.differentiating()) model.note_saved_input(static_cast<int64_t>(input.nbytes()));
    const std::vector<size_t> needed = model.units_needed_by(u);
    const UnitFlats flats = model.acquire_for_forward(u);
    const Recompute policy = model.recompute_of(u);
    Routing routing;
    Routing* routed = routes(model, u, *held) ? &routing : nullptr;
    at::Tensor output;
    if (model.differentiating() && policy == Recompute::none && unit_role(model.config(), u) != UnitRole::embedding) {
      // Keep the graph, its parameters routed; the targets are resolved when backward starts,
      // except the head's: the model writes the lm_head's gradient into a destination it
      // takes now.
      const auto route = c10::make_intrusive<GradientRoute>();
      UnitGradSinks sinks;
      if (unit_role(model.config(), u) == UnitRole::head) {
        const std::vector<FsdpModel::GradTarget> targets = model.grad_targets(u);
        resolve(*route, targets);
        sinks = head_sinks(model, u, targets);
      }
      const UnitWeights params = unit_inputs(model, needed, flats, route.get(), sinks);
      const at::Tensor input_leaf = input.detach().requires_grad_(true);
      at::AutoGradMode enable(true);
      const at::Tensor kept =
          llama_unit_forward(model.config(), u, params, input_leaf, batch, nullptr, sinks, routed);
      context->saved_data["kept"] = kept;
      if (routed) context->saved_data["kept_probs"] = routing.probs;
      context->saved_data["kept_input"] = input_leaf;
      context->saved_data["route"] = c10::IValue::make_capsule(route);
      output = kept.detach();
    } else if (model.differentiating() && policy == Recompute::selective) {
      ActivationCache cache;
      output = llama_unit_forward(model.config(), u, unit_inputs(model, needed, flats), input, batch, &cache,
                                  {}, routed);
      context->saved_data["recorded"] = cache.take_recorded();
    } else {
      output = llama_unit_forward(model.config(), u, unit_inputs(model, needed, flats), input, batch, nullptr,
                                  {}, routed);
    }
    if (routed) held->tally->add(static_cast<int64_t>(u) - 1, routing);
    model.finish_forward(u);
    return output;  // grad mode is off here: what the unit keeps is what the context holds
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    auto& model = *reinterpret_cast<FsdpModel*>(context->saved_data["model"].toInt());
    const auto u = static_cast<size_t>(context->saved_data["unit"].toInt());
    const auto held = c10::static_intrusive_pointer_cast<HeldBatch>(context->saved_data["batch"].toCapsule());
    const TokenBatch& batch = held->batch;
    const at::Tensor saved_input = context->get_saved_variables()[0];
    const UnitRole role = unit_role(model.config(), u);
    const bool kept = context->saved_data.count("kept") > 0;
    const std::vector<size_t> needed = model.units_needed_by(u);
    const UnitFlats flats = model.acquire_for_backward(u);
    const at::Tensor probs_grad = routes(model, u, *held) ? held->tally->probability_grad() : at::Tensor();

    std::vector<FsdpModel::GradTarget> targets;
    at::Tensor input_grad;
    if (role == UnitRole::embedding) {
      targets = model.grad_targets(u);
      if (model.units()[u].params.empty()) {  // an adapter run's: the frozen table needs no gradient
        model.finish_backward(u, targets);
        return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
      }
      UnitGradSinks sinks;
      sinks.overwrite = targets.front().overwrite;
      const ParamSlot& slot = model.units()[u].params.front();
      sinks[ModelParam::embed] = targets.front().flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
      embedding_backward(model.config(), batch, grads[0], sinks);
    } else if (kept) {
      const auto route = c10::static_intrusive_pointer_cast<GradientRoute>(context->saved_data["route"].toCapsule());
      if (route->resolved()) {  // the head's, at its forward: the buffers for finish_backward to reduce
        for (size_t i = 0; i < needed.size(); ++i) {
          targets.push_back({needed[i], route->flat(i), true, model.writes_shards_directly()});
        }
      } else {
        targets = model.grad_targets(u);
        resolve(*route, targets);
      }
      const at::Tensor kept_probs =
          context->saved_data.count("kept_probs") ? context->saved_data["kept_probs"].toTensor() : at::Tensor();
      input_grad = differentiate(context->saved_data["kept"].toTensor(), grads[0], *route,
                                 context->saved_data["kept_input"].toTensor(), kept_probs, probs_grad);
    } else {
      targets = model.grad_targets(u);
      const auto route = c10::make_intrusive<GradientRoute>();
      resolve(*route, targets);
      const UnitWeights params = unit_inputs(model, needed, flats, route.get());
      const at::Tensor input = saved_input.detach().requires_grad_(true);
      std::optional<ActivationCache> cache;
      if (context->saved_data.count("recorded")) cache.emplace(context->saved_data["recorded"].toTensorVector());
      at::Tensor output;
      Routing routing;
      {
        at::AutoGradMode enable(true);
        output = llama_unit_forward(model.config(), u, params, input, batch, cache ? &*cache : nullptr, {},
                                    probs_grad.defined() ? &routing : nullptr);
      }
      input_grad = differentiate(output, grads[0], *route, input, routing.probs, probs_grad);
    }
    model.finish_backward(u, targets);
    return {role == UnitRole::embedding ? at::Tensor() : input_grad, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor apply_unit(FsdpModel& model, size_t unit, const at::Tensor& input, const at::Tensor& anchor,
                      const c10::intrusive_ptr<HeldBatch>& batch) {
  return UnitFunction::apply(input, anchor, reinterpret_cast<int64_t>(&model), static_cast<int64_t>(unit),
                             reinterpret_cast<int64_t>(&batch));
}

}  // namespace st
