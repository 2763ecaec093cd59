#include "fsdp/unit_function.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <optional>

#include "fsdp/fsdp_model.h"
#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The batch travels in the autograd context (two forwards may precede their backwards).
void save_batch(AutogradContext* context, const TokenBatch& batch) {
  std::vector<at::Tensor> tensors{batch.input_ids,        batch.positions.rope.cos, batch.positions.rope.sin,
                                  batch.target_positions, batch.target_ids,         batch.target_slots};
  if (batch.positions.attention_mask.defined()) tensors.push_back(batch.positions.attention_mask);
  context->saved_data["batch"] = tensors;
  context->saved_data["sequences"] = batch.sequences;
  context->saved_data["chunk"] = batch.logp_chunk_tokens;
  context->saved_data["adapter_scale"] = batch.adapter.scale;
  context->saved_data["adapter_dropout"] = batch.adapter.dropout;
  context->saved_data["adapter_seed"] = batch.adapter.dropout_seed;
  const AttentionSpans& spans = batch.positions.spans;
  if (!spans.defined()) return;
  std::vector<at::Tensor> span_tensors{spans.query_offsets, spans.key_offsets};
  if (spans.key_tokens.defined()) span_tensors.push_back(spans.key_tokens);
  context->saved_data["span_tensors"] = span_tensors;
  context->saved_data["query_starts"] = spans.query_starts;
  context->saved_data["key_starts"] = spans.key_starts;
  context->saved_data["span_sizes"] = std::vector<int64_t>{spans.longest_query, spans.longest_key, spans.window};
}

TokenBatch load_batch(AutogradContext* context) {
  const std::vector<at::Tensor> t = context->saved_data["batch"].toTensorVector();
  TokenBatch batch;
  batch.input_ids = t[0];
  batch.positions.rope = {t[1], t[2]};
  batch.target_positions = t[3];
  batch.target_ids = t[4];
  batch.target_slots = t[5];
  if (t.size() > 6) batch.positions.attention_mask = t[6];
  batch.sequences = context->saved_data["sequences"].toInt();
  batch.logp_chunk_tokens = context->saved_data["chunk"].toInt();
  batch.adapter.scale = context->saved_data["adapter_scale"].toDouble();
  batch.adapter.dropout = context->saved_data["adapter_dropout"].toDouble();
  batch.adapter.dropout_seed = context->saved_data["adapter_seed"].toInt();
  if (!context->saved_data.count("span_tensors")) return batch;
  AttentionSpans& spans = batch.positions.spans;
  const std::vector<at::Tensor> span_tensors = context->saved_data["span_tensors"].toTensorVector();
  spans.query_offsets = span_tensors[0];
  spans.key_offsets = span_tensors[1];
  if (span_tensors.size() > 2) spans.key_tokens = span_tensors[2];
  spans.query_starts = context->saved_data["query_starts"].toIntVector();
  spans.key_starts = context->saved_data["key_starts"].toIntVector();
  const std::vector<int64_t> sizes = context->saved_data["span_sizes"].toIntVector();
  spans.longest_query = sizes[0];
  spans.longest_key = sizes[1];
  spans.window = sizes[2];
  return batch;
}

// A parameter as an autograd leaf, and where its gradient goes: its slice of the target flat.
struct Leaf {
  at::Tensor tensor;
  at::Tensor destination;
  bool overwrite = true;
};

// A unit run with another's parameters (a tied head) takes only its lm_head weight.
bool takes(const FsdpModel& model, size_t needed_index, const ParamSlot& slot) {
  return needed_index == 0 || slot.spec.key.is(lm_head_param(model.config()));
}

at::Tensor param_view(const at::Tensor& flat, const ParamSlot& slot) {
  return flat.narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
}

// A unit's parameters bound by key for the model: views of the gathered flats (a frozen base's
// never require grad; trained ones are left out while the adapters are off). With `targets`
// (one per needed unit), each trained one becomes a leaf that requires grad, except those the
// model writes itself (`sinks`); `leaves` gets them for writing their grads back.
UnitWeights unit_inputs(const FsdpModel& model, const std::vector<size_t>& needed, const UnitFlats& flats,
                        const std::vector<FsdpModel::GradTarget>& targets = {}, const UnitGradSinks& sinks = {},
                        std::vector<Leaf>* leaves = nullptr) {
  UnitWeights params;
  for (size_t i = 0; i < flats.frozen.size(); ++i) {
    for (const ParamSlot& slot : model.base().units[needed[i]].params) {
      if (takes(model, i, slot)) params.bind(slot.spec.key, param_view(flats.frozen[i], slot));
    }
  }
  if (!model.adapters_on()) return params;
  for (size_t i = 0; i < needed.size(); ++i) {
    for (const ParamSlot& slot : model.units()[needed[i]].params) {
      if (!takes(model, i, slot)) continue;
      at::Tensor view = param_view(flats.trainable[i], slot);
      if (leaves && !sinks.writes(slot.spec.key)) {
        view = view.detach().requires_grad_(true);
        leaves->push_back({view, targets[i].flat.narrow(0, slot.offset, slot.spec.numel()), targets[i].overwrite});
      }
      params.bind(slot.spec.key, view);
    }
  }
  return params;
}

// The model writes the lm_head's gradient itself when it can sum it in fp32 (an fp32
// destination and a compute dtype whose log-prob reduction is fp32).
UnitGradSinks head_sinks(const FsdpModel& model, size_t unit, const std::vector<FsdpModel::GradTarget>& targets) {
  UnitGradSinks sinks;
  if (unit_role(unit, model.units().size()) != UnitRole::head || model.options().compute_dtype == at::kDouble) {
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

void write_leaf_grads(const std::vector<Leaf>& leaves, const tensor_list& grads) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    at::Tensor destination = leaves[i].destination;
    const at::Tensor& grad = grads[i];
    if (!grad.defined()) {
      if (leaves[i].overwrite) destination.zero_();
    } else if (leaves[i].overwrite) {
      destination.copy_(grad.reshape({-1}));  // fp32 = bf16 in one pass
    } else {
      destination.add_(grad.reshape({-1}));  // fp32 += bf16 in one pass
    }
  }
}

// The leaves' gradients for `output` (upstream `grad`) written to their destinations; returns
// the gradient of `input`.
at::Tensor differentiate(const at::Tensor& output, const at::Tensor& grad, const std::vector<Leaf>& leaves,
                         const at::Tensor& input) {
  std::vector<at::Tensor> wrt;
  for (const Leaf& leaf : leaves) wrt.push_back(leaf.tensor);
  wrt.push_back(input);
  auto results = torch::autograd::grad({output}, wrt, {grad}, /*retain_graph=*/false, /*create_graph=*/false,
                                       /*allow_unused=*/true);
  const at::Tensor input_grad = results.back();
  results.pop_back();
  write_leaf_grads(leaves, results);
  return input_grad;
}

// Kept leaves travel in the autograd context as three parallel lists.
void save_leaves(AutogradContext* context, const std::vector<Leaf>& leaves) {
  std::vector<at::Tensor> tensors, destinations;
  std::vector<int64_t> overwrites;
  for (const Leaf& leaf : leaves) {
    tensors.push_back(leaf.tensor);
    destinations.push_back(leaf.destination);
    overwrites.push_back(leaf.overwrite ? 1 : 0);
  }
  context->saved_data["kept_leaves"] = tensors;
  context->saved_data["kept_destinations"] = destinations;
  context->saved_data["kept_overwrites"] = overwrites;
}

std::vector<Leaf> load_leaves(AutogradContext* context) {
  const std::vector<at::Tensor> tensors = context->saved_data["kept_leaves"].toTensorVector();
  const std::vector<at::Tensor> destinations = context->saved_data["kept_destinations"].toTensorVector();
  const std::vector<int64_t> overwrites = context->saved_data["kept_overwrites"].toIntVector();
  std::vector<Leaf> leaves;
  for (size_t i = 0; i < tensors.size(); ++i) leaves.push_back({tensors[i], destinations[i], overwrites[i] != 0});
  return leaves;
}

// The node of unit_function.h; the model, unit and batch travel as addresses (saved_data holds
// the batch's tensors for backward).
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, const at::Tensor& anchor,
                            int64_t model_address, int64_t unit, int64_t batch_address) {
    auto& model = *reinterpret_cast<FsdpModel*>(model_address);
    const auto& batch = *reinterpret_cast<const TokenBatch*>(batch_address);
    (void)anchor;
    const auto u = static_cast<size_t>(unit);
    const size_t count = model.units().size();
    context->saved_data["model"] = model_address;
    context->saved_data["unit"] = unit;
    save_batch(context, batch);
    context->save_for_backward({input});
    const std::vector<size_t> needed = model.units_needed_by(u);
    const UnitFlats flats = model.acquire_for_forward(u);
    const Recompute policy = model.recompute_of(u);
    at::Tensor output;
    if (model.differentiating() && policy == Recompute::none && unit_role(u, count) != UnitRole::embedding) {
      // Keep the graph: leaves for the parameters and the input, targets fixed now.
      const std::vector<FsdpModel::GradTarget> targets = model.grad_targets(u);
      const UnitGradSinks sinks = head_sinks(model, u, targets);
      std::vector<Leaf> leaves;
      const UnitWeights params = unit_inputs(model, needed, flats, targets, sinks, &leaves);
      const at::Tensor input_leaf = input.detach().requires_grad_(true);
      at::AutoGradMode enable(true);
      const at::Tensor kept = llama_unit_forward(model.config(), u, count, params, input_leaf, batch, nullptr, sinks);
      context->saved_data["kept"] = kept;
      context->saved_data["kept_input"] = input_leaf;
      save_leaves(context, leaves);
      std::vector<at::Tensor> target_flats;
      for (const auto& target : targets) target_flats.push_back(target.flat);
      context->saved_data["targets"] = target_flats;
      output = kept.detach();
    } else if (model.differentiating() && policy == Recompute::selective) {
      ActivationCache cache;
      output = llama_unit_forward(model.config(), u, count, unit_inputs(model, needed, flats), input, batch, &cache);
      context->saved_data["recorded"] = cache.take_recorded();
    } else {
      output = llama_unit_forward(model.config(), u, count, unit_inputs(model, needed, flats), input, batch);
    }
    model.finish_forward(u);
    return output;  // grad mode is off here: what the unit keeps is what the context holds
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    auto& model = *reinterpret_cast<FsdpModel*>(context->saved_data["model"].toInt());
    const auto u = static_cast<size_t>(context->saved_data["unit"].toInt());
    const size_t count = model.units().size();
    const TokenBatch batch = load_batch(context);
    const at::Tensor saved_input = context->get_saved_variables()[0];
    const UnitRole role = unit_role(u, count);
    const bool kept = context->saved_data.count("kept") > 0;
    const std::vector<size_t> needed = model.units_needed_by(u);
    const UnitFlats flats = model.acquire_for_backward(u);

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
      embedding_backward(batch, grads[0], sinks);
    } else if (kept) {
      // The buffers the kept graph writes into, for finish_backward to reduce (leaves carry
      // their own overwrite flags).
      const std::vector<at::Tensor> flats_written = context->saved_data["targets"].toTensorVector();
      for (size_t i = 0; i < needed.size(); ++i) {
        targets.push_back({needed[i], flats_written[i], true, model.writes_shards_directly()});
      }
      input_grad = differentiate(context->saved_data["kept"].toTensor(), grads[0], load_leaves(context),
                                 context->saved_data["kept_input"].toTensor());
    } else {
      targets = model.grad_targets(u);
      std::vector<Leaf> leaves;
      const UnitWeights params = unit_inputs(model, needed, flats, targets, {}, &leaves);
      const at::Tensor input = saved_input.detach().requires_grad_(true);
      std::optional<ActivationCache> cache;
      if (context->saved_data.count("recorded")) cache.emplace(context->saved_data["recorded"].toTensorVector());
      at::Tensor output;
      {
        at::AutoGradMode enable(true);
        output = llama_unit_forward(model.config(), u, count, params, input, batch, cache ? &*cache : nullptr);
      }
      input_grad = differentiate(output, grads[0], leaves, input);
    }
    model.finish_backward(u, targets);
    return {role == UnitRole::embedding ? at::Tensor() : input_grad, at::Tensor(), at::Tensor(), at::Tensor(),
            at::Tensor()};
  }
};

}  // namespace

at::Tensor apply_unit(FsdpModel& model, size_t unit, const at::Tensor& input, const at::Tensor& anchor,
                      const TokenBatch& batch) {
  return UnitFunction::apply(input, anchor, reinterpret_cast<int64_t>(&model), static_cast<int64_t>(unit),
                             reinterpret_cast<int64_t>(&batch));
}

}  // namespace st
