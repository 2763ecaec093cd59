// config.json -> ModelConfig. Every message names the file, the field and what would fix it.
#include "hf/model_config.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hf/config_reader.h"
#include "hf/gated_delta_config.h"
#include "util/errors.h"
#include "util/hub_id.h"
#include "util/text.h"

namespace st {

const FamilySpec& family_of(ModelType type) {
  for (const FamilySpec& spec : kFamilies) {
    if (spec.type == type) return spec;
  }
  throw ModelError(std::string("model_type ") + enum_name(type) + " has no family row (hf/model_family.h)");
}

namespace {

using nlohmann::json;

RopeScaling parse_rope_scaling(const ConfigReader& reader, const json& scaling,
                               const std::string& field) {
  RopeScaling rope;
  if (!scaling.is_object()) reader.fail(field, "must be an object or null, got " + scaling.dump());
  const std::string type_key = scaling.contains("rope_type") ? "rope_type" : "type";
  const std::string type =
      scaling.contains(type_key) && scaling.at(type_key).is_string()
          ? scaling.at(type_key).get<std::string>() : "default";
  auto required = [&](const std::string& key) {
    if (!reader.has(scaling, key)) reader.fail(field + "." + key, "is missing for rope type " + type);
    return reader.number(scaling, key, field + "." + key);
  };
  if (type == "default") return rope;
  if (type == "linear") {
    rope.type = RopeScaling::Type::linear;
    rope.factor = required("factor");
  } else if (type == "llama3") {
    rope.type = RopeScaling::Type::llama3;
    rope.factor = required("factor");
    rope.low_freq_factor = required("low_freq_factor");
    rope.high_freq_factor = required("high_freq_factor");
    const std::string original = field + ".original_max_position_embeddings";
    if (!reader.has(scaling, "original_max_position_embeddings")) reader.fail(original, "is missing for rope type " + type);
    rope.original_max_position_embeddings = reader.integer(scaling, "original_max_position_embeddings", original);
    if (rope.original_max_position_embeddings <= 0) reader.fail(original, "must be > 0");
    if (rope.high_freq_factor <= rope.low_freq_factor) {
      reader.fail(field + ".high_freq_factor", "must exceed low_freq_factor");
    }
  } else {
    reader.fail(field, "has rope type '" + type +
                           "', which shardtune does not implement (supported: default, linear, "
                           "llama3); use a checkpoint with one of those");
  }
  if (rope.factor <= 0) reader.fail(field + ".factor", "must be > 0");
  return rope;
}

// Features of neighbouring architectures that would change the numbers if silently ignored.
void refuse_unsupported(const ConfigReader& reader, ModelType model_type) {
  const std::string fix = "; shardtune implements causal attention over every layer alike";
  const Window window = family_of(model_type).window;
  switch (window) {
    case Window::per_layer:  // Qwen2 and Qwen3 window only the layers past max_window_layers
      if (reader.boolean_or("use_sliding_window", false)) {
        reader.fail("use_sliding_window", "is true: Qwen's per-layer sliding window is not supported" + fix);
      }
      break;
    case Window::none:
      if (reader.has("sliding_window")) {
        reader.fail("sliding_window", std::string("is set on a ") + enum_name(model_type) +
                                          " model; a windowed model declares model_type mistral");
      }
      break;
    case Window::every_layer: break;  // applied to every layer (parse_model_config)
    case Window::layer_types: break;  // read per layer (parse_layer_types)
  }
  const bool hybrid = family_of(model_type).mixers == Mixers::gated_delta_hybrid;  // layer_types: its mixers
  if (reader.has("layer_types") && window != Window::layer_types && !hybrid) {
    for (const json& type : reader.root().at("layer_types")) {
      if (type != "full_attention" && !(window == Window::every_layer && type == "sliding_attention")) {
        reader.fail("layer_types", "contains " + type.dump() + fix);
      }
    }
  }
  for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
    if (reader.has(key)) reader.fail(key, "is set: logit soft-capping is not supported");
  }
  if (reader.boolean_or("use_bidirectional_attention", false)) {
    reader.fail("use_bidirectional_attention", "is true: shardtune trains causal language models");
  }
  const char* expected = enum_name(family_of(model_type).activation);
  const char* activation_key = reader.has("hidden_activation") ? "hidden_activation" : "hidden_act";
  const std::string activation = reader.string_or(activation_key, expected);
  if (activation != expected) {
    reader.fail(activation_key, "is '" + activation + "'; " + enum_name(model_type) + " MLPs use " + expected);
  }
  if (reader.number_or("attention_dropout", 0.0) != 0.0) {
    reader.fail("attention_dropout", "must be 0: attention dropout is not implemented");
  }
}

// Window::layer_types: each layer's kind (layer_types, else every sliding_window_pattern-th layer
// full), the window, and the rotary base of each kind: transformers 5's rope_parameters per kind,
// or rope_theta + rope_scaling (full) and rope_local_base_freq (sliding) as 4.x wrote them.
void parse_layer_types(const ConfigReader& reader, ModelConfig& config) {
  const json& root = reader.root();
  const auto layers = static_cast<size_t>(config.num_hidden_layers);
  if (reader.has("layer_types")) {
    config.layer_types = reader.per_layer<AttentionType>("layer_types", layers);
  } else {
    const int64_t pattern = reader.positive_or("sliding_window_pattern", 6);
    for (size_t layer = 0; layer < layers; ++layer) {
      config.layer_types.push_back((static_cast<int64_t>(layer) + 1) % pattern != 0 ? AttentionType::sliding
                                                                                     : AttentionType::full);
    }
  }
  config.sliding_window = reader.positive_or("sliding_window", 0);
  for (AttentionType kind : config.layer_types) {
    if (kind == AttentionType::sliding && config.sliding_window == 0) {
      reader.fail("sliding_window", "is missing while layer_types holds sliding_attention layers");
    }
  }
  const bool per_kind = reader.has("rope_parameters") && root.at("rope_parameters").contains("full_attention");
  if (!per_kind) {
    config.local_rope_theta = reader.number_or("rope_local_base_freq", config.local_rope_theta);
  } else {
    const json& parameters = root.at("rope_parameters");
    const std::string full = "rope_parameters.full_attention", sliding = "rope_parameters.sliding_attention";
    config.rope_scaling = parse_rope_scaling(reader, parameters.at("full_attention"), full);
    if (reader.has(parameters.at("full_attention"), "rope_theta")) {
      config.rope_theta = reader.number(parameters.at("full_attention"), "rope_theta", full + ".rope_theta");
    }
    if (reader.has(parameters, "sliding_attention")) {
      const json& local = parameters.at("sliding_attention");
      if (parse_rope_scaling(reader, local, sliding).type != RopeScaling::Type::none) {
        reader.fail(sliding + ".rope_type", "scales the sliding layers' rotary; only their default rope is built");
      }
      if (reader.has(local, "rope_theta")) config.local_rope_theta = reader.number(local, "rope_theta", sliding + ".rope_theta");
    }
  }
  if (config.local_rope_theta <= 0) reader.fail("rope_local_base_freq", "must be > 0");
}

std::vector<int64_t> parse_token_ids(const ConfigReader& reader, const std::string& key) {
  if (!reader.has(key)) return {};
  const json& value = reader.root().at(key);
  std::vector<int64_t> ids;
  if (value.is_number_integer()) return {value.get<int64_t>()};
  if (!value.is_array()) reader.fail(key, "must be an integer or a list of integers");
  for (const json& id : value) {
    if (!id.is_number_integer()) reader.fail(key, "must hold integers, got " + id.dump());
    ids.push_back(id.get<int64_t>());
  }
  return ids;
}

// architectures: a *ForSequenceClassification checkpoint is a reward model when it scores one
// label (transformers counts id2label, else num_labels, else 2).
void parse_head(const ConfigReader& reader, ModelConfig& config) {
  if (!reader.has("architectures") || !reader.root().at("architectures").is_array()) return;
  const std::string suffix = "ForSequenceClassification";
  bool classifier = false;
  for (const json& name : reader.root().at("architectures")) {
    const std::string text = name.is_string() ? name.get<std::string>() : "";
    classifier |= text.size() > suffix.size() && ends_with(text, suffix);
  }
  if (!classifier) return;
  const json& root = reader.root();
  const bool by_id2label = reader.has("id2label") && root.at("id2label").is_object();
  const int64_t labels = by_id2label ? static_cast<int64_t>(root.at("id2label").size())
                                     : reader.has("num_labels") ? reader.integer(root, "num_labels", "num_labels") : 2;
  if (labels != 1) {
    reader.fail(by_id2label ? "id2label" : "num_labels",
                "gives " + std::to_string(labels) + " labels: shardtune reads a sequence classifier only as a reward "
                "model, one score per sequence (num_labels 1); export the classifier with num_labels=1");
  }
  config.head = ModelHead::score;
}

// Only bitsandbytes' 4-bit NF4 is read (by QLoRA, as stored); any other format is refused by name.
void parse_quantization(const ConfigReader& reader, const json& quantization, ModelConfig& config) {
  const std::string fix = "; shardtune reads bitsandbytes 4-bit nf4 checkpoints (train.method = qlora) and "
                          "full-precision ones: point model.path at the full-precision model";
  if (!quantization.is_object()) reader.fail("quantization_config", "must be an object" + fix);
  const auto boolean = [&](const char* key) {
    return reader.boolean_or(quantization, key, std::string("quantization_config.") + key, false);
  };
  const auto text = [&](const char* key, const char* fallback) {
    return reader.string_or(quantization, key, std::string("quantization_config.") + key, fallback);
  };
  const std::string method = text("quant_method", "");
  if (method != "bitsandbytes") reader.fail("quantization_config.quant_method", "is '" + method + "'" + fix);
  if (boolean("load_in_8bit")) {
    reader.fail("quantization_config.load_in_8bit", "is true: 8-bit bitsandbytes weights are not read" + fix);
  }
  if (!boolean("load_in_4bit")) reader.fail("quantization_config.load_in_4bit", "is not true" + fix);
  const std::string type = text("bnb_4bit_quant_type", "fp4");
  if (type != "nf4") reader.fail("quantization_config.bnb_4bit_quant_type", "is '" + type + "'" + fix);
  config.weight_storage = WeightStorage::bnb_nf4;
  config.nf4_double_quant = boolean("bnb_4bit_use_double_quant");
}

// The experts of a family that routes (FamilySpec::experts), as transformers reads them: Qwen3-MoE's
// num_experts (num_local_experts as transformers 5 saves it), moe_intermediate_size, norm_topk_prob,
// decoder_sparse_step and mlp_only_layers; Mixtral's num_local_experts over intermediate_size,
// always renormalised, every layer sparse; Qwen3.5-MoE's moe_intermediate_size and
// shared_expert_intermediate_size, always renormalised, every layer sparse (Qwen3_5MoeTextConfig
// has no norm_topk_prob, decoder_sparse_step or mlp_only_layers: transformers ignores them).
void parse_experts(const ConfigReader& reader, Experts style, ModelConfig& config) {
  ExpertShape& experts = config.experts;
  const char* count_key = reader.has("num_experts") ? "num_experts" : "num_local_experts";
  if (!reader.has(count_key)) reader.fail("num_experts", "is missing (nor num_local_experts); a mixture-of-experts config.json has it");
  experts.num_experts = reader.positive(count_key);
  experts.experts_per_token = reader.positive("num_experts_per_tok");
  if (experts.experts_per_token > experts.num_experts) {
    reader.fail("num_experts_per_tok", "= " + std::to_string(experts.experts_per_token) + " exceeds the " +
                                           std::to_string(experts.num_experts) + " experts");
  }
  experts.router_aux_loss_coef = reader.number_or("router_aux_loss_coef", 0.001);  // transformers' default
  if (style == Experts::mixtral) {
    experts.expert_intermediate_size = config.intermediate_size;
    experts.renormalize = true;
    if (reader.number_or("router_jitter_noise", 0.0) != 0.0) {
      reader.fail("router_jitter_noise", "is not 0: multiplying the hidden states by noise in training is not built; "
                                         "set it to 0 (Mixtral's released configs do)");
    }
    return;
  }
  experts.expert_intermediate_size = reader.positive("moe_intermediate_size");
  if (style == Experts::qwen_shared) {
    experts.shared_intermediate_size = reader.positive("shared_expert_intermediate_size");
    experts.renormalize = true;
    return;
  }
  experts.renormalize = reader.boolean_or("norm_topk_prob", false);
  experts.sparse_step = reader.positive_or("decoder_sparse_step", 1);
  if (reader.has("mlp_only_layers")) {
    const json& layers = reader.root().at("mlp_only_layers");
    if (!layers.is_array()) reader.fail("mlp_only_layers", "must be a list of layer indices");
    for (const json& layer : layers) {
      if (!layer.is_number_integer() || layer.get<int64_t>() < 0 || layer.get<int64_t>() >= config.num_hidden_layers) {
        reader.fail("mlp_only_layers", "holds " + layer.dump() + ", not a layer index in [0, " +
                                           std::to_string(config.num_hidden_layers) + ")");
      }
      experts.dense_layers.push_back(layer.get<int64_t>());
    }
  }
  for (const char* key : {"shared_expert_intermediate_size", "num_shared_experts", "n_shared_experts"}) {
    if (reader.has(key) && reader.number(reader.root(), key, key) != 0) {
      reader.fail(key, "is set: a shared expert beside the routed ones is not built");
    }
  }
}

// Parameters of `config`, counted in `Number`: int64 for the count, long double to check that
// the int64 count cannot overflow (check_model_size).
template <typename Number>
Number count_parameters(const ModelConfig& config) {
  const auto hidden = static_cast<Number>(config.hidden_size);
  const auto intermediate = static_cast<Number>(config.intermediate_size);
  const Number q = static_cast<Number>(config.num_attention_heads) * static_cast<Number>(config.head_dim);
  const Number kv = static_cast<Number>(config.num_key_value_heads) * static_cast<Number>(config.head_dim);
  const Number q_rows = config.attention_output_gate ? 2 * q : q;  // each head's query, then its gate
  const Number attention = hidden * (q_rows + 2 * kv) + q * hidden + (config.qkv_bias ? q_rows + 2 * kv : 0) +
                           (config.o_proj_bias ? hidden : 0) +
                           (config.qk_norm ? 2 * static_cast<Number>(config.head_dim) : 0);
  const Number mlp = 3 * hidden * intermediate + (config.mlp_bias ? 2 * intermediate + hidden : 0);
  const Number norms = family_of(config.model_type).layer_norms == LayerNorms::sandwich ? 4 : 2;
  const Number layer = attention + mlp + norms * hidden;
  // A Gated DeltaNet layer's linear_attn in place of self_attn.
  int64_t gated_delta_layers = 0;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l) gated_delta_layers += config.gated_delta_layer(l) ? 1 : 0;
  const Number mixer_change = static_cast<Number>(gated_delta_layers) *
                              (static_cast<Number>(gated_delta_mixer_parameters(config)) - attention);
  const Number vocab_rows = static_cast<Number>(config.vocab_size) * hidden;
  const Number head = config.head == ModelHead::score ? hidden : config.tie_word_embeddings ? 0 : vocab_rows;
  // A sparse layer's MLP is its router [E, D] and E experts of 3 D x I each, and a shared expert of
  // 3 D x S with its gate [1, D] where the family has one, in place of the dense one.
  const auto experts = static_cast<Number>(config.experts.num_experts);
  const auto shared = static_cast<Number>(config.experts.shared_intermediate_size);
  const Number sparse_mlp = experts * hidden +
                            experts * 3 * hidden * static_cast<Number>(config.experts.expert_intermediate_size) +
                            (shared > 0 ? 3 * hidden * shared + hidden : 0);
  return vocab_rows + head + static_cast<Number>(config.num_hidden_layers) * layer +
         static_cast<Number>(config.sparse_layer_count()) * (sparse_mlp - mlp) + mixer_change + hidden;
}

// The sizes multiply into parameter counts and tensor shapes (int64): a config.json whose model
// could not exist is refused before any of that arithmetic, and before allocating for it.
void check_model_size(const ConfigReader& reader, const ModelConfig& config) {
  constexpr int64_t kMaxDimension = int64_t{1} << 24;   // any one size: far past every model's
  constexpr long double kMaxParameters = 1e15;          // 2500 x Llama 3.1 405B
  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"vocab_size", config.vocab_size},
                                   {"hidden_size", config.hidden_size},
                                   {"intermediate_size", config.intermediate_size},
                                   {"num_hidden_layers", config.num_hidden_layers},
                                   {"num_attention_heads", config.num_attention_heads},
                                   {"head_dim", config.head_dim},
                                   {"max_position_embeddings", config.max_position_embeddings},
                                   {"sliding_window", config.sliding_window},
                                   {"num_experts", config.experts.num_experts},
                                   {"moe_intermediate_size", config.experts.expert_intermediate_size},
                                   {"shared_expert_intermediate_size", config.experts.shared_intermediate_size},
                                   {"linear_num_value_heads", config.linear_attention.value_heads},
                                   {"linear_key_head_dim", config.linear_attention.key_head_dim},
                                   {"linear_value_head_dim", config.linear_attention.value_head_dim},
                                   {"linear_conv_kernel_dim", config.linear_attention.conv_kernel}}) {
    if (value > kMaxDimension) {
      reader.fail(key, "= " + std::to_string(value) + " exceeds 2^24, more than any model has (the file is damaged)");
    }
  }
  // In floating point: with every size below 2^24 this cannot overflow, the int64 count can.
  const long double count = count_parameters<long double>(config);
  if (count > kMaxParameters) {
    char text[32];
    std::snprintf(text, sizeof(text), "%.3g", static_cast<double>(count));
    reader.fail("hidden_size", std::string("and the other sizes describe a model of ") + text +
                                   " parameters, past the 1e15 shardtune takes (the file is damaged)");
  }
}

}  // namespace

int64_t ModelConfig::parameter_count() const { return count_parameters<int64_t>(*this); }

int64_t ModelConfig::active_parameter_count() const {
  const int64_t idle_experts = experts.num_experts - experts.experts_per_token;
  return parameter_count() - sparse_layer_count() * idle_experts * 3 * hidden_size * experts.expert_intermediate_size;
}

bool ModelConfig::sparse_layer(int64_t layer) const {
  if (experts.num_experts == 0 || (layer + 1) % experts.sparse_step != 0) return false;
  for (int64_t dense : experts.dense_layers) {
    if (dense == layer) return false;
  }
  return true;
}

bool ModelConfig::sliding_layer(int64_t layer) const {
  if (layer_types.empty()) return sliding_window > 0;
  return layer_types.at(static_cast<size_t>(layer)) == AttentionType::sliding;
}

int64_t ModelConfig::sparse_layer_count() const {
  int64_t count = 0;
  for (int64_t layer = 0; layer < num_hidden_layers; ++layer) count += sparse_layer(layer) ? 1 : 0;
  return count;
}

namespace {

// A multimodal wrapper's text_config, with the wrapper's token ids where it has none.
json wrapped_text_config(const json& root, const MultimodalWrapper& wrapper, const std::string& source) {
  if (!root.contains("text_config") || !root.at("text_config").is_object()) {
    throw ModelError(source + ": field 'text_config' is missing or not an object; a " + wrapper.model_type +
                     " config.json holds its language model's config there");
  }
  json text = root.at("text_config");
  text["model_type"] = enum_name(wrapper.text_type);
  for (const char* key : {"bos_token_id", "eos_token_id", "pad_token_id", "torch_dtype", "dtype"}) {
    if (!text.contains(key) && root.contains(key)) text[key] = root.at(key);
  }
  return text;
}

// config.json's model_type word; "" when absent or not a string (the reader then names the field).
std::string model_type_word(const json& root) {
  const auto found = root.find("model_type");
  return found != root.end() && found->is_string() ? found->get<std::string>() : "";
}

// `root` with the family's config-class defaults for the keys it leaves out.
json with_family_defaults(json root, const FamilySpec& spec) {
  if (spec.config_defaults == nullptr) return root;
  const json defaults = json::parse(spec.config_defaults);
  for (const auto& [key, value] : defaults.items()) {
    if (!root.contains(key)) root[key] = value;
  }
  return root;
}

}  // namespace

ModelConfig parse_model_config(const json& original, const std::string& original_source) {
  if (!original.is_object()) throw ModelError(original_source + ": expected a JSON object");
  json root = original;
  std::string source = original_source;
  bool multimodal = false;
  if (const MultimodalWrapper* wrapper = multimodal_wrapper(model_type_word(original))) {
    root = wrapped_text_config(original, *wrapper, original_source);
    source = original_source + " (text_config)";
    multimodal = true;
  }
  ModelConfig config;
  if (find_enum(model_type_word(root), config.model_type)) {
    root = with_family_defaults(std::move(root), family_of(config.model_type));
  }
  config.multimodal_text = multimodal;
  const ConfigReader reader(root, source);
  const std::string model_type = reader.string_or("model_type", "");
  if (!find_enum(model_type, config.model_type)) {
    for (const RefusedType& refused : kRefusedTypes) {
      if (model_type == refused.model_type) reader.fail("model_type", "is '" + model_type + "': " + refused.why);
    }
    reader.fail("model_type", "is '" + model_type + "'; shardtune supports Llama-family models (" +
                                  enum_choices<ModelType>() + ")");
  }
  refuse_unsupported(reader, config.model_type);

  config.vocab_size = reader.positive("vocab_size");
  config.hidden_size = reader.positive("hidden_size");
  // Qwen3.5-MoE's every MLP is sparse: its config class has no dense width (0 here).
  const bool no_dense_mlp = family_of(config.model_type).experts == Experts::qwen_shared;
  config.intermediate_size = no_dense_mlp && !reader.has("intermediate_size") ? 0 : reader.positive("intermediate_size");
  config.num_hidden_layers = reader.positive("num_hidden_layers");
  config.num_attention_heads = reader.positive("num_attention_heads");
  config.num_key_value_heads = reader.positive_or("num_key_value_heads", config.num_attention_heads);
  if (config.num_attention_heads % config.num_key_value_heads != 0) {
    reader.fail("num_key_value_heads",
                "= " + std::to_string(config.num_key_value_heads) +
                    " must divide num_attention_heads = " + std::to_string(config.num_attention_heads));
  }
  if (!reader.has("head_dim") && config.hidden_size % config.num_attention_heads != 0) {
    reader.fail("head_dim", "is missing and hidden_size is not a multiple of num_attention_heads");
  }
  config.head_dim =
      reader.positive_or("head_dim", config.hidden_size / config.num_attention_heads);
  if (config.head_dim % 2 != 0) reader.fail("head_dim", "must be even for rotary embeddings");
  config.max_position_embeddings = reader.positive_or("max_position_embeddings", 2048);
  // Mistral-7B-v0.1 windows at 4096; v0.3 and later say null (no window).
  const FamilySpec& spec = family_of(config.model_type);
  if (spec.window == Window::every_layer) config.sliding_window = reader.positive_or("sliding_window", 0);
  config.rms_norm_eps = reader.number_or("rms_norm_eps", 1e-6);
  if (config.rms_norm_eps <= 0) reader.fail("rms_norm_eps", "must be > 0");

  // transformers 5 moved rope_theta and rope_scaling into rope_parameters (per kind of layer where
  // layers differ: parse_layer_types).
  if (spec.window == Window::layer_types) {
    config.rope_theta = reader.number_or("rope_theta", 10000.0);
    if (reader.has("rope_scaling")) {
      config.rope_scaling = parse_rope_scaling(reader, root.at("rope_scaling"), "rope_scaling");
    }
    parse_layer_types(reader, config);
  } else if (reader.has("rope_parameters")) {
    const json& parameters = root.at("rope_parameters");
    config.rope_scaling = parse_rope_scaling(reader, parameters, "rope_parameters");
    if (reader.has(parameters, "rope_theta")) {
      config.rope_theta = reader.number(parameters, "rope_theta", "rope_parameters.rope_theta");
    }
  } else {
    config.rope_theta = reader.number_or("rope_theta", 10000.0);
    if (reader.has("rope_scaling")) {
      config.rope_scaling = parse_rope_scaling(reader, root.at("rope_scaling"), "rope_scaling");
    }
  }
  if (config.rope_theta <= 0) reader.fail("rope_theta", "must be > 0");
  if (spec.mixers == Mixers::gated_delta_hybrid) parse_hybrid_layers(reader, config);

  config.tie_word_embeddings = reader.boolean_or("tie_word_embeddings", false);
  switch (spec.biases) {
    case Biases::qkv: config.qkv_bias = true; break;
    case Biases::from_attention_bias: config.qkv_bias = config.o_proj_bias = reader.boolean_or("attention_bias", false); break;
    case Biases::none: break;
  }
  config.qk_norm = spec.qk_norm;
  if (spec.query_pre_attn_scalar) {
    config.query_pre_attn_scalar = reader.number_or("query_pre_attn_scalar", static_cast<double>(config.head_dim));
    if (config.query_pre_attn_scalar <= 0) reader.fail("query_pre_attn_scalar", "must be > 0");
  }
  if (spec.experts != Experts::none) parse_experts(reader, spec.experts, config);
  config.mlp_bias = reader.boolean_or("mlp_bias", false);
  const auto bos = parse_token_ids(reader, "bos_token_id");
  config.bos_token_id = bos.empty() ? -1 : bos.front();
  config.eos_token_ids = parse_token_ids(reader, "eos_token_id");
  for (int64_t id : config.eos_token_ids) {
    if (id < 0 || id >= config.vocab_size) {
      reader.fail("eos_token_id", std::to_string(id) + " is outside the vocabulary [0, " +
                                      std::to_string(config.vocab_size) + ")");
    }
  }
  config.initializer_range = reader.number_or("initializer_range", 0.02);
  if (config.initializer_range <= 0) reader.fail("initializer_range", "must be > 0");
  parse_head(reader, config);
  // Only a score head reads it; causal LMs' configs hold odd values (-1, ids past the vocabulary).
  const auto pad = parse_token_ids(reader, "pad_token_id");
  const int64_t pad_id = pad.empty() ? -1 : pad.front();
  if (pad_id >= 0 && pad_id < config.vocab_size) {
    config.pad_token_id = pad_id;
  } else if (config.head == ModelHead::score && pad_id != -1) {
    reader.fail("pad_token_id", std::to_string(pad_id) + " is outside the vocabulary [0, " +
                                    std::to_string(config.vocab_size) + ")");
  }
  const std::string dtype = reader.string_or("torch_dtype", reader.string_or("dtype", "bfloat16"));
  if (!find_enum(dtype, config.torch_dtype)) {
    reader.fail("torch_dtype", "is '" + dtype + "'; expected " + enum_choices<TorchDtype>());
  }
  if (reader.has("quantization_config")) parse_quantization(reader, root.at("quantization_config"), config);
  check_model_size(reader, config);
  return config;
}

std::string checkpoint_model_type(const ModelConfig& config) {
  const MultimodalWrapper* wrapper = config.multimodal_text ? multimodal_wrapper_of(config.model_type) : nullptr;
  return wrapper ? wrapper->model_type : enum_name(config.model_type);
}

const char* peft_default_target_modules(const ModelConfig& config) {
  if (config.multimodal_text) {
    const MultimodalWrapper* wrapper = multimodal_wrapper_of(config.model_type);
    return wrapper ? wrapper->peft_target_modules : nullptr;
  }
  for (const PeftDefaultTargets& row : kPeftDefaultTargets) {
    if (row.type == config.model_type) return row.modules;
  }
  return nullptr;
}

ModelConfig load_model_config(const std::string& path) {
  namespace fs = std::filesystem;
  const bool names_file = fs::path(path).extension() == ".json" && !fs::is_directory(path);
  const fs::path file = names_file ? fs::path(path) : fs::path(path) / "config.json";
  std::ifstream in(file);
  if (!in) {
    if (looks_like_hub_id(path)) {
      throw ModelError("model.path = " + path + ": " + hub_id_refusal(path) + ", then set model.path = " +
                       hub_download_directory(path));
    }
    throw ModelError(file.string() + ": cannot open; model.path must be a Hugging Face model "
                                     "directory holding config.json and *.safetensors");
  }
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& error) {
    throw ModelError(file.string() + ": not valid JSON (" + error.what() + ")");
  }
  return parse_model_config(root, file.string());
}

void require_full_precision(const ModelConfig& config, const std::string& path) {
  if (config.weight_storage == WeightStorage::bnb_nf4) {
    throw ModelError(path + " holds bitsandbytes 4-bit nf4 weights (config.json quantization_config): a run trains "
                     "on them only as a QLoRA run's frozen base (train.method = qlora); to train every weight, point "
                     "model.path at the full-precision model");
  }
}

}  // namespace st
