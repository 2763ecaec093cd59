// Runs a task's documents through an EvalModel: builds each document's requests (eval_requests),
// scores or generates them in batches, and returns one sample record per document - what
// aggregate_metrics reads and --log-samples writes.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "eval/eval_model.h"
#include "eval/eval_requests.h"
#include "eval/eval_task.h"
#include "tokenizer/tokenizer.h"

namespace st {

struct EvalSettings {
  EncodeSettings encode;
  std::vector<int64_t> eos_ids;   // end a generation (the model's and the tokenizer's)
  int64_t generation_batch = 8;   // prompts decoded together
};

// Documents [first, last) of `task` with their contexts (document_contexts). Records hold
// "doc" (index), "line", the inputs, the scores or output, and the per-document metrics.
std::vector<nlohmann::json> evaluate_documents(const EvalTask& task, const std::vector<std::string>& contexts,
                                               const Tokenizer& tokenizer, const EvalSettings& settings,
                                               EvalModel& model, size_t first, size_t last);

// Collective over `world`: this rank's contiguous block of the task's documents evaluated, then
// every rank's sample records gathered, in document order, on every rank.
std::vector<nlohmann::json> evaluate_task_on_ranks(const EvalTask& task, const std::vector<std::string>& contexts,
                                                   const Tokenizer& tokenizer, const EvalSettings& settings,
                                                   EvalModel& model, Communicator& world);

}  // namespace st
