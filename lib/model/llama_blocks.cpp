#include "model/llama_blocks.h"

#include <ATen/ATen.h>

#include "model/hf_names.h"
#include "model/swiglu.h"
#include "util/errors.h"
#include "util/torch_compat.h"

namespace st {
namespace {

const at::Tensor& pick(const TensorMap& tensors, const std::string& name) {
  const auto found = tensors.find(name);
  if (found == tensors.end()) throw ModelError("model weights lack tensor '" + name + "'");
  return found->second;
}

at::Tensor pick_if(const TensorMap& tensors, const std::string& name, bool present) {
  return present ? pick(tensors, name) : at::Tensor();
}

// [B, T, heads * head_dim] -> [B, heads, T, head_dim]
at::Tensor split_heads(const at::Tensor& x, int64_t heads, int64_t head_dim) {
  return x.view({x.size(0), x.size(1), heads, head_dim}).transpose(1, 2);
}

// [B, kv, T, d] -> [B, kv * repeats, T, d], each head repeated in place (transformers'
// repeat_kv: one expand + copy, where repeat_interleave is several times slower on the CPU).
at::Tensor repeat_kv_heads(const at::Tensor& x, int64_t repeats) {
  const auto b = x.size(0), kv = x.size(1), t = x.size(2), d = x.size(3);
  return x.unsqueeze(2).expand({b, kv, repeats, t, d}).reshape({b, kv * repeats, t, d});
}

// A projection with its adapter, when it has one.
at::Tensor projection(const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias, const LayerWeights& w,
                      LoraTarget target, ActivationCache* cache) {
  at::Tensor output = linear_op(x, weight, bias, cache);
  const LoraPair& pair = w.lora[static_cast<size_t>(target)];
  if (!pair.a.defined()) return output;
  const auto stream = w.layer * static_cast<int64_t>(kLoraTargetCount) + static_cast<int64_t>(target);
  return output + lora_delta(x, pair, w.adapter, stream);
}

}  // namespace

LayerWeights layer_weights(const TensorMap& tensors, const ModelConfig& config, int64_t layer) {
  const std::string p = layer_prefix(layer);
  LayerWeights w;
  w.input_norm = pick(tensors, p + "input_layernorm.weight");
  w.post_attention_norm = pick(tensors, p + "post_attention_layernorm.weight");
  w.q_proj = pick(tensors, p + "self_attn.q_proj.weight");
  w.k_proj = pick(tensors, p + "self_attn.k_proj.weight");
  w.v_proj = pick(tensors, p + "self_attn.v_proj.weight");
  w.o_proj = pick(tensors, p + "self_attn.o_proj.weight");
  w.q_bias = pick_if(tensors, p + "self_attn.q_proj.bias", config.qkv_bias);
  w.k_bias = pick_if(tensors, p + "self_attn.k_proj.bias", config.qkv_bias);
  w.v_bias = pick_if(tensors, p + "self_attn.v_proj.bias", config.qkv_bias);
  w.o_bias = pick_if(tensors, p + "self_attn.o_proj.bias", config.o_proj_bias);
  w.gate_proj = pick(tensors, p + "mlp.gate_proj.weight");
  w.up_proj = pick(tensors, p + "mlp.up_proj.weight");
  w.down_proj = pick(tensors, p + "mlp.down_proj.weight");
  w.gate_bias = pick_if(tensors, p + "mlp.gate_proj.bias", config.mlp_bias);
  w.up_bias = pick_if(tensors, p + "mlp.up_proj.bias", config.mlp_bias);
  w.down_bias = pick_if(tensors, p + "mlp.down_proj.bias", config.mlp_bias);
  w.layer = layer;
  for (const auto& entry : EnumNames<LoraTarget>::table) {
    const auto a = tensors.find(lora_a_name(layer, entry.value));
    if (a == tensors.end()) continue;
    w.lora[static_cast<size_t>(entry.value)] = {a->second, pick(tensors, lora_b_name(layer, entry.value))};
  }
  return w;
}

LlamaWeights llama_weights(const TensorMap& tensors, const ModelConfig& config) {
  LlamaWeights weights;
  weights.embed = pick(tensors, kEmbedName);
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    weights.layers.push_back(layer_weights(tensors, config, layer));
  }
  weights.final_norm = pick(tensors, kFinalNormName);
  weights.lm_head = config.tie_word_embeddings ? weights.embed : pick(tensors, kLmHeadName);
  return weights;
}

at::Tensor attention_block(const LayerWeights& w, const at::Tensor& x, const TokenPositions& positions,
                           const ModelConfig& config, ActivationCache* cache, KvCache* kv_cache) {
  const int64_t heads = config.num_attention_heads;
  const int64_t kv_heads = config.num_key_value_heads;
  const int64_t head_dim = config.head_dim;
  at::Tensor q = split_heads(projection(x, w.q_proj, w.q_bias, w, LoraTarget::q, cache), heads, head_dim);
  at::Tensor k = split_heads(projection(x, w.k_proj, w.k_bias, w, LoraTarget::k, cache), kv_heads, head_dim);
  at::Tensor v = split_heads(projection(x, w.v_proj, w.v_bias, w, LoraTarget::v, cache), kv_heads, head_dim);
  q = apply_rotary(q, positions.rope);
  k = apply_rotary(k, positions.rope);
  if (kv_cache) {
    const auto layer = static_cast<size_t>(w.layer);
    const int64_t end = kv_cache->length + x.size(1);
    kv_cache->keys[layer].narrow(2, kv_cache->length, x.size(1)).copy_(k);
    kv_cache->values[layer].narrow(2, kv_cache->length, x.size(1)).copy_(v);
    k = kv_cache->keys[layer].narrow(2, 0, end);
    v = kv_cache->values[layer].narrow(2, 0, end);
  }
  at::Tensor merged;  // [B, T, H * head_dim]
  if (positions.spans.defined()) {
    // [B, heads, T, d] -> [B * T, heads, d]: the token-major layout of the varlen kernels.
    auto tokens = [](const at::Tensor& t) { return t.transpose(1, 2).reshape({-1, t.size(1), t.size(3)}); };
    merged = span_attention(tokens(q), tokens(k), tokens(v), positions.spans)
                 .view({x.size(0), x.size(1), heads * head_dim});
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
  return projection(merged, w.o_proj, w.o_bias, w, LoraTarget::o, cache);
}

at::Tensor mlp_block(const LayerWeights& w, const at::Tensor& x, ActivationCache* cache) {
  // In this order: a selective-recompute cache replays the matmuls as they were recorded.
  const at::Tensor gate = projection(x, w.gate_proj, w.gate_bias, w, LoraTarget::gate, cache);
  const at::Tensor up = projection(x, w.up_proj, w.up_bias, w, LoraTarget::up, cache);
  return projection(swiglu(gate, up), w.down_proj, w.down_bias, w, LoraTarget::down, cache);
}

at::Tensor decoder_layer(const LayerWeights& w, const at::Tensor& hidden, const TokenPositions& positions,
                         const ModelConfig& config, ActivationCache* cache, KvCache* kv_cache) {
  const double eps = config.rms_norm_eps;
  const at::Tensor attention =
      attention_block(w, rms_norm(hidden, w.input_norm, eps), positions, config, cache, kv_cache);
  const NormedSum after_attention = add_rms_norm(hidden, attention, w.post_attention_norm, eps);
  return after_attention.sum + mlp_block(w, after_attention.normed, cache);
}

}  // namespace st
