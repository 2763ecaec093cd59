// A benchmark task as `shardtune eval` reads it: its kind (the lm-evaluation-harness output
// types that cover most benchmarks), the prompt settings (few-shot, delimiters, description,
// chat template) and the documents. docs/evaluation.md maps each field to the harness's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "util/enum_names.h"

namespace st {

enum class TaskKind { multiple_choice, loglikelihood_rolling, generate_until };
template <>
struct EnumNames<TaskKind> {
  static constexpr NamedValue<TaskKind> table[] = {{TaskKind::multiple_choice, "multiple_choice"},
                                                   {TaskKind::loglikelihood_rolling, "loglikelihood_rolling"},
                                                   {TaskKind::generate_until, "generate_until"}};
};

// generate_until's answer extraction, as the harness's regex filter: of the regex's matches
// (each its one group, its first non-empty group when it has several, or the whole match) the
// one at `group_select` (0 the first, -1 the last), stripped; `fallback` when none. No regex:
// the whole output.
struct AnswerFilter {
  std::string regex;
  int64_t group_select = 0;
  std::string fallback = "[invalid]";
};

// exact_match's normalisation, applied to the filtered output and the reference alike.
struct ExactMatchOptions {
  std::vector<std::string> regexes_to_ignore;  // each match removed, in order
  bool ignore_case = false;
  bool ignore_punctuation = false;             // ASCII punctuation (Python's string.punctuation)
};

struct TaskSpec {
  std::string name;
  TaskKind kind = TaskKind::multiple_choice;
  int64_t num_fewshot = 0;
  std::string fewshot_file;          // resolved path; may be the task file itself
  uint64_t fewshot_seed = 1234;      // the harness's default
  std::string description;           // text before the examples
  std::string target_delimiter = " ";
  std::string fewshot_delimiter = "\n\n";
  bool chat_template = false;        // render through the tokenizer's chat template
  std::vector<std::string> until;    // generate_until stop strings (default: the few-shot delimiter)
  int64_t max_gen_toks = 256;
  AnswerFilter filter;
  ExactMatchOptions exact_match;
};

// One document. multiple_choice: context, choices, gold; loglikelihood_rolling: text;
// generate_until: context, target (its few-shot answer) and answer (the exact-match reference,
// default target).
struct EvalDoc {
  std::string context, text, target, answer;
  std::vector<std::string> choices;
  int64_t gold = 0;
  int64_t line = 0;                  // in its file, for messages
  nlohmann::json raw;                // as read: the harness's "same document" test and --log-samples
};

struct EvalTask {
  std::string path;
  TaskSpec spec;
  std::vector<EvalDoc> docs;        // the first `limit` of the file's
  size_t documents_in_file = 0;
  std::vector<EvalDoc> fewshot_docs;
  bool fewshot_from_docs = false;    // drawn from the task's own documents (one extra is drawn)
};

}  // namespace st
