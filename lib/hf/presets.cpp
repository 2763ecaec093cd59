// Shapes copied from the public config.json of each model (but debug and bench-100m, our own
// test shapes); weights are never shipped.
#include "hf/presets.h"

#include <map>

#include "util/errors.h"

namespace st {
namespace {

ModelConfig llama(int64_t vocab, int64_t hidden, int64_t intermediate, int64_t layers,
                  int64_t heads, int64_t kv_heads, int64_t max_positions, double theta) {
  ModelConfig config;
  config.vocab_size = vocab;
  config.hidden_size = hidden;
  config.intermediate_size = intermediate;
  config.num_hidden_layers = layers;
  config.num_attention_heads = heads;
  config.num_key_value_heads = kv_heads;
  config.head_dim = hidden / heads;
  config.max_position_embeddings = max_positions;
  config.rope_theta = theta;
  config.rms_norm_eps = 1e-5;
  return config;
}

ModelConfig llama3(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                   double rope_factor, bool tied) {
  ModelConfig config = llama(128256, hidden, intermediate, layers, heads, 8, 131072, 500000.0);
  config.rope_scaling = {RopeScaling::Type::llama3, rope_factor, 1.0, 4.0, 8192};
  config.tie_word_embeddings = tied;
  config.bos_token_id = 128000;
  config.eos_token_ids = {128001, 128008, 128009};
  return config;
}

ModelConfig llama2(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads,
                   int64_t kv_heads, int64_t max_positions) {
  ModelConfig config = llama(32000, hidden, intermediate, layers, heads, kv_heads, max_positions,
                             10000.0);
  config.bos_token_id = 1;
  config.eos_token_ids = {2};
  return config;
}

// Mistral 7B: Llama 2's layout with GQA and a 14336 MLP; v0.1 windows attention at 4096 tokens,
// v0.3 (a 32768 vocabulary, theta 1e6) does not.
ModelConfig mistral_7b(int64_t vocab, double theta, int64_t window) {
  ModelConfig config = llama(vocab, 4096, 14336, 32, 32, 8, 32768, theta);
  config.model_type = ModelType::mistral;
  config.sliding_window = window;
  config.bos_token_id = 1;
  config.eos_token_ids = {2};
  return config;
}

// Qwen3 (dense): q and k normed per head, head_dim 128 whatever the width, theta 1e6, a
// 151936-token vocabulary; the instruct models end a turn with <|im_end|>.
ModelConfig qwen3(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads, bool tied) {
  ModelConfig config = llama(151936, hidden, intermediate, layers, heads, 8, 40960, 1000000.0);
  config.model_type = ModelType::qwen3;
  config.head_dim = 128;
  config.qk_norm = true;
  config.rms_norm_eps = 1e-6;
  config.tie_word_embeddings = tied;
  config.bos_token_id = 151643;
  config.eos_token_ids = {151645};
  return config;
}

// Qwen3-MoE: Qwen3's attention, every layer's MLP 128 experts of which a token uses 8, their
// weights renormalised (norm_topk_prob), router loss coefficient 0.001.
ModelConfig qwen3_moe(int64_t hidden, int64_t intermediate, int64_t expert_intermediate, int64_t layers, int64_t heads) {
  ModelConfig config = qwen3(hidden, intermediate, layers, heads, false);
  config.model_type = ModelType::qwen3_moe;
  config.num_key_value_heads = 4;
  config.experts = {128, 8, expert_intermediate, true, 1, {}, 0.001};
  return config;
}

// Mixtral 8x7B: Mistral 7B's layout without the window, 8 experts of 14336, 2 per token.
ModelConfig mixtral_8x7b() {
  ModelConfig config = mistral_7b(32000, 1000000.0, 0);
  config.model_type = ModelType::mixtral;
  config.experts = {8, 2, 14336, true, 1, {}, 0.02};
  return config;
}

// Gemma 3's text model (google/gemma-3-*'s config.json, text_config for 4B and up): sandwich
// norms of 1 + w, GeGLU, embeddings scaled by sqrt(hidden), q/k norms, five sliding-window layers
// (local rotary base 1e4) for each full one (base 1e6, linear x8 past 1B), tied 262k vocabulary.
ModelConfig gemma3(int64_t vocab, int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads, int64_t kv_heads,
                   int64_t head_dim, double query_scalar, int64_t window, int64_t max_positions, double rope_factor) {
  ModelConfig config = llama(vocab, hidden, intermediate, layers, heads, kv_heads, max_positions, 1000000.0);
  config.model_type = ModelType::gemma3_text;
  config.head_dim = head_dim;
  config.qk_norm = true;
  config.rms_norm_eps = 1e-6;
  config.tie_word_embeddings = true;
  config.query_pre_attn_scalar = query_scalar;
  config.sliding_window = window;
  config.local_rope_theta = 10000.0;
  if (rope_factor != 1.0) config.rope_scaling = {RopeScaling::Type::linear, rope_factor};
  for (int64_t layer = 0; layer < layers; ++layer) {
    config.layer_types.push_back((layer + 1) % 6 != 0 ? AttentionType::sliding : AttentionType::full);
  }
  config.bos_token_id = 2;
  config.eos_token_ids = {1, 106};
  config.pad_token_id = 0;
  return config;
}

// Qwen3.5 / Qwen3.6's text model (Qwen/Qwen3.5-27B's and Qwen/Qwen3.6-27B's text_config; the 9B's
// is Qwen3_5TextConfig's defaults, which its docstring names the 9B's): three
// Gated DeltaNet layers (16 key heads, 48 value heads of 128, conv kernel 4) to one gated
// full-attention layer (head_dim 256, rotary over a quarter of it, theta 1e7), (1 + w) norms,
// q/k norms, an untied 248k vocabulary.
ModelConfig qwen3_5(int64_t hidden, int64_t intermediate, int64_t layers, int64_t heads, int64_t kv_heads,
                    LinearAttentionShape linear, bool tied) {
  ModelConfig config = llama(248320, hidden, intermediate, layers, heads, kv_heads, 262144, 10000000.0);
  config.model_type = ModelType::qwen3_5_text;
  config.head_dim = 256;
  config.qk_norm = true;
  config.rms_norm_eps = 1e-6;
  config.tie_word_embeddings = tied;
  config.attention_output_gate = true;
  config.partial_rotary_factor = 0.25;
  config.linear_attention = linear;
  for (int64_t layer = 0; layer < layers; ++layer) {
    config.token_mixers.push_back((layer + 1) % 4 != 0 ? TokenMixer::gated_delta : TokenMixer::attention);
  }
  config.eos_token_ids = {248044};
  return config;
}
// Qwen3.5 / Qwen3.6-35B-A3B's text model (Qwen3_5MoeTextConfig's defaults, which its docstring names
// Qwen/Qwen3.5-35B-A3B's): the dense layout (2048 wide, 40 layers, 16 query heads over 2 key/value
// heads, Gated DeltaNet 16 key and 32 value heads) with every MLP 256 experts of 512, 8 per token,
// always renormalised, and a shared expert of 512 behind its sigmoid gate; router loss 0.001.
ModelConfig qwen3_5_moe(int64_t hidden, int64_t layers, int64_t heads, int64_t kv_heads, LinearAttentionShape linear,
                        ExpertShape experts) {
  ModelConfig config = qwen3_5(hidden, 0, layers, heads, kv_heads, linear, false);
  config.model_type = ModelType::qwen3_5_moe_text;
  config.experts = experts;
  return config;
}

// Small enough for a CPU test in milliseconds, yet with GQA, llama3 rope and an untied head.
ModelConfig debug() {
  ModelConfig config = llama(512, 64, 160, 2, 4, 2, 1024, 500000.0);
  config.rope_scaling = {RopeScaling::Type::llama3, 8.0, 1.0, 4.0, 256};
  config.bos_token_id = 1;
  config.eos_token_ids = {2};
  config.torch_dtype = TorchDtype::float32;
  return config;
}

// debug's size as Gemma 3: three layers (sliding, full, sliding), a window of 8 tokens.
ModelConfig debug_gemma3() {
  ModelConfig config = gemma3(512, 64, 160, 3, 4, 2, 16, 24.0, 8, 1024, 8.0);
  config.layer_types = {AttentionType::sliding, AttentionType::full, AttentionType::sliding};
  config.eos_token_ids = {1};
  config.torch_dtype = TorchDtype::float32;
  return config;
}

// debug's size as a Qwen3.5 hybrid: Gated DeltaNet, Gated DeltaNet, attention (rotary over a quarter
// of head_dim 16), two key heads serving four value heads.
ModelConfig debug_qwen3_5() {
  ModelConfig config = qwen3_5(64, 160, 3, 4, 2, {2, 4, 8, 6, 4}, false);
  config.vocab_size = 512;
  config.head_dim = 16;
  config.max_position_embeddings = 1024;
  config.token_mixers = {TokenMixer::gated_delta, TokenMixer::gated_delta, TokenMixer::attention};
  config.eos_token_ids = {2};
  config.torch_dtype = TorchDtype::float32;
  return config;
}
// debug-qwen3.5's layers with every MLP sparse: 8 experts of 32, 2 per token, a shared expert of 48.
ModelConfig debug_qwen3_5_moe() {
  ModelConfig config = debug_qwen3_5();
  config.model_type = ModelType::qwen3_5_moe_text;
  config.intermediate_size = 0;
  config.experts = {8, 2, 32, true, 1, {}, 0.001, 48};
  return config;
}

// debug's size with experts: 8 of 32 each, 2 per token, the second of three layers dense.
ModelConfig debug_moe() {
  ModelConfig config = debug();
  config.model_type = ModelType::qwen3_moe;
  config.num_hidden_layers = 3;
  config.qk_norm = true;
  config.experts = {8, 2, 32, true, 1, {1}, 0.001};
  return config;
}

// Not a published model: 16 experts of 512 over a 256-wide, 4-layer Qwen3-MoE (the experts are
// most of it), for CPU expert-parallel benchmarks (bench/expert_parallel.sh).
ModelConfig bench_moe_16() {
  ModelConfig config = llama(512, 256, 1024, 4, 4, 4, 2048, 1000000.0);
  config.model_type = ModelType::qwen3_moe;
  config.qk_norm = true;
  config.torch_dtype = TorchDtype::float32;
  config.experts = {16, 2, 512, true, 1, {}, 0.001};
  return config;
}

// Not a published model: Qwen3-30B-A3B's layout at about 2B parameters (16 layers of 1024, 64
// experts of 512, 8 per token), for the GPU's mixture-of-experts bench (scripts/gpu-check.sh
// bench-moe) against transformers' own model under TRL.
ModelConfig bench_moe_2b() {
  ModelConfig config = qwen3_moe(1024, 3072, 512, 16, 16);
  config.experts.num_experts = 64;
  return config;
}

const std::map<std::string, ModelConfig>& presets() {
  static const std::map<std::string, ModelConfig> table = {
      {"debug", debug()},
      {"llama-3.2-1b", llama3(2048, 8192, 16, 32, 32.0, true)},
      {"llama-3.2-3b", llama3(3072, 8192, 28, 24, 32.0, true)},
      {"llama-3.1-8b", llama3(4096, 14336, 32, 32, 8.0, false)},
      {"llama-3.1-70b", llama3(8192, 28672, 80, 64, 8.0, false)},
      {"llama-2-7b", llama2(4096, 11008, 32, 32, 32, 4096)},
      {"llama-2-70b", llama2(8192, 28672, 80, 64, 8, 4096)},
      {"tinyllama-1.1b", llama2(2048, 5632, 22, 32, 4, 2048)},
      {"mistral-7b-v0.1", mistral_7b(32000, 10000.0, 4096)},
      {"mistral-7b-v0.3", mistral_7b(32768, 1000000.0, 0)},
      {"qwen3-0.6b", qwen3(1024, 3072, 28, 16, true)},
      {"qwen3-8b", qwen3(4096, 12288, 36, 32, false)},
      {"qwen3-30b-a3b", qwen3_moe(2048, 6144, 768, 48, 32)},
      {"qwen3-235b-a22b", qwen3_moe(4096, 12288, 1536, 94, 64)},
      {"mixtral-8x7b", mixtral_8x7b()},
      {"gemma-3-1b", gemma3(262144, 1152, 6912, 26, 4, 1, 256, 256.0, 512, 32768, 1.0)},
      {"gemma-3-4b", gemma3(262208, 2560, 10240, 34, 8, 4, 256, 256.0, 1024, 131072, 8.0)},
      {"gemma-3-12b", gemma3(262208, 3840, 15360, 48, 16, 8, 256, 256.0, 1024, 131072, 8.0)},
      {"gemma-3-27b", gemma3(262208, 5376, 21504, 62, 32, 16, 128, 168.0, 1024, 131072, 8.0)},
      {"debug-gemma3", debug_gemma3()},
      {"debug-moe", debug_moe()},
      {"debug-qwen3.5", debug_qwen3_5()},
      {"qwen3.5-9b", qwen3_5(4096, 12288, 32, 16, 4, {16, 32, 128, 128, 4}, false)},
      {"qwen3.5-27b", qwen3_5(5120, 17408, 64, 24, 4, {16, 48, 128, 128, 4}, false)},
      {"qwen3.6-27b", qwen3_5(5120, 17408, 64, 24, 4, {16, 48, 128, 128, 4}, false)},
      {"debug-qwen3.5-moe", debug_qwen3_5_moe()},
      {"qwen3.5-35b-a3b", qwen3_5_moe(2048, 40, 16, 2, {16, 32, 128, 128, 4}, {256, 8, 512, true, 1, {}, 0.001, 512})},
      {"qwen3.6-35b-a3b", qwen3_5_moe(2048, 40, 16, 2, {16, 32, 128, 128, 4}, {256, 8, 512, true, 1, {}, 0.001, 512})},
      // Not a published model: a ~100M-parameter Llama (GQA, untied) for CPU benchmarks.
      {"bench-100m", llama2(768, 2048, 8, 12, 4, 2048)},
      {"bench-moe-16", bench_moe_16()},
      {"bench-moe-2b", bench_moe_2b()},
  };
  return table;
}

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out{"debug"};
    for (const auto& [name, config] : presets()) {
      if (name != "debug") out.push_back(name);
    }
    return out;
  }();
  return names;
}

ModelConfig preset_config(const std::string& name) {
  const auto found = presets().find(name);
  if (found == presets().end()) {
    std::string known;
    for (const auto& each : preset_names()) known += (known.empty() ? "" : ", ") + each;
    throw ModelError("unknown model preset '" + name + "'; known presets: " + known);
  }
  return found->second;
}

}  // namespace st
