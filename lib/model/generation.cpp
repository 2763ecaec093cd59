#include "model/generation.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <algorithm>

#include "model/llama_units.h"
#include "model/rope.h"
#include "util/errors.h"

namespace st {
namespace {

// The rows of one batch: their prompts left-padded to a common length, the cache, and the
// positions of every key so far.
struct DecodeBatch {
  KvCache cache;
  at::Tensor key_positions;  // [B, Tk] int64
  at::Tensor key_valid;      // [B, Tk] bool
  at::Tensor next_position;  // [B] int64: where each row's next token sits
};

// Each kind of layer's rotary tables and mask for queries at `query_positions` over the keys so far.
TokenBatch decode_positions(const ModelAttention& kinds, const at::Tensor& query_positions, const DecodeBatch& batch,
                            at::ScalarType dtype) {
  const auto kind_positions = [&](const LayerAttention& kind) {
    TokenPositions where;
    where.rope = make_rope_tables_at(kind.inverse_frequencies, query_positions, dtype);
    where.attention_mask = decode_attention_mask(query_positions, batch.key_positions, batch.key_valid, kind.window);
    return where;
  };
  TokenBatch positions;
  positions.positions = kind_positions(kinds.full);
  if (kinds.sliding.inverse_frequencies.defined()) positions.sliding_positions = kind_positions(kinds.sliding);
  return positions;
}

at::Tensor next_token_logits(const LlamaWeights& w, const ModelConfig& config, const at::Tensor& ids,
                             const TokenBatch& positions, KvCache& cache) {
  at::Tensor hidden = embed_tokens(config, w.embed, ids);
  for (const LayerWeights& layer : w.layers) {
    hidden = decoder_layer(layer, hidden, positions.positions_of(config, layer.layer), config, nullptr, &cache);
  }
  cache.length += ids.size(1);
  const at::Tensor last = hidden.select(1, hidden.size(1) - 1);
  return head_logits(config, w, last).to(at::kFloat);
}

// Prefills the cache with the left-padded prompts [first, last); returns the logits [B, V].
at::Tensor prefill(const LlamaWeights& w, const ModelConfig& config, const ModelAttention& kinds,
                   const std::vector<std::vector<int64_t>>& prompts, size_t first, size_t last, int64_t max_new,
                   DecodeBatch& batch) {
  const auto rows = static_cast<int64_t>(last - first);
  int64_t longest = 0;
  for (size_t i = first; i < last; ++i) longest = std::max(longest, static_cast<int64_t>(prompts[i].size()));
  at::Tensor ids = at::zeros({rows, longest}, at::kLong);
  at::Tensor valid = at::zeros({rows, longest}, at::kBool);
  at::Tensor positions = at::zeros({rows, longest}, at::kLong);
  for (int64_t r = 0; r < rows; ++r) {
    const auto& prompt = prompts[first + static_cast<size_t>(r)];
    const auto length = static_cast<int64_t>(prompt.size());
    const int64_t pad = longest - length;
    ids[r].narrow(0, pad, length).copy_(at::tensor(prompt, at::kLong));
    valid[r].narrow(0, pad, length).fill_(true);
    positions[r].narrow(0, pad, length).copy_(at::arange(length, at::kLong));
  }
  const at::Device device = w.embed.device();
  batch.key_positions = positions.to(device);
  batch.key_valid = valid.to(device);
  batch.next_position = valid.sum(1).to(device);
  const int64_t capacity = longest + max_new;
  const auto cache_options = w.embed.options();
  for (size_t layer = 0; layer < w.layers.size(); ++layer) {
    const bool recurrent = config.gated_delta_layer(static_cast<int64_t>(layer));  // its carry instead
    batch.cache.keys.push_back(recurrent ? at::Tensor()
                                         : at::zeros({rows, config.num_key_value_heads, capacity, config.head_dim},
                                                     cache_options));
    batch.cache.values.push_back(recurrent ? at::Tensor() : at::zeros_like(batch.cache.keys.back()));
  }
  batch.cache.carries.resize(w.layers.size());
  batch.cache.new_tokens_valid = batch.key_valid;
  const TokenBatch where = decode_positions(kinds, batch.key_positions, batch, w.embed.scalar_type());
  at::Tensor logits = next_token_logits(w, config, ids.to(device), where, batch.cache);
  batch.cache.new_tokens_valid = at::Tensor();  // decoded tokens are real
  return logits;
}

// Each row becomes `copies` rows in a run (a prompt's cache forked to its group), `logits` too.
void fork_rows(DecodeBatch& batch, at::Tensor& logits, int64_t copies) {
  if (copies == 1) return;
  const at::Tensor rows = at::arange(logits.size(0), at::TensorOptions(at::kLong).device(logits.device()))
                              .repeat_interleave(copies);
  const auto fork = [&](at::Tensor& tensor) {
    if (tensor.defined()) tensor = tensor.index_select(0, rows);
  };
  for (at::Tensor& keys : batch.cache.keys) fork(keys);
  for (at::Tensor& values : batch.cache.values) fork(values);
  for (GatedDeltaCarry& carry : batch.cache.carries) {
    fork(carry.conv_inputs);
    fork(carry.state);
  }
  fork(batch.key_positions);
  fork(batch.key_valid);
  fork(batch.next_position);
  fork(logits);
}

// One token per row at its next position; returns the logits [B, V].
at::Tensor decode_step(const LlamaWeights& w, const ModelConfig& config, const ModelAttention& kinds,
                       const at::Tensor& tokens, DecodeBatch& batch) {
  const at::Tensor position = batch.next_position.unsqueeze(1);  // [B, 1]
  batch.key_positions = at::cat({batch.key_positions, position}, 1);
  batch.key_valid = at::cat({batch.key_valid, at::ones_like(position, position.options().dtype(at::kBool))}, 1);
  const TokenBatch where = decode_positions(kinds, position, batch, w.embed.scalar_type());
  const at::Tensor logits = next_token_logits(w, config, tokens.unsqueeze(1), where, batch.cache);
  batch.next_position = batch.next_position + 1;
  return logits;
}

// A token from `logits` [V] (fp32, host): argmax, or a draw from the warped softmax.
int64_t pick_token(const at::Tensor& logits, const SamplingOptions& sampling, at::Generator& generator) {
  if (sampling.temperature <= 0.0) return logits.argmax().item<int64_t>();
  return at::multinomial(at::softmax(warped_logits(logits, sampling), 0), 1, false, generator).item<int64_t>();
}

uint64_t request_seed(uint64_t seed, size_t index) {
  uint64_t x = seed + 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(index) + 1);  // splitmix64
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

at::Tensor decode_attention_mask(const at::Tensor& query_positions, const at::Tensor& key_positions,
                                 const at::Tensor& key_valid, int64_t sliding_window) {
  const at::Tensor distance = query_positions.unsqueeze(2) - key_positions.unsqueeze(1);  // [B, Tq, Tk]
  at::Tensor mask = distance.ge(0).logical_and(key_valid.unsqueeze(1));
  if (sliding_window > 0) mask = mask.logical_and(distance.lt(sliding_window));
  if (query_positions.size(1) == key_positions.size(1)) {  // a prefill: padding sees itself
    const at::Tensor self = at::eye(key_positions.size(1), mask.options()).unsqueeze(0);
    mask = mask.logical_or(self.logical_and(key_valid.logical_not().unsqueeze(2)));
  }
  return mask.unsqueeze(1);
}

std::vector<GenerationResult> generate(const LlamaWeights& weights, const ModelConfig& config,
                                       const std::vector<std::vector<int64_t>>& prompts,
                                       const GenerationOptions& options, size_t first_index) {
  c10::NoGradGuard no_grad;
  if (options.max_new_tokens <= 0 || options.batch_size <= 0 || options.completions_per_prompt <= 0) {
    throw ModelError("generate: max_new_tokens, batch_size and completions_per_prompt must be > 0");
  }
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw ModelError("generate: prompt " + std::to_string(first_index + i) + " has no token");
  }
  const ModelAttention kinds = model_attention(config, weights.embed.device());
  const auto group = static_cast<size_t>(options.completions_per_prompt);
  const size_t prompts_per_batch = std::max<size_t>(1, static_cast<size_t>(options.batch_size) / group);
  std::vector<GenerationResult> results(prompts.size() * group);
  for (size_t first = 0; first < prompts.size(); first += prompts_per_batch) {
    const size_t last = std::min(prompts.size(), first + prompts_per_batch);
    const size_t first_row = first * group;  // rows [first_row, last * group) of the results
    std::vector<at::Generator> generators;
    for (size_t request = first_row; request < last * group; ++request) {
      generators.push_back(
          at::make_generator<at::CPUGeneratorImpl>(request_seed(options.sampling.seed, first_index * group + request)));
    }
    DecodeBatch batch;
    at::Tensor logits = prefill(weights, config, kinds, prompts, first, last, options.max_new_tokens, batch);
    fork_rows(batch, logits, options.completions_per_prompt);
    std::vector<bool> done(generators.size(), false);
    const double temperature = options.sampling.temperature > 0.0 ? options.sampling.temperature : 1.0;
    for (int64_t step = 0; step < options.max_new_tokens; ++step) {
      const at::Tensor host = logits.cpu();
      const at::Tensor host_logps = at::log_softmax(host / temperature, 1);
      std::vector<int64_t> tokens(generators.size(), 0);
      for (size_t r = 0; r < tokens.size(); ++r) {
        GenerationResult& result = results[first_row + r];
        if (done[r]) {
          tokens[r] = result.ids.back();  // a finished row idles on its last token
          continue;
        }
        tokens[r] = pick_token(host[static_cast<int64_t>(r)], options.sampling, generators[r]);
        result.ids.push_back(tokens[r]);
        result.logps.push_back(host_logps[static_cast<int64_t>(r)][tokens[r]].item<float>());
        const bool eos = std::find(options.eos_ids.begin(), options.eos_ids.end(), tokens[r]) != options.eos_ids.end();
        if (eos) {
          result.finish = FinishReason::eos;
        } else if (options.stop && options.stop(first_index * group + first_row + r, result.ids)) {
          result.finish = FinishReason::stop;
        }
        done[r] = result.finish != FinishReason::length;
      }
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; }) || step + 1 == options.max_new_tokens) break;
      logits = decode_step(weights, config, kinds, at::tensor(tokens, at::kLong).to(weights.embed.device()),
                           batch);
    }
  }
  return results;
}

}  // namespace st
