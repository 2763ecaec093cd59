// Autoregressive decoding with a KV cache. Up to batch_size rows decode together, one token per
// step for every row; a row whose completion ends takes the next request at once (its prompt
// prefilled once for all its completions, model/decode_batch.h), so a long completion does not
// idle the rows that finished, and once no request waits the batch halves as its rows end.
// Greedy or sampled (temperature, top-k, top-p, min-p: logits_warpers.h); each request draws
// from its own generator seeded by (seed, its index), so what a prompt yields does not depend on
// its batch, its row or the rank that decodes it.
// The blocks are llama_blocks' (with their KvCache); the tokenizer stays outside (stop strings
// come in as a predicate).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "hf/model_config.h"
#include "model/llama_blocks.h"
#include "model/logits_warpers.h"
#include "util/enum_names.h"

namespace st {

enum class FinishReason { eos, stop, length };
template <>
struct EnumNames<FinishReason> {
  static constexpr NamedValue<FinishReason> table[] = {
      {FinishReason::eos, "eos"}, {FinishReason::stop, "stop"}, {FinishReason::length, "length"}};
};

struct GenerationOptions {
  SamplingOptions sampling;
  int64_t max_new_tokens = 256;
  int64_t batch_size = 8;        // rows (completions) decoded together
  // Completions sampled from each prompt (GRPO's num_generations): the prompt is prefilled once
  // and its cache copied to the group's rows. Completion j of prompt i is request i * G + j: its
  // seed and stop index, and what the same prompt listed G times would yield.
  int64_t completions_per_prompt = 1;
  std::vector<int64_t> eos_ids;  // a row ends after emitting one (kept in its ids)
  // Asked after each new token of request `index` with its tokens so far: true ends the row
  // (FinishReason::stop). Stop strings, which need the tokenizer.
  std::function<bool(size_t index, const std::vector<int64_t>& generated)> stop;
};

struct GenerationResult {
  std::vector<int64_t> ids;  // the new tokens, an EOS included
  FinishReason finish = FinishReason::length;
  // Each new token's log-prob under the logits over the temperature (1 when greedy), before the
  // top-k/top-p/min-p cuts: what a training forward at that temperature gives the same token.
  std::vector<float> logps;
};

// What one generate call computed, to see how busy its rows were.
struct GenerationStats {
  int64_t decode_steps = 0;       // forwards of one token per row
  int64_t row_steps = 0;          // the rows those forwards carried, decoding or idle
  int64_t prefills = 0;           // forwards over prompts
  int64_t prompts_prefilled = 0;  // the prompts in them: each prompt once
  int64_t idle_forwards = 0;      // one token each, run while another rank of the expert group decodes
};

// Runs on the weights' device and dtype. `prompts` are non-empty id lists; `first_index` is the
// global index of prompts[0] (the seeds and the stop predicate use global request indices).
// Weights with an expert exchange (expert parallelism, llama_weights) make it collective over the
// expert group: every rank of it calls generate, with its own prompts or none (decode_lockstep.h).
// Returns prompts.size() * completions_per_prompt results, each prompt's group in a run.
std::vector<GenerationResult> generate(const LlamaWeights& weights, const ModelConfig& config,
                                       const std::vector<std::vector<int64_t>>& prompts,
                                       const GenerationOptions& options, size_t first_index = 0,
                                       GenerationStats* stats = nullptr);

}  // namespace st
