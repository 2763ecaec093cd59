#include "fsdp/fsdp_model.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include "fsdp/unit_shards.h"
#include "model/hf_names.h"
#include "model/llama_blocks.h"
#include "model/token_logp.h"
#include "util/errors.h"

namespace st {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

FsdpModel* model_of(AutogradContext* context) {
  return reinterpret_cast<FsdpModel*>(context->saved_data["model"].toInt());
}

// A gathered unit as a leaf the recomputation can differentiate against.
at::Tensor gathered_leaf(FsdpModel& model, size_t unit) {
  return model.gather(unit).detach().requires_grad_(true);
}

// Runs unit `u` (embedding, a layer, or the head) on `input`; `flats` are its gathered
// parameters (and the embedding's, for a tied head).
at::Tensor run_unit(FsdpModel& model, size_t u, const std::vector<at::Tensor>& flats,
                    const at::Tensor& input, const at::Tensor& targets) {
  const ModelConfig& config = model.config();
  const auto& units = model.units();
  const TensorMap params = unit_param_views(units[u], flats[0]);
  if (u == 0) return at::embedding(params.at(kEmbedName), input);
  if (u + 1 < units.size()) {
    const RopeTables rope = make_rope_tables(config, input.size(1), input.options());
    return decoder_layer(layer_weights(params, config, static_cast<int64_t>(u - 1)), input, rope, config);
  }
  const at::Tensor normed = rms_norm(input, params.at(kFinalNormName), config.rms_norm_eps);
  const at::Tensor head = config.tie_word_embeddings
                              ? unit_param_views(units[0], flats[1]).at(kEmbedName)
                              : params.at(kLmHeadName);
  const at::Tensor logps = chunked_token_logps(normed.reshape({-1, normed.size(2)}), head,
                                               targets.reshape({-1}), model.options().logp_chunk_tokens);
  return logps.view(targets.sizes()).sum(1);
}

// One unit as an autograd node: forward without saving activations, backward by recompute.
// `anchor` is an empty tensor that requires grad, so the embedding unit (whose real input, the
// token ids, needs none) still gets a backward call.
class UnitFunction : public torch::autograd::Function<UnitFunction> {
 public:
  static at::Tensor forward(AutogradContext* context, const at::Tensor& input, const at::Tensor& anchor,
                            const at::Tensor& targets, int64_t model_address, int64_t unit) {
    auto& model = *reinterpret_cast<FsdpModel*>(model_address);
    context->saved_data["model"] = model_address;
    context->saved_data["unit"] = unit;
    context->save_for_backward({input, targets});
    const auto u = static_cast<size_t>(unit);
    std::vector<at::Tensor> flats{model.gather(u)};
    if (u + 1 == model.units().size() && model.config().tie_word_embeddings) flats.push_back(model.gather(0));
    (void)anchor;
    return run_unit(model, u, flats, input, targets);  // grad mode is off inside forward
  }

  static tensor_list backward(AutogradContext* context, tensor_list grads) {
    FsdpModel& model = *model_of(context);
    const auto u = static_cast<size_t>(context->saved_data["unit"].toInt());
    const auto saved = context->get_saved_variables();
    const bool tied_head = u + 1 == model.units().size() && model.config().tie_word_embeddings;
    std::vector<at::Tensor> flats{gathered_leaf(model, u)};
    if (tied_head) flats.push_back(gathered_leaf(model, 0));
    const bool input_is_hidden = u > 0;
    const at::Tensor input = input_is_hidden ? saved[0].detach().requires_grad_(true) : saved[0];
    at::Tensor output;
    {
      at::AutoGradMode enable(true);
      output = run_unit(model, u, flats, input, saved[1]);
    }
    std::vector<at::Tensor> wrt = flats;
    if (input_is_hidden) wrt.push_back(input);
    const auto results = torch::autograd::grad({output}, wrt, {grads[0]}, /*retain_graph=*/false,
                                               /*create_graph=*/false, /*allow_unused=*/true);
    model.reduce_gradient(u, results[0]);
    if (tied_head) model.reduce_gradient(0, results[1]);
    const at::Tensor input_grad = input_is_hidden ? results.back() : at::Tensor();
    return {input_grad, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

FsdpModel::FsdpModel(const ModelConfig& config, std::vector<UnitLayout> units, Communicator& group,
                     std::vector<at::Tensor> master_shards, const FsdpModelOptions& options)
    : config_(config), units_(std::move(units)), group_(group), options_(options), master_(std::move(master_shards)) {
  if (master_.size() != units_.size()) throw ModelError("FSDP: one master shard per unit expected");
  for (size_t u = 0; u < units_.size(); ++u) {
    if (master_[u].numel() != units_[u].shard_numel) throw ModelError("FSDP: shard size differs from the unit layout");
    grads_.push_back(at::zeros_like(master_[u]));
  }
  refresh_compute_shards();
}

void FsdpModel::zero_grad() {
  for (auto& grad : grads_) grad.zero_();
}

void FsdpModel::refresh_compute_shards() {
  compute_.clear();
  for (const auto& master : master_) compute_.push_back(master.to(options_.compute_dtype));
}

at::Tensor FsdpModel::gather(size_t unit) {
  const at::Tensor full = at::empty({units_[unit].padded_numel}, compute_[unit].options());
  group_.all_gather_into(full, compute_[unit]);
  return full;
}

void FsdpModel::reduce_gradient(size_t unit, const at::Tensor& flat_grad) {
  if (!flat_grad.defined()) return;
  const at::Tensor shard = at::empty({units_[unit].shard_numel}, at::kFloat);
  group_.reduce_scatter(shard, flat_grad.to(at::kFloat).contiguous(), ReduceOp::avg);
  grads_[unit].add_(shard);
}

at::Tensor FsdpModel::sequence_logps(const at::Tensor& input_ids, const at::Tensor& targets) {
  const auto address = reinterpret_cast<int64_t>(this);
  const at::Tensor anchor = at::empty({0}, at::TensorOptions().dtype(options_.compute_dtype)).requires_grad_(true);
  at::Tensor hidden = UnitFunction::apply(input_ids, anchor, targets, address, 0);
  for (size_t u = 1; u < units_.size(); ++u) {
    hidden = UnitFunction::apply(hidden, anchor, targets, address, static_cast<int64_t>(u));
  }
  return hidden;
}

}  // namespace st
