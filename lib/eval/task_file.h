// Task files: JSONL, a header line {"task": {...}} then one document per line (fields by kind,
// docs/evaluation.md). Few-shot examples come from `fewshot_file` (documents of the same kind,
// a header there is skipped) or from the task's own documents.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "eval/eval_task.h"

namespace st {

// The first `limit` documents (0 = all). Throws DataError naming file:line, the field and the
// fix: unknown kind or header field, missing or mistyped fields, gold out of range, empty
// choices, a regex that does not compile, too few few-shot documents.
EvalTask read_task_file(const std::string& path, int64_t limit = 0);

// Every file of `paths`, read as above; two tasks of one name are refused (results are keyed by
// name), the message prefixed by `who` ("eval", "eval.tasks").
std::vector<EvalTask> read_task_files(const std::vector<std::string>& paths, int64_t limit, const std::string& who);

}  // namespace st
