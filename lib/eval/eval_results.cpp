#include "eval/eval_results.h"

#include <cstdio>

#include "eval/eval_metrics.h"

namespace st {

nlohmann::ordered_json task_result(const EvalTask& task, const std::vector<nlohmann::json>& samples,
                                   const nlohmann::ordered_json& run) {
  const TaskSpec& spec = task.spec;
  nlohmann::ordered_json result;
  result["kind"] = enum_name(spec.kind);
  nlohmann::ordered_json& metrics = result["metrics"];
  for (const auto& [name, metric] : aggregate_metrics(spec.kind, samples)) {
    metrics[name] = {{"value", metric.value},
                     {"stderr", metric.stderr_value ? nlohmann::json(*metric.stderr_value) : nlohmann::json(nullptr)}};
  }
  result["samples"] = samples.size();
  result["documents_in_file"] = task.documents_in_file;
  nlohmann::ordered_json settings = {{"file", task.path},
                                     {"num_fewshot", spec.num_fewshot},
                                     {"fewshot_seed", spec.fewshot_seed},
                                     {"fewshot_file", spec.fewshot_file},
                                     {"description", spec.description},
                                     {"target_delimiter", spec.target_delimiter},
                                     {"fewshot_delimiter", spec.fewshot_delimiter},
                                     {"chat_template", spec.chat_template}};
  if (spec.kind == TaskKind::generate_until) {
    settings["until"] = spec.until;
    settings["max_gen_toks"] = spec.max_gen_toks;
    settings["filter"] = {{"regex", spec.filter.regex}, {"group_select", spec.filter.group_select}, {"fallback", spec.filter.fallback}};
    settings["exact_match"] = {{"regexes_to_ignore", spec.exact_match.regexes_to_ignore},
                               {"ignore_case", spec.exact_match.ignore_case},
                               {"ignore_punctuation", spec.exact_match.ignore_punctuation}};
  }
  for (const auto& [key, value] : run.items()) settings[key] = value;
  result["settings"] = settings;
  return result;
}

std::string metrics_line(const nlohmann::ordered_json& result) {
  std::string line;
  for (const auto& [name, metric] : result.at("metrics").items()) {
    char text[128];
    if (metric.at("stderr").is_null()) {
      std::snprintf(text, sizeof text, "%s %.4f", name.c_str(), metric.at("value").get<double>());
    } else {
      std::snprintf(text, sizeof text, "%s %.4f ± %.4f", name.c_str(), metric.at("value").get<double>(),
                    metric.at("stderr").get<double>());
    }
    line += (line.empty() ? "" : "  ") + std::string(text);
  }
  return line;
}

}  // namespace st
