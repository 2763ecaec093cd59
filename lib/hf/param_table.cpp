// Everything here follows from the tables in param_table.h; names and order match transformers'
// LlamaForCausalLM / Qwen2ForCausalLM / MistralForCausalLM / Qwen3ForCausalLM (and their
// *ForSequenceClassification) and PEFT's saved adapters.
#include "hf/param_table.h"

#include "util/errors.h"

namespace st {
namespace {

int64_t size_of(const ModelConfig& config, Dim dim) {
  switch (dim) {
    case Dim::none: break;
    case Dim::one: return 1;
    case Dim::vocab: return config.vocab_size;
    case Dim::hidden: return config.hidden_size;
    case Dim::intermediate: return config.intermediate_size;
    case Dim::q_size: return config.q_size();
    case Dim::kv_size: return config.kv_size();
    case Dim::head_dim: return config.head_dim;
    case Dim::experts: return config.experts.num_experts;
    case Dim::expert_intermediate: return config.experts.expert_intermediate_size;
    case Dim::query_rows: return config.q_size() * (config.attention_output_gate ? 2 : 1);
    case Dim::linear_conv_channels: return config.linear_attention.conv_channels();
    case Dim::linear_value_dim: return config.linear_attention.value_dim();
    case Dim::linear_value_heads: return config.linear_attention.value_heads;
    case Dim::linear_value_head_dim: return config.linear_attention.value_head_dim;
    case Dim::linear_conv_kernel: return config.linear_attention.conv_kernel;
    case Dim::shared_intermediate: return config.experts.shared_intermediate_size;
  }
  return 0;
}

std::vector<int64_t> shape_of(const ModelConfig& config, Dim rows, Dim cols, Dim depth = Dim::none) {
  if (cols == Dim::none) return {size_of(config, rows)};
  if (depth == Dim::none) return {size_of(config, rows), size_of(config, cols)};
  return {size_of(config, rows), size_of(config, cols), size_of(config, depth)};
}

bool present(const ModelConfig& config, Presence presence) {
  switch (presence) {
    case Presence::always: return true;
    case Presence::untied_head: return config.head == ModelHead::lm && !config.tie_word_embeddings;
    case Presence::score_head: return config.head == ModelHead::score;
    case Presence::qkv_bias: return config.qkv_bias;
    case Presence::o_proj_bias: return config.o_proj_bias;
    case Presence::mlp_bias: return config.mlp_bias;
    case Presence::qk_norm: return config.qk_norm;
    case Presence::sandwich_norms: return family_of(config.model_type).layer_norms == LayerNorms::sandwich;
    case Presence::shared_expert: return config.experts.shared_intermediate_size > 0;
  }
  return false;
}

// A norm's identity weight is 0 where the norm multiplies by 1 + w.
ParamInit init_of(const ModelConfig& config, ParamInit init) {
  const bool offset = family_of(config.model_type).norm_style == NormStyle::one_plus_weight;
  return init == ParamInit::ones && offset ? ParamInit::zeros : init;
}

template <size_t N>
std::vector<ParamSpec> model_rows(const ModelConfig& config, const ModelParamRow (&rows)[N]) {
  std::vector<ParamSpec> params;
  for (const ModelParamRow& row : rows) {
    if (!present(config, row.presence)) continue;
    ParamKey key;
    key.model = row.key;
    params.push_back({row.hf_name, shape_of(config, row.rows, row.cols), init_of(config, row.init), key,
                      config.initializer_range});
  }
  return params;
}

const ModelParamRow& model_row(ModelParam param) {
  for (const ModelParamRow& row : kEmbeddingRows) {
    if (row.key == param) return row;
  }
  for (const ModelParamRow& row : kHeadRows) {
    if (row.key == param) return row;
  }
  throw ModelError("no table row for a model parameter");
}

const LayerParamRow& layer_row(LayerParam param) {
  for (const LayerParamRow& row : kLayerRows) {
    if (row.key == param) return row;
  }
  throw ModelError("no table row for a layer parameter");
}

const LayerParamRow& adapted_row(LoraTarget target) {
  for (const LayerParamRow& row : kLayerRows) {
    if (row.adapter == target) return row;
  }
  throw ModelError(std::string("no layer parameter is adapted by LoRA target '") + enum_name(target) + "'");
}

bool is_dense_mlp(LayerParam param) {
  switch (param) {
    case LayerParam::gate_proj: case LayerParam::gate_bias: case LayerParam::up_proj:
    case LayerParam::up_bias: case LayerParam::down_proj: case LayerParam::down_bias: return true;
    default: return false;
  }
}

const ExpertNaming& expert_naming(const ModelConfig& config) {
  const Experts style = family_of(config.model_type).experts;
  for (const ExpertNaming& naming : kExpertNaming) {
    if (naming.style == style) return naming;
  }
  throw ModelError(std::string("model_type ") + enum_name(config.model_type) + " has no experts");
}

ParamSpec expert_member(const ModelConfig& config, int64_t layer, const ExpertParamRow& row, int64_t expert) {
  ParamKey key;
  key.kind = ParamKey::Kind::layer;
  key.member = row.key;
  key.layer = layer;
  key.expert = expert;
  return {expert_param_name(config, layer, row.key, expert), shape_of(config, row.rows, row.cols), ParamInit::normal,
          key, config.initializer_range};
}

// The row `target` adapts in `config`'s layers: a shared expert's projection for the MLP's targets
// where the model has one (PEFT's gate_proj .. match mlp.shared_expert.*), else adapted_row's.
const LayerParamRow& adapted_row(const ModelConfig& config, LoraTarget target) {
  const LayerParamRow& row = adapted_row(target);
  if (config.experts.shared_intermediate_size == 0 || !is_dense_mlp(row.key)) return row;
  for (const LayerParamRow& shared : kLayerRows) {
    if (shared.presence == Presence::shared_expert && shared.adapter == target) return shared;
  }
  return row;
}

// "model.layers.<i>.self_attn.q_proj": the module a target wraps, its weight's name less ".weight".
std::string module_path(const LayerParamRow& row, int64_t layer) {
  const std::string weight = row.hf_suffix;
  return layer_prefix(layer) + weight.substr(0, weight.rfind('.'));
}
// "base_model.model.<module>.lora_A.weight" (`matrix` "lora_A" or "lora_B"): PEFT's name of a pair.
std::string lora_pair_name(const LayerParamRow& row, int64_t layer, const char* matrix) {
  return "base_model.model." + module_path(row, layer) + "." + matrix + ".weight";
}

// PEFT's name of a sparse layer's stacked-experts pair: gate_up_proj is wrapped first, so under
// down_proj's wrapper ("base_layer"); transformers 5 names the block "mlp" in every family.
std::string expert_lora_name(int64_t layer, LoraTarget target, const char* matrix) {
  return "base_model.model." + layer_prefix(layer) + "mlp.experts." +
         (target == LoraTarget::gate ? "base_layer." : "") + matrix + ".weight";
}

void require_all_expert_targets(const std::vector<LoraTarget>& targets) {
  int named = 0;
  for (LoraTarget target : targets) named += is_dense_mlp(adapted_row(target).key) ? 1 : 0;
  if (named == 0 || named == 3) return;
  throw ModelError("lora.target_modules: a mixture-of-experts layer's experts are adapted as PEFT adapts them, "
                   "through their stacked gate_up and down parameters together (target_parameters); name gate, up "
                   "and down all three, or none of them");
}

}  // namespace

int64_t ParamSpec::numel() const {
  int64_t count = 1;
  for (int64_t size : shape) count *= size;
  return count;
}

std::string layer_prefix(int64_t layer) { return "model.layers." + std::to_string(layer) + "."; }

const char* model_param_name(ModelParam param) { return model_row(param).hf_name; }

std::string layer_param_name(int64_t layer, LayerParam param) { return layer_prefix(layer) + layer_row(param).hf_suffix; }

ModelParam lm_head_param(const ModelConfig& config) {
  return config.tie_word_embeddings ? ModelParam::embed : ModelParam::lm_head;
}

std::vector<ParamSpec> embedding_params(const ModelConfig& config) { return model_rows(config, kEmbeddingRows); }

std::vector<ParamSpec> head_params(const ModelConfig& config) { return model_rows(config, kHeadRows); }

std::string expert_param_name(const ModelConfig& config, int64_t layer, LayerParam param, int64_t expert) {
  const ExpertNaming& naming = expert_naming(config);
  const std::string block = layer_prefix(layer) + naming.block + ".";
  const auto projection = [&](const char* name) {
    return block + "experts." + std::to_string(expert) + "." + name + ".weight";
  };
  switch (param) {
    case LayerParam::router: return block + "gate.weight";
    case LayerParam::expert_gate: return projection(naming.gate);
    case LayerParam::expert_up: return projection(naming.up);
    case LayerParam::expert_down: return projection(naming.down);
    default: throw ModelError("expert_param_name: not a sparse-layer parameter");
  }
}

std::optional<TokenMixer> mixer_of(LayerParam param) {
  switch (param) {
    case LayerParam::q_proj: case LayerParam::q_bias: case LayerParam::k_proj: case LayerParam::k_bias:
    case LayerParam::v_proj: case LayerParam::v_bias: case LayerParam::o_proj: case LayerParam::o_bias:
    case LayerParam::q_norm: case LayerParam::k_norm: return TokenMixer::attention;
    case LayerParam::linear_qkv: case LayerParam::linear_z: case LayerParam::linear_b: case LayerParam::linear_a:
    case LayerParam::linear_conv: case LayerParam::linear_dt_bias: case LayerParam::linear_a_log:
    case LayerParam::linear_norm: case LayerParam::linear_out: return TokenMixer::gated_delta;
    default: return std::nullopt;
  }
}

bool weight_decayed(const ParamKey& key) {
  if (key.kind == ParamKey::Kind::model) return key.model != ModelParam::final_norm;
  if (key.kind != ParamKey::Kind::layer) return true;  // LoRA's A and B
  switch (key.member) {
    case LayerParam::q_bias: case LayerParam::k_bias: case LayerParam::v_bias: case LayerParam::o_bias:
    case LayerParam::gate_bias: case LayerParam::up_bias: case LayerParam::down_bias: case LayerParam::linear_dt_bias:
    case LayerParam::input_norm: case LayerParam::post_attention_norm: case LayerParam::q_norm: case LayerParam::k_norm:
    case LayerParam::pre_feedforward_norm: case LayerParam::post_feedforward_norm: case LayerParam::linear_norm:
      return false;
    default: return true;
  }
}

bool layer_holds(const ModelConfig& config, int64_t layer, LayerParam param) {
  if (layer_row(param).presence == Presence::shared_expert) {
    return config.experts.shared_intermediate_size > 0 && config.sparse_layer(layer);
  }
  const std::optional<TokenMixer> mixer = mixer_of(param);
  return !mixer || *mixer == (config.gated_delta_layer(layer) ? TokenMixer::gated_delta : TokenMixer::attention);
}

std::vector<LoraTarget> held_lora_targets(const ModelConfig& config, const std::vector<LoraTarget>& targets) {
  std::vector<LoraTarget> held;
  for (LoraTarget target : targets) {
    for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
      if (!layer_holds(config, layer, adapted_row(config, target).key)) continue;
      held.push_back(target);
      break;
    }
  }
  return held;
}

std::vector<LoraTarget> model_lora_targets(const ModelConfig& config) {
  return held_lora_targets(config, enum_values<LoraTarget>());
}

bool is_expert_member(LayerParam param) {
  for (const ExpertParamRow& row : kExpertRows) {
    if (row.key == param) return true;
  }
  return false;
}

std::vector<ParamSpec> layer_params(const ModelConfig& config, int64_t layer) {
  std::vector<ParamSpec> params;
  const bool sparse = config.sparse_layer(layer);
  for (const LayerParamRow& row : kLayerRows) {
    if (sparse && is_dense_mlp(row.key)) {  // the router (and the experts' unit) take the dense MLP's place
      if (row.key == LayerParam::gate_proj) params.push_back(expert_member(config, layer, kExpertRows[0], -1));
      continue;
    }
    if (!present(config, row.presence)) continue;
    if (!layer_holds(config, layer, row.key)) continue;  // a mixer's in its layers, a shared expert's in sparse ones
    ParamKey key;
    key.kind = ParamKey::Kind::layer;
    key.member = row.key;
    key.layer = layer;
    params.push_back({layer_prefix(layer) + row.hf_suffix, shape_of(config, row.rows, row.cols, row.depth),
                      init_of(config, row.init), key, config.initializer_range});
  }
  return params;
}

std::vector<ParamSpec> expert_params(const ModelConfig& config, int64_t layer) {
  std::vector<ParamSpec> params;
  if (!config.sparse_layer(layer)) return params;
  for (int64_t expert = 0; expert < config.experts.num_experts; ++expert) {
    for (const ExpertParamRow& row : kExpertRows) {
      if (row.key != LayerParam::router) params.push_back(expert_member(config, layer, row, expert));
    }
  }
  return params;
}

std::vector<ParamSpec> all_params(const ModelConfig& config) {
  std::vector<ParamSpec> params = embedding_params(config);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const auto& part : {layer_params(config, layer), expert_params(config, layer)}) {
      params.insert(params.end(), part.begin(), part.end());
    }
  }
  const auto head = head_params(config);
  params.insert(params.end(), head.begin(), head.end());
  return params;
}

std::string peft_module_name(LoraTarget target) {
  const std::string path = module_path(adapted_row(target), 0);
  return path.substr(path.rfind('.') + 1);
}

std::string adapted_weight_name(int64_t layer, LoraTarget target) {
  return layer_prefix(layer) + adapted_row(target).hf_suffix;
}

LayerParam adapted_param(LoraTarget target) { return adapted_row(target).key; }

bool is_projection_weight(const ParamKey& key) {
  return key.kind == ParamKey::Kind::layer && !is_expert_member(key.member) && layer_row(key.member).adapter.has_value();
}

std::vector<ParamSpec> saved_module_params(const ModelConfig& config) {
  std::vector<ParamSpec> params;
  for (ParamSpec& spec : head_params(config)) {
    if (!spec.key.is(ModelParam::score)) continue;
    spec.name = saved_module_name(spec.name);
    params.push_back(std::move(spec));
  }
  return params;
}

std::string saved_module_name(const std::string& hf_name) { return "base_model.model." + hf_name; }

std::string lora_a_name(int64_t layer, LoraTarget target) { return lora_pair_name(adapted_row(target), layer, "lora_A"); }

std::string lora_b_name(int64_t layer, LoraTarget target) { return lora_pair_name(adapted_row(target), layer, "lora_B"); }

std::vector<ParamSpec> lora_layer_params(const ModelConfig& config, int64_t layer,
                                         const std::vector<LoraTarget>& targets, int64_t r) {
  const bool experts = lora_adapts_routed_experts(config);
  const bool sparse = config.sparse_layer(layer);
  if (experts) require_all_expert_targets(targets);
  std::vector<ParamSpec> params;
  for (LoraTarget target : targets) {
    const LayerParamRow& row = adapted_row(config, target);
    if (!layer_holds(config, layer, row.key)) continue;  // a hybrid's attention targets: its attention layers
    int64_t out = size_of(config, row.rows), in = size_of(config, row.cols), rows = r;
    std::string a_name = lora_pair_name(row, layer, "lora_A"), b_name = lora_pair_name(row, layer, "lora_B");
    if (experts && is_dense_mlp(row.key)) {
      // The MLP targets are the experts': a dense layer of the model keeps its MLP unadapted, as
      // PEFT maps gate_proj.. to the experts' parameters alone.
      if (!sparse || target == LoraTarget::up) continue;  // up: gate_up's pair, under target gate
      const int64_t width = config.experts.expert_intermediate_size;
      const bool gate_up = target == LoraTarget::gate;
      out = gate_up ? 2 * width : config.hidden_size;
      in = gate_up ? config.hidden_size : width;
      // Every expert's rows in one pair; gate_up's of rank 2 r, gate's r and up's r fused.
      rows = (gate_up ? kFusedExpertRank : 1) * r * config.experts.num_experts;
      a_name = expert_lora_name(layer, target, "lora_A");
      b_name = expert_lora_name(layer, target, "lora_B");
    }
    ParamKey key;
    key.target = target;
    key.layer = layer;
    key.kind = ParamKey::Kind::lora_a;
    params.push_back({a_name, {rows, in}, ParamInit::lora_a, key});
    key.kind = ParamKey::Kind::lora_b;
    params.push_back({b_name, {out, rows}, ParamInit::zeros, key});
  }
  return params;
}

bool lora_adapts_routed_experts(const ModelConfig& config) {
  return config.experts.num_experts > 0 && config.experts.shared_intermediate_size == 0;
}

LayerParam adapted_layer_param(const ModelConfig& config, LoraTarget target) { return adapted_row(config, target).key; }

std::vector<AdaptedWeight> adapted_weights(const ModelConfig& config, int64_t layer, LoraTarget target) {
  const LayerParamRow& row = adapted_row(config, target);
  if (!layer_holds(config, layer, row.key)) return {};
  if (config.experts.num_experts == 0 || !is_dense_mlp(row.key)) return {{layer_prefix(layer) + row.hf_suffix}};
  if (!config.sparse_layer(layer)) return {};  // a MoE model's dense MLP: unadapted (lora_layer_params)
  std::vector<AdaptedWeight> weights;
  const int64_t width = config.experts.expert_intermediate_size;
  for (int64_t expert = 0; expert < config.experts.num_experts; ++expert) {
    switch (target) {
      case LoraTarget::gate:  // gate_up's B: the gate's rows, then the up's
        weights.push_back({expert_param_name(config, layer, LayerParam::expert_gate, expert), expert, 0, width});
        weights.push_back({expert_param_name(config, layer, LayerParam::expert_up, expert), expert, width, width});
        break;
      case LoraTarget::down:
        weights.push_back({expert_param_name(config, layer, LayerParam::expert_down, expert), expert});
        break;
      default: break;  // up: gate's pair adapts it
    }
  }
  return weights;
}

}  // namespace st
