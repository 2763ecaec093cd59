#include "model/generation.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <c10/core/GradMode.h>

#include <algorithm>
#include <memory>

#include "model/decode_batch.h"
#include "model/decode_lockstep.h"
#include "util/errors.h"

namespace st {
namespace {

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

std::vector<GenerationResult> generate(const LlamaWeights& weights, const ModelConfig& config,
                                       const std::vector<std::vector<int64_t>>& prompts,
                                       const GenerationOptions& options, size_t first_index, GenerationStats* stats) {
  c10::NoGradGuard no_grad;
  if (options.max_new_tokens <= 0 || options.batch_size <= 0 || options.completions_per_prompt <= 0) {
    throw ModelError("generate: max_new_tokens, batch_size and completions_per_prompt must be > 0");
  }
  int64_t longest = 0;
  for (size_t i = 0; i < prompts.size(); ++i) {
    if (prompts[i].empty()) throw ModelError("generate: prompt " + std::to_string(first_index + i) + " has no token");
    longest = std::max(longest, static_cast<int64_t>(prompts[i].size()));
  }
  GenerationStats counted;
  DecodeLockstep lockstep(weights, config);  // expert parallelism: the group's forwards paired
  const auto group = static_cast<size_t>(options.completions_per_prompt);
  const size_t requests = prompts.size() * group;
  const size_t first_request = first_index * group;  // the global index of request 0
  std::vector<GenerationResult> results(requests);
  // One row at least: a rank with no request still decodes nothing in step with its expert group.
  const auto rows = static_cast<size_t>(std::clamp<int64_t>(static_cast<int64_t>(requests), 1, options.batch_size));
  DecodeBatch batch(weights, config, static_cast<int64_t>(rows), longest + options.max_new_tokens);
  // What each row of the batch is doing.
  struct Row {
    int64_t request = -1;   // -1: free
    at::Generator generator;
    bool fresh = false;     // logits for its next token, not drawn yet
    int64_t token = 0;      // its last token, fed at the next step
  };
  std::vector<Row> slots(rows);
  at::Tensor logits;  // [rows, V] fp32 on the host
  std::unique_ptr<PrefilledPrompts> prefilled;  // the prompts the next requests come from
  size_t next_request = 0;

  // The next requests take the free rows in order, their prompts prefilled as they come up
  // (as many at once as the free rows need).
  const auto place_free_rows = [&]() {
    std::vector<int64_t> free;
    for (size_t r = 0; r < slots.size(); ++r) {
      if (slots[r].request < 0) free.push_back(static_cast<int64_t>(r));
    }
    size_t taken = 0;
    while (taken < free.size() && next_request < requests) {
      const size_t prompt = next_request / group;
      if (!prefilled || prompt >= prefilled->first + prefilled->next.size()) {  // at a prompt's first request
        const size_t count = std::min(prompts.size() - prompt, (free.size() - taken + group - 1) / group);
        lockstep.before_forward();
        prefilled = std::make_unique<PrefilledPrompts>(batch.prefill(prompts, prompt, prompt + count));
        if (!logits.defined()) logits = at::zeros({static_cast<int64_t>(rows), prefilled->logits.size(1)}, at::kFloat);
        ++counted.prefills;
        counted.prompts_prefilled += static_cast<int64_t>(count);
      }
      const size_t end = (prefilled->first + prefilled->next.size()) * group;
      std::vector<int64_t> prompt_rows, into;
      for (; taken < free.size() && next_request < end; ++next_request) {
        const int64_t row = free[taken++];
        prompt_rows.push_back(static_cast<int64_t>(next_request / group - prefilled->first));
        into.push_back(row);
        Row& slot = slots[static_cast<size_t>(row)];
        slot.request = static_cast<int64_t>(next_request);
        slot.generator =
            at::make_generator<at::CPUGeneratorImpl>(request_seed(options.sampling.seed, first_request + next_request));
        slot.fresh = true;
      }
      batch.place(*prefilled, prompt_rows, into);
      logits.index_copy_(0, at::tensor(into, at::kLong),
                         prefilled->logits.index_select(0, at::tensor(prompt_rows, at::kLong)));
    }
    if (next_request == requests) prefilled.reset();  // the prompts' caches are no longer needed
  };

  // Every row with fresh logits draws its token; a row whose completion ends is freed. Returns
  // whether one was.
  const double temperature = options.sampling.temperature > 0.0 ? options.sampling.temperature : 1.0;
  const auto draw = [&]() {
    bool freed = false;
    for (size_t r = 0; r < slots.size(); ++r) {
      Row& slot = slots[r];
      if (!slot.fresh) continue;
      slot.fresh = false;
      const auto request = static_cast<size_t>(slot.request);
      GenerationResult& result = results[request];
      const at::Tensor row_logits = logits[static_cast<int64_t>(r)];
      slot.token = pick_token(row_logits, options.sampling, slot.generator);
      result.ids.push_back(slot.token);
      result.logps.push_back(at::log_softmax(row_logits / temperature, 0)[slot.token].item<float>());
      if (std::find(options.eos_ids.begin(), options.eos_ids.end(), slot.token) != options.eos_ids.end()) {
        result.finish = FinishReason::eos;
      } else if (options.stop && options.stop(first_request + request, result.ids)) {
        result.finish = FinishReason::stop;
      }
      if (result.finish == FinishReason::length && static_cast<int64_t>(result.ids.size()) < options.max_new_tokens) {
        continue;
      }
      slot.request = -1;
      batch.release(static_cast<int64_t>(r));
      freed = true;
    }
    return freed;
  };

  while (true) {
    do {
      place_free_rows();
    } while (draw() && next_request < requests);  // a freed row takes the next request at once
    std::vector<int64_t> live;
    for (size_t r = 0; r < slots.size(); ++r) {
      if (slots[r].request >= 0) live.push_back(static_cast<int64_t>(r));
    }
    if (live.empty()) break;
    if (next_request == requests && live.size() <= slots.size() / 2) {  // the tail: the batch halves
      batch.keep(live);
      std::vector<Row> kept;
      for (const int64_t r : live) kept.push_back(slots[static_cast<size_t>(r)]);
      slots = std::move(kept);
    }
    std::vector<int64_t> tokens;
    for (const Row& slot : slots) tokens.push_back(slot.token);
    lockstep.before_forward();
    logits = batch.step(tokens);
    ++counted.decode_steps;
    counted.row_steps += batch.rows();
    for (Row& slot : slots) slot.fresh = slot.request >= 0;
  }
  lockstep.finish();
  counted.idle_forwards = lockstep.idle_forwards();
  if (stats) *stats = counted;
  return results;
}

}  // namespace st
