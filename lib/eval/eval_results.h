// results.json of `shardtune eval`: per task its metrics (value and standard error), the
// sample counts and the settings that produced them, so a number can be traced and rerun.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "eval/eval_task.h"

namespace st {

// {"kind", "metrics": {name: {"value", "stderr"}}, "samples", "documents_in_file", "settings"}.
// `run` holds the settings outside the task file (model, add_bos, max_length, template, limit).
nlohmann::ordered_json task_result(const EvalTask& task, const std::vector<nlohmann::json>& samples,
                                   const nlohmann::ordered_json& run);

// "acc 0.5000 ± 0.0500  acc_norm ..." for the console.
std::string metrics_line(const nlohmann::ordered_json& result);

}  // namespace st
