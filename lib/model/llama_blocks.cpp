#include "model/llama_blocks.h"

#include <ATen/ATen.h>

#include <cmath>

#include "model/gated_delta_layer.h"
#include "model/moe_block.h"
#include "model/swiglu.h"
#include "util/errors.h"
#include "util/torch_compat.h"

namespace st {
namespace {

// [B, T, heads * head_dim] -> [B, heads, T, head_dim]; with a `norm` weight [head_dim] (Qwen3's
// q_norm / k_norm), each head is RMS-normed first, on the contiguous [B, T, heads, head_dim].
at::Tensor split_heads(const at::Tensor& x, int64_t heads, int64_t head_dim, const at::Tensor& norm = {},
                       double eps = 0.0, NormStyle style = NormStyle::weight) {
  at::Tensor per_head = x.view({x.size(0), x.size(1), heads, head_dim});
  if (norm.defined()) per_head = rms_norm(per_head, norm, eps, style);
  return per_head.transpose(1, 2);
}

// [B, kv, T, d] -> [B, kv * repeats, T, d], each head repeated in place (transformers'
// repeat_kv: one expand + copy, where repeat_interleave is several times slower on the CPU).
at::Tensor repeat_kv_heads(const at::Tensor& x, int64_t repeats) {
  const auto b = x.size(0), kv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, repeats, t, d}).reshape({b, kv * repeats, t, d});
}

// A projection by its rows, with its adapter when it has one.
at::Tensor projection(const at::Tensor& x, LayerParam weight, LayerParam bias, const LayerWeights& w,
                      LoraTarget target, ActivationCache* cache) {
  return adapted_linear(x, w[weight], w[bias], w, target, cache);
}

void bind_layer_param(LayerWeights& w, const ParamKey& key, const at::Tensor& tensor) {
  std::vector<at::Tensor>* experts = nullptr;
  switch (key.member) {
    case LayerParam::expert_gate: experts = &w.experts.gate; break;
    case LayerParam::expert_up: experts = &w.experts.up; break;
    case LayerParam::expert_down: experts = &w.experts.down; break;
    default: w[key.member] = tensor; return;
  }
  if (static_cast<int64_t>(experts->size()) <= key.expert) experts->resize(static_cast<size_t>(key.expert) + 1);
  (*experts)[static_cast<size_t>(key.expert)] = tensor;
}

}  // namespace

at::Tensor adapted_linear(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const LayerWeights& w,
                          LoraTarget target, ActivationCache* cache) {
  at::Tensor output = linear_op(x, weight, bias, cache);
  const LoraPair& pair = w.lora[static_cast<size_t>(target)];
  if (!pair.a.defined()) return output;
  return output + lora_delta(x, pair, w.adapter, lora_stream(w.layer, target), w.token_places);
}

bool LayerWeights::bind(const ParamKey& key, const at::Tensor& tensor) {
  switch (key.kind) {
    case ParamKey::Kind::model: return false;
    case ParamKey::Kind::layer: bind_layer_param(*this, key, tensor); break;
    case ParamKey::Kind::lora_a: lora[static_cast<size_t>(key.target)].a = tensor; break;
    case ParamKey::Kind::lora_b: lora[static_cast<size_t>(key.target)].b = tensor; break;
  }
  layer = key.layer;
  return true;
}

LlamaWeights llama_weights(const TensorMap& tensors, const ModelConfig& config,
                           const std::shared_ptr<ExpertExchange>& experts) {
  const auto pick = [&](const std::string& name) -> const at::Tensor& {
    const auto found = tensors.find(name);
    if (found == tensors.end()) throw ModelError("model weights lack tensor '" + name + "'");
    return found->second;
  };
  const int64_t run = experts ? config.experts.num_experts / experts->size() : 0;
  const auto another_ranks = [&](int64_t expert) { return experts && expert >= 0 && expert / run != experts->rank(); };
  LlamaWeights weights;
  weights.layers.resize(static_cast<size_t>(config.num_hidden_layers));
  for (LayerWeights& layer : weights.layers) layer.expert_exchange = experts;
  for (const ParamSpec& spec : all_params(config)) {
    if (another_ranks(spec.key.expert)) continue;
    const at::Tensor& tensor = pick(spec.name);
    if (spec.key.kind == ParamKey::Kind::layer) {
      weights.layers[static_cast<size_t>(spec.key.layer)].bind(spec.key, tensor);
      continue;
    }
    switch (spec.key.model) {
      case ModelParam::embed: weights.embed = tensor; break;
      case ModelParam::final_norm: weights.final_norm = tensor; break;
      case ModelParam::lm_head: weights.lm_head = tensor; break;
      case ModelParam::score: weights.score = tensor; break;
    }
  }
  if (config.head_reads_embedding()) weights.lm_head = weights.embed;
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    const std::vector<ParamSpec> pairs = lora_layer_params(config, layer, model_lora_targets(config), 1);
    for (size_t i = 0; i < pairs.size(); i += 2) {  // A then B of each target: both or neither
      if (tensors.count(pairs[i].name) == 0) continue;
      weights.layers[static_cast<size_t>(layer)].bind(pairs[i].key, pick(pairs[i].name));
      weights.layers[static_cast<size_t>(layer)].bind(pairs[i + 1].key, pick(pairs[i + 1].name));
    }
  }
  return weights;
}

at::Tensor attention_block(const LayerWeights& w, const at::Tensor& x, const TokenPositions& positions,
                           const ModelConfig& config, ActivationCache* cache, KvCache* kv_cache) {
  const int64_t heads = config.num_attention_heads;
  const int64_t kv_heads = config.num_key_value_heads;
  const int64_t head_dim = config.head_dim;
  const double eps = config.rms_norm_eps;  // Qwen3 and Gemma norm q and k per head (undefined weights otherwise)
  const NormStyle style = family_of(config.model_type).norm_style;
  at::Tensor query = projection(x, LayerParam::q_proj, LayerParam::q_bias, w, LoraTarget::q, cache);
  at::Tensor gate;  // [B, T, H * head_dim]: each head's query, then its gate, in q_proj's rows
  if (config.attention_output_gate) {
    const at::Tensor per_head = query.view({x.size(0), x.size(1), heads, 2 * head_dim});
    gate = per_head.narrow(-1, head_dim, head_dim).reshape({x.size(0), x.size(1), heads * head_dim});
    query = per_head.narrow(-1, 0, head_dim).reshape({x.size(0), x.size(1), heads * head_dim});
  }
  at::Tensor q = split_heads(query, heads, head_dim, w[LayerParam::q_norm], eps, style);
  at::Tensor k = split_heads(projection(x, LayerParam::k_proj, LayerParam::k_bias, w, LoraTarget::k, cache), kv_heads,
                             head_dim, w[LayerParam::k_norm], eps, style);
  at::Tensor v = split_heads(projection(x, LayerParam::v_proj, LayerParam::v_bias, w, LoraTarget::v, cache), kv_heads, head_dim);
  // Every attention path scales scores by head_dim^-0.5; another scale (query_pre_attn_scalar^-0.5)
  // is the queries multiplied by the ratio first.
  const double query_scale = config.query_pre_attn_scalar > 0
                                 ? std::sqrt(static_cast<double>(head_dim) / config.query_pre_attn_scalar) : 1.0;
  if (query_scale != 1.0) q = q * query_scale;
  q = apply_rotary(q, positions.rope);
  k = apply_rotary(k, positions.rope);
  if (kv_cache) {
    const auto layer = static_cast<size_t>(w.layer);
    at::Tensor& keys = kv_cache->keys[layer];
    at::Tensor& values = kv_cache->values[layer];
    int64_t end = kv_cache->length + x.size(1);
    if (kv_cache->columns.defined()) {  // k, v [B, kv_heads, 1, head_dim]: each row at its column
      const at::Tensor index = kv_cache->columns.view({-1, 1, 1, 1}).expand(k.sizes());
      keys.scatter_(2, index, k);
      values.scatter_(2, index, v);
      end = kv_cache->length;
    } else {
      keys.narrow(2, kv_cache->length, x.size(1)).copy_(k);
      values.narrow(2, kv_cache->length, x.size(1)).copy_(v);
    }
    k = keys.narrow(2, 0, end);
    v = values.narrow(2, 0, end);
  }
  at::Tensor merged;  // [B, T, H * head_dim]
  if (positions.spans.defined()) {
    // [B, heads, T, d] -> [B * T, heads, d]: the token-major layout of the varlen kernels.
    auto tokens = [](const at::Tensor& t) { return t.transpose(1, 2).reshape({-1, t.size(1), t.size(3)}); };
    at::Tensor keys = tokens(k), values = tokens(v);
    if (positions.context) {  // the group's keys and values, in one collective
      const at::Tensor gathered = gather_context(positions.context, at::cat({keys, values}, -1));
      keys = gathered.narrow(-1, 0, head_dim);
      values = gathered.narrow(-1, head_dim, head_dim);
    }
    merged = span_attention(tokens(q), keys, values, positions.spans).view({x.size(0), x.size(1), heads * head_dim});
  } else {
    if (kv_heads != heads) {  // each k/v head serves heads / kv_heads consecutive query heads
      k = repeat_kv_heads(k, heads / kv_heads);
      v = repeat_kv_heads(v, heads / kv_heads);
    }
    const at::Tensor attended = positions.attention_mask.defined()  // [B, H, T, head_dim]
                                    ? compat::masked_attention(q, k, v, positions.attention_mask)
                                    : compat::causal_attention(q, k, v);
    merged = attended.transpose(1, 2).reshape({x.size(0), x.size(1), heads * head_dim});
  }
  if (gate.defined()) merged = merged * at::sigmoid(gate);
  return projection(merged, LayerParam::o_proj, LayerParam::o_bias, w, LoraTarget::o, cache);
}

at::Tensor mlp_block(const LayerWeights& w, const at::Tensor& x, ActivationCache* cache, Activation activation) {
  // In this order: a selective-recompute cache replays the matmuls as they were recorded.
  const at::Tensor gate = projection(x, LayerParam::gate_proj, LayerParam::gate_bias, w, LoraTarget::gate, cache);
  const at::Tensor up = projection(x, LayerParam::up_proj, LayerParam::up_bias, w, LoraTarget::up, cache);
  return projection(gated_activation(gate, up, activation), LayerParam::down_proj, LayerParam::down_bias, w,
                    LoraTarget::down, cache);
}

at::Tensor decoder_layer(const LayerWeights& w, const at::Tensor& hidden, const TokenPositions& positions,
                         const ModelConfig& config, ActivationCache* cache, KvCache* kv_cache, Routing* routing) {
  const double eps = config.rms_norm_eps;
  const FamilySpec& family = family_of(config.model_type);
  const NormStyle style = family.norm_style;
  const auto mlp = [&](const at::Tensor& normed) {
    return config.sparse_layer(w.layer) ? moe_block(w, normed, config, cache, routing)
                                        : mlp_block(w, normed, cache, family.activation);
  };
  const at::Tensor normed = rms_norm(hidden, w[LayerParam::input_norm], eps, style);
  const at::Tensor attention = config.gated_delta_layer(w.layer)
                                   ? gated_delta_block(w, normed, positions, config, kv_cache)
                                   : attention_block(w, normed, positions, config, cache, kv_cache);
  if (family.layer_norms == LayerNorms::pre) {
    const NormedSum after_attention = add_rms_norm(hidden, attention, w[LayerParam::post_attention_norm], eps, style);
    return after_attention.sum + mlp(after_attention.normed);
  }
  // Sandwich: each branch's output normed before its residual add.
  const NormedSum after_attention = add_rms_norm(
      hidden, rms_norm(attention, w[LayerParam::post_attention_norm], eps, style), w[LayerParam::pre_feedforward_norm],
      eps, style);
  return after_attention.sum + rms_norm(mlp(after_attention.normed), w[LayerParam::post_feedforward_norm], eps, style);
}

}  // namespace st
