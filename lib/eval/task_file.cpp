#include "eval/task_file.h"

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "util/errors.h"

namespace st {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct JsonLine {
  json value;
  int64_t number = 0;
};

std::vector<JsonLine> read_json_lines(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw DataError(path + ": cannot open the task file; check the path given to --tasks / eval.tasks");
  std::vector<JsonLine> lines;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) throw DataError(path + ":" + std::to_string(number) + ": not valid JSON");
    if (!value.is_object()) throw DataError(path + ":" + std::to_string(number) + ": expected a JSON object per line");
    lines.push_back({std::move(value), number});
  }
  return lines;
}

template <typename T>
T typed(const json& object, const std::string& field, const std::string& where, const char* type, T fallback,
        bool required = false) {
  if (!object.contains(field)) {
    if (required) throw DataError(where + ": field '" + field + "' is missing; add it (" + type + ")");
    return fallback;
  }
  const json& value = object.at(field);
  const bool ok = std::is_same_v<T, std::string>   ? value.is_string()
                  : std::is_same_v<T, bool>        ? value.is_boolean()
                  : std::is_same_v<T, int64_t>     ? value.is_number_integer()
                  : std::is_same_v<T, uint64_t>    ? value.is_number_unsigned()
                                                   : false;
  if (!ok) throw DataError(where + ": field '" + field + "' is " + value.dump() + ", not " + type);
  return value.get<T>();
}

std::vector<std::string> string_list(const json& object, const std::string& field, const std::string& where,
                                     bool required) {
  if (!object.contains(field)) {
    if (required) throw DataError(where + ": field '" + field + "' is missing; add it (a list of strings)");
    return {};
  }
  const json& value = object.at(field);
  if (!value.is_array()) throw DataError(where + ": field '" + field + "' must be a list of strings");
  std::vector<std::string> out;
  for (const json& item : value) {
    if (!item.is_string()) throw DataError(where + ": field '" + field + "' holds " + item.dump() + ", not a string");
    out.push_back(item.get<std::string>());
  }
  return out;
}

void check_regex(const std::string& pattern, const std::string& where, const std::string& field) {
  try {
    std::regex compiled(pattern, std::regex::ECMAScript);
  } catch (const std::regex_error& error) {
    throw DataError(where + ": field '" + field + "' = " + json(pattern).dump() + " is not a valid regex (" +
                    error.what() + "); write it in ECMAScript syntax (e.g. [\\s\\S] for Python's (?s).)");
  }
}

const std::set<std::string> kHeaderFields = {
    "name", "kind", "num_fewshot", "fewshot_file", "fewshot_seed", "description", "target_delimiter",
    "fewshot_delimiter", "chat_template", "until", "max_gen_toks", "filter", "exact_match"};

TaskSpec read_header(const json& header, const std::string& path, const std::string& where) {
  if (!header.is_object()) throw DataError(where + ": 'task' must be an object of task settings");
  for (const auto& [key, value] : header.items()) {
    if (!kHeaderFields.count(key)) {
      std::string known;
      for (const std::string& field : kHeaderFields) known += (known.empty() ? "" : ", ") + field;
      throw DataError(where + ": task field '" + key + "' is unknown; the fields are " + known);
    }
  }
  TaskSpec spec;
  spec.name = typed<std::string>(header, "name", where, "a string", fs::path(path).stem().string());
  const std::string kind = typed<std::string>(header, "kind", where, "a string", "", /*required=*/true);
  if (!find_enum(kind, spec.kind)) {
    throw DataError(where + ": task field 'kind' = '" + kind + "' is not one of " + enum_choices<TaskKind>());
  }
  spec.num_fewshot = typed<int64_t>(header, "num_fewshot", where, "an integer", 0);
  if (spec.num_fewshot < 0) throw DataError(where + ": task field 'num_fewshot' must be >= 0");
  const std::string fewshot_file = typed<std::string>(header, "fewshot_file", where, "a string", "");
  if (!fewshot_file.empty()) {
    const fs::path file(fewshot_file);
    spec.fewshot_file = file.is_absolute() ? file.string() : (fs::path(path).parent_path() / file).string();
  }
  spec.fewshot_seed = typed<uint64_t>(header, "fewshot_seed", where, "a non-negative integer", 1234);
  spec.description = typed<std::string>(header, "description", where, "a string", "");
  spec.target_delimiter = typed<std::string>(header, "target_delimiter", where, "a string", " ");
  spec.fewshot_delimiter = typed<std::string>(header, "fewshot_delimiter", where, "a string", "\n\n");
  spec.chat_template = typed<bool>(header, "chat_template", where, "true or false", false);
  spec.until = header.contains("until") ? string_list(header, "until", where, false)
                                        : std::vector<std::string>{spec.fewshot_delimiter};
  for (const std::string& stop : spec.until) {
    if (stop.empty()) throw DataError(where + ": task field 'until' holds an empty stop string; remove it");
  }
  spec.max_gen_toks = typed<int64_t>(header, "max_gen_toks", where, "an integer", 256);
  if (spec.max_gen_toks <= 0) throw DataError(where + ": task field 'max_gen_toks' must be > 0");
  if (header.contains("filter")) {
    const json& filter = header.at("filter");
    const std::string at = where + " filter";
    if (!filter.is_object()) throw DataError(at + ": must be an object {\"regex\", \"group_select\", \"fallback\"}");
    spec.filter.regex = typed<std::string>(filter, "regex", at, "a string", "", /*required=*/true);
    check_regex(spec.filter.regex, at, "regex");
    spec.filter.group_select = typed<int64_t>(filter, "group_select", at, "an integer", 0);
    spec.filter.fallback = typed<std::string>(filter, "fallback", at, "a string", "[invalid]");
  }
  if (header.contains("exact_match")) {
    const json& match = header.at("exact_match");
    const std::string at = where + " exact_match";
    if (!match.is_object()) throw DataError(at + ": must be an object {\"regexes_to_ignore\", \"ignore_case\", \"ignore_punctuation\"}");
    spec.exact_match.regexes_to_ignore = string_list(match, "regexes_to_ignore", at, false);
    for (const std::string& pattern : spec.exact_match.regexes_to_ignore) check_regex(pattern, at, "regexes_to_ignore");
    spec.exact_match.ignore_case = typed<bool>(match, "ignore_case", at, "true or false", false);
    spec.exact_match.ignore_punctuation = typed<bool>(match, "ignore_punctuation", at, "true or false", false);
  }
  if (spec.kind == TaskKind::loglikelihood_rolling && spec.num_fewshot > 0) {
    throw DataError(where + ": a loglikelihood_rolling task scores whole texts and takes no few-shot examples; "
                            "set num_fewshot to 0");
  }
  if (spec.num_fewshot > 0 && spec.fewshot_file.empty()) {
    throw DataError(where + ": num_fewshot = " + std::to_string(spec.num_fewshot) +
                    " needs 'fewshot_file' (a JSONL of documents; the task file itself draws from its own documents)");
  }
  return spec;
}

EvalDoc read_doc(const JsonLine& line, TaskKind kind, const std::string& path) {
  const std::string where = path + ":" + std::to_string(line.number);
  const json& object = line.value;
  EvalDoc doc;
  doc.line = line.number;
  doc.raw = object;
  switch (kind) {
    case TaskKind::multiple_choice: {
      doc.context = typed<std::string>(object, "context", where, "a string", "", /*required=*/true);
      doc.choices = string_list(object, "choices", where, /*required=*/true);
      if (doc.choices.empty()) throw DataError(where + ": field 'choices' is empty; give at least one choice");
      for (const std::string& choice : doc.choices) {
        if (choice.empty()) throw DataError(where + ": field 'choices' holds an empty choice (acc_norm divides by its length); remove it");
      }
      if (!object.contains("gold")) throw DataError(where + ": field 'gold' is missing; add the index of the correct choice");
      doc.gold = typed<int64_t>(object, "gold", where, "an integer (the index of the correct choice)", 0);
      if (doc.gold < 0 || doc.gold >= static_cast<int64_t>(doc.choices.size())) {
        throw DataError(where + ": field 'gold' = " + std::to_string(doc.gold) + " is outside the " +
                        std::to_string(doc.choices.size()) + " choices; it is a 0-based index into 'choices'");
      }
      doc.target = doc.choices[static_cast<size_t>(doc.gold)];
      break;
    }
    case TaskKind::loglikelihood_rolling:
      doc.text = typed<std::string>(object, "text", where, "a string", "", /*required=*/true);
      if (doc.text.empty()) throw DataError(where + ": field 'text' is empty; a perplexity document needs text");
      break;
    case TaskKind::generate_until:
      doc.context = typed<std::string>(object, "context", where, "a string", "", /*required=*/true);
      doc.target = typed<std::string>(object, "target", where, "a string", "", /*required=*/true);
      doc.answer = typed<std::string>(object, "answer", where, "a string", doc.target);
      break;
  }
  return doc;
}

}  // namespace

EvalTask read_task_file(const std::string& path, int64_t limit) {
  const std::vector<JsonLine> lines = read_json_lines(path);
  if (lines.empty() || !lines.front().value.contains("task")) {
    throw DataError(path + ":1: the first line must be the task header {\"task\": {\"kind\": \"" +
                    enum_choices<TaskKind>() + "\", ...}}");
  }
  EvalTask task;
  task.path = path;
  task.spec = read_header(lines.front().value.at("task"), path, path + ":" + std::to_string(lines.front().number));
  std::vector<EvalDoc> all;
  for (size_t i = 1; i < lines.size(); ++i) all.push_back(read_doc(lines[i], task.spec.kind, path));
  if (all.empty()) throw DataError(path + ": the task has no documents after its header");
  task.documents_in_file = all.size();
  task.docs.assign(all.begin(), limit > 0 && limit < static_cast<int64_t>(all.size()) ? all.begin() + limit : all.end());
  if (task.spec.num_fewshot == 0) return task;

  task.fewshot_from_docs = fs::weakly_canonical(task.spec.fewshot_file) == fs::weakly_canonical(path);
  if (task.fewshot_from_docs) {
    task.fewshot_docs = all;
  } else {
    const std::vector<JsonLine> examples = read_json_lines(task.spec.fewshot_file);
    for (size_t i = 0; i < examples.size(); ++i) {
      if (i == 0 && examples[i].value.contains("task")) continue;
      task.fewshot_docs.push_back(read_doc(examples[i], task.spec.kind, task.spec.fewshot_file));
    }
  }
  const auto needed = static_cast<size_t>(task.spec.num_fewshot) + (task.fewshot_from_docs ? 1 : 0);
  if (task.fewshot_docs.size() < needed) {
    throw DataError(task.spec.fewshot_file + ": " + std::to_string(task.fewshot_docs.size()) +
                    " few-shot documents, fewer than the " + std::to_string(needed) + " that num_fewshot = " +
                    std::to_string(task.spec.num_fewshot) + " draws" + (task.fewshot_from_docs ? " (one more: the document itself is left out)" : "") +
                    "; lower num_fewshot or add examples");
  }
  return task;
}

std::vector<EvalTask> read_task_files(const std::vector<std::string>& paths, int64_t limit, const std::string& who) {
  std::vector<EvalTask> tasks;
  std::set<std::string> names;
  for (const std::string& path : paths) {
    tasks.push_back(read_task_file(path, limit));
    if (!names.insert(tasks.back().spec.name).second) {
      throw ConfigError(who + ": two task files are named '" + tasks.back().spec.name + "' (" + path +
                        "); give one a \"name\" in its header");
    }
  }
  return tasks;
}

}  // namespace st
