#include "eval/eval_runner.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "distributed/string_gather.h"
#include "eval/eval_metrics.h"
#include "eval/stop_strings.h"

namespace st {
namespace {

using nlohmann::json;

std::string where(const EvalTask& task, const EvalDoc& doc) { return task.path + ":" + std::to_string(doc.line); }

std::vector<json> multiple_choice(const EvalTask& task, const std::vector<std::string>& contexts, const Tokenizer& tokenizer,
                                  const EvalSettings& settings, EvalModel& model, size_t first, size_t last) {
  // A document's choices share one request while their prompts agree (they differ only when a
  // long context is cut to fit a longer choice).
  std::vector<SharedPromptRequest> requests;
  std::vector<std::vector<std::pair<size_t, size_t>>> slots(last - first);  // per choice: request, completion
  for (size_t d = first; d < last; ++d) {
    const EvalDoc& doc = task.docs[d];
    std::map<std::vector<int64_t>, size_t> by_prompt;
    for (const std::string& choice : doc.choices) {
      ScoreRequest request = loglikelihood_request(tokenizer, contexts[d], task.spec.target_delimiter + choice,
                                                   settings.encode, where(task, doc));
      auto [it, added] = by_prompt.emplace(request.prompt_ids, requests.size());
      if (added) requests.push_back({std::move(request.prompt_ids), {}});
      SharedPromptRequest& shared = requests[it->second];
      slots[d - first].emplace_back(it->second, shared.completions.size());
      shared.completions.push_back(std::move(request.completion_ids));
    }
  }
  const std::vector<std::vector<ScoreResult>> scores = model.score(requests);
  std::vector<json> samples;
  for (size_t d = first; d < last; ++d) {
    const EvalDoc& doc = task.docs[d];
    std::vector<double> logps, per_char, per_byte;
    std::vector<int64_t> chars, bytes, tokens;
    for (size_t c = 0; c < doc.choices.size(); ++c) {
      const auto [request, completion] = slots[d - first][c];
      const ScoreResult& score = scores[request][completion];
      logps.push_back(score.logp);
      chars.push_back(count_characters(doc.choices[c]));
      bytes.push_back(static_cast<int64_t>(doc.choices[c].size()));
      tokens.push_back(static_cast<int64_t>(requests[request].completions[completion].size()));
      per_char.push_back(score.logp / static_cast<double>(chars.back()));
      per_byte.push_back(score.logp / static_cast<double>(bytes.back()));
    }
    const auto gold = static_cast<size_t>(doc.gold);
    const size_t pred = first_argmax(logps);
    samples.push_back({{"doc", d}, {"line", doc.line}, {"context", contexts[d]}, {"choices", doc.choices},
                       {"gold", doc.gold}, {"loglikelihoods", logps}, {"choice_tokens", tokens},
                       {"choice_chars", chars}, {"choice_bytes", bytes}, {"pred", pred},
                       {"acc", pred == gold ? 1.0 : 0.0}, {"acc_norm", first_argmax(per_char) == gold ? 1.0 : 0.0},
                       {"acc_bytes", first_argmax(per_byte) == gold ? 1.0 : 0.0}});
  }
  return samples;
}

std::vector<json> rolling(const EvalTask& task, const Tokenizer& tokenizer, const EvalSettings& settings, EvalModel& model,
                          size_t first, size_t last) {
  std::vector<SharedPromptRequest> requests;
  std::vector<std::pair<size_t, size_t>> windows_of(last - first);  // first request, count
  std::vector<int64_t> token_counts;
  for (size_t d = first; d < last; ++d) {
    EncodeSettings plain = settings.encode;
    plain.add_bos = false;  // the prefix token conditions the first window instead
    const std::vector<int64_t> tokens = encode_text(tokenizer, task.docs[d].text, plain);
    token_counts.push_back(static_cast<int64_t>(tokens.size()));
    windows_of[d - first] = {requests.size(), 0};
    for (ScoreRequest& window : rolling_windows(tokens, settings.encode.prefix_id, settings.encode.max_length)) {
      requests.push_back({std::move(window.prompt_ids), {std::move(window.completion_ids)}});
      ++windows_of[d - first].second;
    }
  }
  const std::vector<std::vector<ScoreResult>> scores = model.score(requests);
  std::vector<json> samples;
  for (size_t d = first; d < last; ++d) {
    const EvalDoc& doc = task.docs[d];
    double logp = 0;
    const auto [start, count] = windows_of[d - first];
    for (size_t w = start; w < start + count; ++w) logp += scores[w].front().logp;
    samples.push_back({{"doc", d}, {"line", doc.line}, {"loglikelihood", logp}, {"windows", count},
                       {"tokens", token_counts[d - first]}, {"words", count_words(doc.text)},
                       {"bytes", static_cast<int64_t>(doc.text.size())}});
  }
  return samples;
}

std::vector<json> generation(const EvalTask& task, const std::vector<std::string>& contexts, const Tokenizer& tokenizer,
                             const EvalSettings& settings, EvalModel& model, size_t first, size_t last) {
  const TaskSpec& spec = task.spec;
  std::vector<std::vector<int64_t>> prompts;
  for (size_t d = first; d < last; ++d) {
    prompts.push_back(generation_prompt(tokenizer, contexts[d], settings.encode, spec.max_gen_toks));
  }
  GenerationOptions options;
  options.max_new_tokens = spec.max_gen_toks;
  options.batch_size = settings.generation_batch;
  options.eos_ids = settings.eos_ids;
  options.stop = stop_string_predicate(tokenizer, spec.until);
  const std::vector<GenerationResult> results = model.generate(prompts, options, first);
  std::vector<json> samples;
  for (size_t d = first; d < last; ++d) {
    const EvalDoc& doc = task.docs[d];
    std::string output = tokenizer.decode(results[d - first].ids);
    const size_t stop = first_stop(output, spec.until);
    if (stop != std::string::npos) output.resize(stop);
    const std::string filtered = filter_answer(output, spec.filter);
    samples.push_back({{"doc", d}, {"line", doc.line}, {"context", contexts[d]}, {"output", output},
                       {"output_tokens", results[d - first].ids.size()}, {"filtered", filtered},
                       {"reference", doc.answer},
                       {"exact_match", exact_match(filtered, doc.answer, spec.exact_match) ? 1.0 : 0.0}});
  }
  return samples;
}

}  // namespace

std::vector<json> evaluate_documents(const EvalTask& task, const std::vector<std::string>& contexts, const Tokenizer& tokenizer,
                                     const EvalSettings& settings, EvalModel& model, size_t first, size_t last) {
  switch (task.spec.kind) {
    case TaskKind::multiple_choice:
      return multiple_choice(task, contexts, tokenizer, settings, model, first, last);
    case TaskKind::loglikelihood_rolling:
      return rolling(task, tokenizer, settings, model, first, last);
    case TaskKind::generate_until:
      return generation(task, contexts, tokenizer, settings, model, first, last);
  }
  return {};
}

std::vector<json> evaluate_task_on_ranks(const EvalTask& task, const std::vector<std::string>& contexts, const Tokenizer& tokenizer,
                                         const EvalSettings& settings, EvalModel& model, Communicator& world) {
  const size_t count = task.docs.size();
  const size_t first = count * static_cast<size_t>(world.rank()) / static_cast<size_t>(world.size());
  const size_t last = count * static_cast<size_t>(world.rank() + 1) / static_cast<size_t>(world.size());
  std::string block;
  for (const json& sample : evaluate_documents(task, contexts, tokenizer, settings, model, first, last)) {
    block += sample.dump() + "\n";
  }
  std::vector<json> samples;
  for (const std::string& rank_block : all_gather_strings(world, block)) {
    std::stringstream lines(rank_block);
    for (std::string line; std::getline(lines, line);) samples.push_back(json::parse(line));
  }
  return samples;
}

}  // namespace st
