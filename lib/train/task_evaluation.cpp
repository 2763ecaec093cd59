#include "train/task_evaluation.h"

#include "eval/eval_context.h"
#include "eval/eval_results.h"
#include "eval/task_file.h"
#include "fsdp/shard_source.h"
#include "train/sharded_eval_model.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {
namespace {

std::string tokenizer_directory(const TrainConfig& config) {
  if (!config.eval.tokenizer.empty()) return config.eval.tokenizer;
  if (holds_tokenizer(config.model.path)) return config.model.path;
  throw ConfigError("eval.tasks are text, which needs a tokenizer: set eval.tokenizer = DIR (a directory with "
                    "tokenizer.json)" + std::string(config.model.path.empty() ? "" : "; model.path has none"));
}

}  // namespace

TaskEvaluation::TaskEvaluation(const TrainConfig& config) {
  tasks_ = read_task_files(eval_task_paths(config.eval.tasks), config.eval.limit, "eval.tasks");
  if (tasks_.empty()) return;
  const ModelConfig model_config = model_config_of(config.model.path, config.model.preset);
  tokenizer_ = Tokenizer::from_file(tokenizer_directory(config));
  const std::optional<ChatTemplate> chat = ChatTemplate::implied_by(*tokenizer_);
  for (const EvalTask& task : tasks_) contexts_.push_back(document_contexts(task, chat ? &*chat : nullptr));

  settings_.encode = encode_settings_for(*tokenizer_, model_config, config.eval.add_bos, config.eval.max_length, "eval.tasks");
  settings_.eos_ids = end_of_sequence_ids(model_config, &*tokenizer_);
  // As many padded tokens per forward as a training micro-batch holds.
  max_batch_tokens_ = config.data.micro_batch_tokens > 0 ? config.data.micro_batch_tokens
                                                         : config.train.micro_batch * config.data.cutoff_len;
}

void TaskEvaluation::run(FsdpModel& model, Communicator& host, int64_t step, nlohmann::ordered_json& record) {
  ShardedEvalModel sharded(model, host, max_batch_tokens_);
  for (size_t t = 0; t < tasks_.size(); ++t) {
    const EvalTask& task = tasks_[t];
    const std::vector<nlohmann::json> samples = evaluate_task_on_ranks(task, contexts_[t], *tokenizer_, settings_, sharded, host);
    const nlohmann::ordered_json result = task_result(task, samples, {});
    for (const auto& [name, metric] : result.at("metrics").items()) {
      record["eval/" + task.spec.name + "/" + name] = metric.at("value");
      if (!metric.at("stderr").is_null()) record["eval/" + task.spec.name + "/" + name + "_stderr"] = metric.at("stderr");
    }
    log0("eval step ", step, ": ", task.spec.name, " (", samples.size(), " documents, ", task.spec.num_fewshot,
         "-shot): ", metrics_line(result));
  }
}

}  // namespace st
