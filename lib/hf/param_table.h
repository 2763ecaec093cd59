// The parameters of a Llama-family model, declared once: one row per parameter with its
// Hugging Face name, the typed key a forward binds it by, its shape rule from the config, when
// it exists, how a preset initialises it and which LoRA target adapts it. The HF names in
// state_dict order, the shapes, the FSDP units' parameter lists (embedding, one per decoder
// layer, head = final norm + lm_head or a reward model's score), the PEFT adapter names, the
// loaders and the exports all follow from these tables (param_table.cpp). Llama, Qwen2 and
// Mistral share the decoder and so these tables; a family with other parameters declares its own
// rows here.
#pragma once

#include <ATen/core/Tensor.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hf/lora_target.h"
#include "hf/model_config.h"
#include "util/enum_names.h"

namespace st {

// Tensors by HF (or PEFT) name: what safetensors files hold and exports write.
using TensorMap = std::unordered_map<std::string, at::Tensor>;

// The parameters outside the decoder layers.
enum class ModelParam { embed, final_norm, lm_head, score };
inline constexpr size_t kModelParamCount = 4;
// One decoder layer's parameters.
// router, expert_*: a sparse layer's MLP (kExpertRows), in place of gate_proj .. down_bias.
enum class LayerParam {
  q_proj, q_bias, k_proj, k_bias, v_proj, v_bias, o_proj, o_bias,
  gate_proj, gate_bias, up_proj, up_bias, down_proj, down_bias,
  input_norm, post_attention_norm, q_norm, k_norm,
  router, expert_gate, expert_up, expert_down,
  pre_feedforward_norm, post_feedforward_norm,
  linear_qkv, linear_z, linear_b, linear_a, linear_conv, linear_dt_bias, linear_a_log, linear_norm, linear_out,
  shared_gate, shared_up, shared_down, shared_expert_gate
};
inline constexpr size_t kLayerParamCount = 37;

// A size a shape takes from the config (none: the shape has fewer dimensions).
// query_rows: q_proj's outputs (q_size, twice that with FamilySpec::attention_output_gate); linear_*:
// a Gated DeltaNet layer's (LinearAttentionShape); shared_intermediate: the shared expert's width.
enum class Dim {
  none, one, vocab, hidden, intermediate, q_size, kv_size, head_dim, experts, expert_intermediate, query_rows,
  linear_conv_channels, linear_value_dim, linear_value_heads, linear_value_head_dim, linear_conv_kernel,
  shared_intermediate
};
// When a parameter exists.
// untied_head: an lm head of its own (not tied); score_head: ModelHead::score; sandwich_norms:
// LayerNorms::sandwich's norms around the MLP; shared_expert: a sparse layer's shared expert
// (ExpertShape::shared_intermediate_size).
enum class Presence {
  always, untied_head, score_head, qkv_bias, o_proj_bias, mlp_bias, qk_norm, sandwich_norms, shared_expert
};
// How a preset initialises it (HF's _init_weights); lora_a: PEFT's kaiming-uniform A; ones: a
// norm's identity weight, which is zeros under NormStyle::one_plus_weight; plain_ones: ones whatever
// the norm style (the Gated DeltaNet's dt_bias and gated norm); decay_log: log U(0.01, 16) per value
// head (transformers' A_log).
enum class ParamInit { normal, ones, zeros, lora_a, plain_ones, decay_log };

struct ModelParamRow {
  ModelParam key;
  const char* hf_name;
  Dim rows, cols;
  Presence presence;
  ParamInit init;
};
struct LayerParamRow {
  LayerParam key;
  const char* hf_suffix;  // after "model.layers.<i>."
  Dim rows, cols;
  Presence presence;
  ParamInit init;
  std::optional<LoraTarget> adapter;  // on the weights a LoRA target wraps
  Dim depth = Dim::none;              // a third dimension (the depthwise conv's [channels, 1, kernel])
};

// In state_dict order: the embedding, then each layer, then the head.
inline constexpr ModelParamRow kEmbeddingRows[] = {
    {ModelParam::embed, "model.embed_tokens.weight", Dim::vocab, Dim::hidden, Presence::always, ParamInit::normal}};
inline constexpr ModelParamRow kHeadRows[] = {
    {ModelParam::final_norm, "model.norm.weight", Dim::hidden, Dim::none, Presence::always, ParamInit::ones},
    {ModelParam::lm_head, "lm_head.weight", Dim::vocab, Dim::hidden, Presence::untied_head, ParamInit::normal},
    {ModelParam::score, "score.weight", Dim::one, Dim::hidden, Presence::score_head, ParamInit::normal}};
inline constexpr LayerParamRow kLayerRows[] = {
    {LayerParam::q_proj, "self_attn.q_proj.weight", Dim::query_rows, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::q},
    {LayerParam::q_bias, "self_attn.q_proj.bias", Dim::query_rows, Dim::none, Presence::qkv_bias, ParamInit::zeros, {}},
    {LayerParam::k_proj, "self_attn.k_proj.weight", Dim::kv_size, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::k},
    {LayerParam::k_bias, "self_attn.k_proj.bias", Dim::kv_size, Dim::none, Presence::qkv_bias, ParamInit::zeros, {}},
    {LayerParam::v_proj, "self_attn.v_proj.weight", Dim::kv_size, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::v},
    {LayerParam::v_bias, "self_attn.v_proj.bias", Dim::kv_size, Dim::none, Presence::qkv_bias, ParamInit::zeros, {}},
    {LayerParam::o_proj, "self_attn.o_proj.weight", Dim::hidden, Dim::q_size, Presence::always, ParamInit::normal, LoraTarget::o},
    {LayerParam::o_bias, "self_attn.o_proj.bias", Dim::hidden, Dim::none, Presence::o_proj_bias, ParamInit::zeros, {}},
    {LayerParam::q_norm, "self_attn.q_norm.weight", Dim::head_dim, Dim::none, Presence::qk_norm, ParamInit::ones, {}},
    {LayerParam::k_norm, "self_attn.k_norm.weight", Dim::head_dim, Dim::none, Presence::qk_norm, ParamInit::ones, {}},
    {LayerParam::gate_proj, "mlp.gate_proj.weight", Dim::intermediate, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::gate},
    {LayerParam::gate_bias, "mlp.gate_proj.bias", Dim::intermediate, Dim::none, Presence::mlp_bias, ParamInit::zeros, {}},
    {LayerParam::up_proj, "mlp.up_proj.weight", Dim::intermediate, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::up},
    {LayerParam::up_bias, "mlp.up_proj.bias", Dim::intermediate, Dim::none, Presence::mlp_bias, ParamInit::zeros, {}},
    {LayerParam::down_proj, "mlp.down_proj.weight", Dim::hidden, Dim::intermediate, Presence::always, ParamInit::normal, LoraTarget::down},
    {LayerParam::down_bias, "mlp.down_proj.bias", Dim::hidden, Dim::none, Presence::mlp_bias, ParamInit::zeros, {}},
    {LayerParam::input_norm, "input_layernorm.weight", Dim::hidden, Dim::none, Presence::always, ParamInit::ones, {}},
    {LayerParam::post_attention_norm, "post_attention_layernorm.weight", Dim::hidden, Dim::none, Presence::always, ParamInit::ones, {}},
    {LayerParam::pre_feedforward_norm, "pre_feedforward_layernorm.weight", Dim::hidden, Dim::none, Presence::sandwich_norms, ParamInit::ones, {}},
    {LayerParam::post_feedforward_norm, "post_feedforward_layernorm.weight", Dim::hidden, Dim::none, Presence::sandwich_norms, ParamInit::ones, {}},
    // A Gated DeltaNet layer's token mixer, in self_attn's place (ModelConfig::gated_delta_layer).
    {LayerParam::linear_qkv, "linear_attn.in_proj_qkv.weight", Dim::linear_conv_channels, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::in_proj_qkv},
    {LayerParam::linear_z, "linear_attn.in_proj_z.weight", Dim::linear_value_dim, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::in_proj_z},
    {LayerParam::linear_b, "linear_attn.in_proj_b.weight", Dim::linear_value_heads, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::in_proj_b},
    {LayerParam::linear_a, "linear_attn.in_proj_a.weight", Dim::linear_value_heads, Dim::hidden, Presence::always, ParamInit::normal, LoraTarget::in_proj_a},
    {LayerParam::linear_conv, "linear_attn.conv1d.weight", Dim::linear_conv_channels, Dim::one, Presence::always, ParamInit::normal, {}, Dim::linear_conv_kernel},
    {LayerParam::linear_dt_bias, "linear_attn.dt_bias", Dim::linear_value_heads, Dim::none, Presence::always, ParamInit::plain_ones, {}},
    {LayerParam::linear_a_log, "linear_attn.A_log", Dim::linear_value_heads, Dim::none, Presence::always, ParamInit::decay_log, {}},
    {LayerParam::linear_norm, "linear_attn.norm.weight", Dim::linear_value_head_dim, Dim::none, Presence::always, ParamInit::plain_ones, {}},
    {LayerParam::linear_out, "linear_attn.out_proj.weight", Dim::hidden, Dim::linear_value_dim, Presence::always, ParamInit::normal, LoraTarget::out},
    // A sparse layer's shared expert beside the routed ones (Experts::qwen_shared), in the layer's
    // unit: every token runs it, whatever the expert-parallel split. The MLP's targets adapt it on
    // such a model, its routed experts left as they are (PEFT's module names match these there).
    {LayerParam::shared_gate, "mlp.shared_expert.gate_proj.weight", Dim::shared_intermediate, Dim::hidden, Presence::shared_expert, ParamInit::normal, LoraTarget::gate},
    {LayerParam::shared_up, "mlp.shared_expert.up_proj.weight", Dim::shared_intermediate, Dim::hidden, Presence::shared_expert, ParamInit::normal, LoraTarget::up},
    {LayerParam::shared_down, "mlp.shared_expert.down_proj.weight", Dim::hidden, Dim::shared_intermediate, Presence::shared_expert, ParamInit::normal, LoraTarget::down},
    {LayerParam::shared_expert_gate, "mlp.shared_expert_gate.weight", Dim::one, Dim::hidden, Presence::shared_expert, ParamInit::normal, LoraTarget::shared_expert_gate}};
// The token mixer a layer parameter belongs to, if one: attention's (self_attn.*) or the Gated
// DeltaNet's (linear_attn.*); a layer holds only its own mixer's (ModelConfig::token_mixers).
std::optional<TokenMixer> mixer_of(LayerParam param);
// Whether `layer` has the parameter: a mixer's only in the layers that run that mixer.
bool layer_holds(const ModelConfig& config, int64_t layer, LayerParam param);
// The targets among `targets` whose projection some layer of the model holds (PEFT wraps those;
// it refuses a list none of whose modules the model has).
std::vector<LoraTarget> held_lora_targets(const ModelConfig& config, const std::vector<LoraTarget>& targets);
// Every target the model can take (held_lora_targets of them all): what a reader of pairs looks for.
std::vector<LoraTarget> model_lora_targets(const ModelConfig& config);

// A sparse layer's MLP: the router (in the layer's unit, where the dense MLP would be), then the
// experts (expert_params: a unit of their own, expert by expert, each gate, up, down, so a run of
// experts is one run of elements whatever the expert-parallel split). Names follow the family's
// Experts style (kExpertNaming).
struct ExpertParamRow {
  LayerParam key;
  Dim rows, cols;
};
inline constexpr ExpertParamRow kExpertRows[] = {{LayerParam::router, Dim::experts, Dim::hidden},
                                                 {LayerParam::expert_gate, Dim::expert_intermediate, Dim::hidden},
                                                 {LayerParam::expert_up, Dim::expert_intermediate, Dim::hidden},
                                                 {LayerParam::expert_down, Dim::hidden, Dim::expert_intermediate}};
// "<block>.gate.weight" and "<block>.experts.<e>.<projection>.weight" after the layer prefix.
struct ExpertNaming {
  Experts style;
  const char* block;
  const char* gate;
  const char* up;
  const char* down;
};
inline constexpr ExpertNaming kExpertNaming[] = {{Experts::qwen_moe, "mlp", "gate_proj", "up_proj", "down_proj"},
                                                 {Experts::mixtral, "block_sparse_moe", "w1", "w3", "w2"},
                                                 {Experts::qwen_shared, "mlp", "gate_proj", "up_proj", "down_proj"}};

// What a parameter is, whatever its name: a model parameter, a layer's, or one matrix of a
// layer's LoRA pair. The FSDP engine binds gathered views to a forward by it.
struct ParamKey {
  enum class Kind { model, layer, lora_a, lora_b };
  Kind kind = Kind::model;
  ModelParam model = ModelParam::embed;   // kind model
  LayerParam member = LayerParam::q_proj;  // kind layer
  LoraTarget target = LoraTarget::q;      // kinds lora_a, lora_b
  int64_t layer = -1;                     // all kinds but model
  int64_t expert = -1;                    // members expert_gate, expert_up, expert_down

  bool is(ModelParam param) const { return kind == Kind::model && model == param; }
};

struct ParamSpec {
  using Init = ParamInit;
  std::string name;
  std::vector<int64_t> shape;
  Init init = Init::normal;
  ParamKey key;
  double init_std = 0.02;  // Init::normal: the config's initializer_range

  int64_t numel() const;
};

std::vector<ParamSpec> embedding_params(const ModelConfig& config);
// A layer's parameters but its experts': a sparse layer holds its router in the MLP's place.
std::vector<ParamSpec> layer_params(const ModelConfig& config, int64_t layer);
// A sparse layer's experts, expert by expert (gate, up, down of expert 0, then expert 1 ...); none
// for a dense layer.
std::vector<ParamSpec> expert_params(const ModelConfig& config, int64_t layer);
std::vector<ParamSpec> head_params(const ModelConfig& config);
std::vector<ParamSpec> all_params(const ModelConfig& config);

std::string layer_prefix(int64_t layer);  // "model.layers.<layer>."
const char* model_param_name(ModelParam param);
// A dense layer parameter's name (not the router's or an expert's: expert_param_name).
std::string layer_param_name(int64_t layer, LayerParam param);
// The router's (expert ignored) or one expert's projection, named as the family's checkpoints do.
std::string expert_param_name(const ModelConfig& config, int64_t layer, LayerParam param, int64_t expert);
// Whether AdamW decays the parameter: every one but the norms and biases, as transformers'
// Trainer picks them by name (get_decay_parameter_names: TRL and LlamaFactory train with it) - a
// Gated DeltaNet layer's A_log is decayed, its dt_bias and gated norm are not.
bool weight_decayed(const ParamKey& key);
// The router and the expert projections: what only a sparse layer has.
bool is_expert_member(LayerParam param);
// The parameter the head's log-probs multiply by: the embedding when tied, else lm_head.
ModelParam lm_head_param(const ModelConfig& config);

// PEFT's names and shapes of the adapters. "q_proj", .., "down_proj":
std::string peft_module_name(LoraTarget target);
// "model.layers.<i>.self_attn.q_proj.weight": the base weight a target adapts.
std::string adapted_weight_name(int64_t layer, LoraTarget target);
LayerParam adapted_param(LoraTarget target);
// A decoder layer's projection weight: what a LoRA target wraps and QLoRA holds in 4 bits
// (bitsandbytes quantizes the layers' nn.Linear weights; embeddings, norms, biases and the
// lm_head stay as they are).
bool is_projection_weight(const ParamKey& key);
// An adapter run's base modules trained in full beside the adapters (PEFT's modules_to_save):
// a reward model's score, under PEFT's name "base_model.model.score.weight"; none for a causal LM.
std::vector<ParamSpec> saved_module_params(const ModelConfig& config);
std::string saved_module_name(const std::string& hf_name);  // "base_model.model.<hf_name>"
// "base_model.model.model.layers.<i>.self_attn.q_proj.lora_A.weight" (and lora_B): a dense
// projection's (lora_layer_params names a sparse layer's expert pairs and a shared expert's).
std::string lora_a_name(int64_t layer, LoraTarget target);
std::string lora_b_name(int64_t layer, LoraTarget target);
// Per layer: A then B of each target, in model order. A [r, in] is initialised as PEFT does
// (kaiming-uniform, bound 1 / sqrt(in)), B [out, r] to zero. In a mixture-of-experts model the MLP
// targets adapt the experts as PEFT 0.21 maps gate_proj, up_proj, down_proj onto transformers 5's
// stacked experts (target_parameters gate_up_proj, down_proj; gate_up wrapped first): target gate
// carries gate_up's pair of rank 2 r (kFusedExpertRank: gate's r and up's r fused; alpha doubled
// with it, so the scale is unchanged), A [2 r E, D], B [2 I, 2 r E] under "mlp.experts.base_layer",
// up none of its own, down down's pair, A [r E, I], B [D, r E] under "mlp.experts"; a dense layer
// of such a model keeps its MLP unadapted (as PEFT). gate, up and down are targeted together or
// not at all there (ModelError otherwise). A model with a shared expert (Qwen3.5-MoE) is not
// mapped so by PEFT: there gate, up and down are plain pairs on mlp.shared_expert.*'s projections
// and shared_expert_gate one on its gate, the routed experts unadapted.
std::vector<ParamSpec> lora_layer_params(const ModelConfig& config, int64_t layer,
                                         const std::vector<LoraTarget>& targets, int64_t r);
inline constexpr int64_t kFusedExpertRank = 2;  // gate_up's rank over lora.r
// Whether the MLP's targets adapt the routed experts through PEFT's stacked pairs (a model with
// experts and no shared expert); else they adapt dense or shared-expert projections, plain pairs.
bool lora_adapts_routed_experts(const ModelConfig& config);
// One base weight a target's pair changes, W += scale * B[b_rows] A: `expert` >= 0 picks that
// expert's slice of a stacked experts' pair (model/lora.h adapted_pair); b_rows [begin, begin +
// count) of B (count -1: all) tell gate and up apart in gate_up's pair.
struct AdaptedWeight {
  std::string weight;
  int64_t expert = -1;
  int64_t b_row_begin = 0, b_row_count = -1;
};
// What target `target` of `layer` adapts: the dense projection, or each expert's (one target may
// change several weights; up's are gate's pair's), or nothing (a MoE model's dense MLP); on a model
// with a shared expert the MLP's targets adapt its projections (adapted_layer_param).
std::vector<AdaptedWeight> adapted_weights(const ModelConfig& config, int64_t layer, LoraTarget target);
// The layer parameter `target` adapts in `config`'s layers: the shared expert's for the MLP's
// targets where the model has one, else the row whose adapter it is (adapted_param).
LayerParam adapted_layer_param(const ModelConfig& config, LoraTarget target);

}  // namespace st
