// Tokenizer::from_file: reads tokenizer.json (the Hugging Face tokenizers format) and refuses,
// by file and field, every component this implementation does not have.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "tokenizer/tokenizer.h"
#include "util/errors.h"
#include "util/hub_id.h"

namespace st {
namespace {

// GPT-2's pre-tokenizer regex: what ByteLevel with use_regex splits by.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

using Json = nlohmann::json;

struct Reader {
  std::string file;

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw TokenizerError(file + ": " + field + ": " + what);
  }
  [[noreturn]] void unsupported(const std::string& field, const std::string& type, const std::string& supported) const {
    fail(field, "'" + type + "' is not supported (supported: " + supported +
                    "); use a byte-level BPE tokenizer (Llama 3, Qwen2, GPT-2) or pre-tokenized ids");
  }
  std::string type_of(const Json& node, const std::string& field) const {
    if (!node.is_object() || !node.contains("type") || !node["type"].is_string()) fail(field, "expected an object with a \"type\"");
    return node["type"].get<std::string>();
  }
  // A bool field that may be absent or null.
  static bool flag(const Json& node, const char* key) {
    return node.contains(key) && node[key].is_boolean() && node[key].get<bool>();
  }
};

std::string escape_literal(const std::string& text) {  // a Split "String" pattern as a regex
  std::string out;
  for (const char c : text) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

BpeModel read_model(const Reader& r, const Json& model) {
  const std::string type = r.type_of(model, "model");
  if (type != "BPE") r.unsupported("model.type", type, "BPE");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (model.contains(key) && !model[key].is_null() && model[key] != "") r.fail(std::string("model.") + key, "not supported");
  }
  if (model.contains("dropout") && model["dropout"].is_number() && model["dropout"].get<double>() > 0.0) {
    r.fail("model.dropout", "BPE dropout is for training tokenizers; set it to null");
  }
  if (!model.contains("vocab") || !model["vocab"].is_object()) r.fail("model.vocab", "expected an object token -> id");
  std::unordered_map<std::string, int32_t> vocab;
  vocab.reserve(model["vocab"].size());
  for (const auto& [token, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX) {
      r.fail("model.vocab[\"" + token + "\"]", "expected an id in [0, 2^31)");
    }
    vocab.emplace(token, id.get<int32_t>());
  }
  std::vector<std::pair<std::string, std::string>> merges;
  const Json& list = model.contains("merges") ? model["merges"] : Json::array();
  if (!list.is_array()) r.fail("model.merges", "expected a list of merges");
  merges.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& merge = list[i];
    if (merge.is_string()) {  // "left right"
      const std::string text = merge.get<std::string>();
      const size_t space = text.find(' ', 1);
      if (space == std::string::npos) r.fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\"");
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      r.fail("model.merges[" + std::to_string(i) + "]", "expected \"left right\" or [\"left\", \"right\"]");
    }
  }
  int32_t unk = -1;
  if (model.contains("unk_token") && model["unk_token"].is_string()) {
    const auto found = vocab.find(model["unk_token"].get<std::string>());
    if (found == vocab.end()) r.fail("model.unk_token", "not in model.vocab");
    unk = found->second;
  }
  BpeOptions options;
  options.ignore_merges = Reader::flag(model, "ignore_merges");
  options.byte_fallback = Reader::flag(model, "byte_fallback");
  options.fuse_unk = Reader::flag(model, "fuse_unk");
  options.unk_id = unk;
  return BpeModel(std::move(vocab), merges, options);
}

NormalizerStep read_normalizer(const Reader& r, const Json& part, const std::string& field) {
  using Step = NormalizerStep;
  const std::string type = r.type_of(part, field);
  if (type == "NFC") return {Step::Kind::nfc, "", ""};
  if (type == "Prepend" && part.contains("prepend") && part["prepend"].is_string()) {
    return {Step::Kind::prepend, "", part["prepend"].get<std::string>()};
  }
  if (type == "Replace") {
    const Json& pattern = part.value("pattern", Json::object());
    if (!pattern.contains("String") || !pattern["String"].is_string() || pattern["String"].get<std::string>().empty() ||
        !part.contains("content") || !part["content"].is_string()) {
      r.fail(field, "only Replace of a literal {\"String\": ...} pattern with a \"content\" is supported");
    }
    return {Step::Kind::replace, pattern["String"].get<std::string>(), part["content"].get<std::string>()};
  }
  r.unsupported(field + ".type", type, "NFC, Prepend, Replace, Sequence of them");
}

// A special-token entry of tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::string config_token(const Json& config, const char* key) {
  if (!config.contains(key)) return "";
  const Json& entry = config[key];
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_object() && entry.contains("content") && entry["content"].is_string()) return entry["content"].get<std::string>();
  return "";
}

// The model's Jinja chat template: tokenizer_config.json's "chat_template" (a string, or named
// templates of which "default" is the one), else chat_template.jinja beside it (transformers 5
// writes it there); "" if neither. `where` names the file it came from.
std::string model_chat_template(const Json* config, const std::filesystem::path& folder, const std::string& config_file,
                                std::string& where) {
  if (config != nullptr && config->contains("chat_template")) {
    const Json& entry = (*config)["chat_template"];
    where = config_file;
    if (entry.is_string()) return entry.get<std::string>();
    if (entry.is_array()) {
      for (const Json& named : entry) {
        if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
            named["template"].is_string()) {
          return named["template"].get<std::string>();
        }
      }
    }
  }
  where = (folder / "chat_template.jinja").string();
  std::ifstream jinja(where, std::ios::binary);
  return jinja ? std::string(std::istreambuf_iterator<char>(jinja), {}) : std::string();
}

}  // namespace

bool holds_tokenizer(const std::string& directory) {
  return !directory.empty() && (std::filesystem::exists(directory + "/tokenizer.json") ||
                                std::filesystem::exists(directory + "/tokenizer.model"));
}

Tokenizer Tokenizer::from_file(const std::string& path) {
  std::string file = path;
  if (std::filesystem::is_directory(path)) {
    file = path + "/tokenizer.json";
    if (!std::filesystem::exists(file) && std::filesystem::exists(path + "/tokenizer.model")) {
      return from_tiktoken(path + "/tokenizer.model");
    }
  } else if (std::ifstream probe{path}) {
    char first = 0;
    probe >> first;  // skips whitespace
    if (probe && first != '{') return from_tiktoken(path);
  }
  return from_json(file);
}

namespace {

// One [token, id] pair of BertProcessing / RobertaProcessing (cls, sep).
int32_t processing_token_id(const Reader& r, const Json& node, const std::string& field) {
  if (!node.is_array() || node.size() != 2 || !node[1].is_number_integer()) r.fail(field, "expected [\"token\", id]");
  return node[1].get<int32_t>();
}

// The special tokens a post_processor puts before and after a single sequence: TemplateProcessing's
// `single` (its SpecialToken entries' ids from `special_tokens`), BertProcessing's and
// RobertaProcessing's cls ... sep, a Sequence's in order; ByteLevel adds none. Another type is
// kept by name in `unread` (encode_with_special_tokens refuses it; plain encoding never reads it).
void read_post_processor(const Reader& r, const Json& node, const std::string& field, std::vector<int32_t>& prefix,
                         std::vector<int32_t>& suffix, std::string& unread) {
  const std::string type = r.type_of(node, field);
  if (type == "Sequence") {
    const Json& parts = node.value("processors", Json::array());
    for (size_t i = 0; i < parts.size(); ++i) {
      read_post_processor(r, parts[i], field + ".processors[" + std::to_string(i) + "]", prefix, suffix, unread);
    }
  } else if (type == "TemplateProcessing") {
    const Json& single = node.value("single", Json::array());
    bool after = false;
    for (size_t i = 0; i < single.size(); ++i) {
      const std::string where = field + ".single[" + std::to_string(i) + "]";
      if (single[i].contains("Sequence")) {
        after = true;
        continue;
      }
      if (!single[i].contains("SpecialToken") || !single[i]["SpecialToken"].contains("id")) {
        r.fail(where, "expected {\"SpecialToken\": {\"id\": ...}} or {\"Sequence\": ...}");
      }
      const std::string token = single[i]["SpecialToken"]["id"].get<std::string>();
      const Json& ids = node.value("special_tokens", Json::object()).value(token, Json::object()).value("ids", Json());
      if (!ids.is_array()) r.fail(field + ".special_tokens", "'" + token + "' has no ids");
      for (const Json& id : ids) (after ? suffix : prefix).push_back(id.get<int32_t>());
    }
  } else if (type == "BertProcessing" || type == "RobertaProcessing") {
    prefix.push_back(processing_token_id(r, node.value("cls", Json()), field + ".cls"));
    suffix.push_back(processing_token_id(r, node.value("sep", Json()), field + ".sep"));
  } else if (type != "ByteLevel") {
    unread = field + ": '" + type + "'";
  }
}

}  // namespace

Tokenizer Tokenizer::from_json(const std::string& file) {
  const Reader r{file};
  std::ifstream in(file);
  if (!in) {
    if (looks_like_hub_id(file)) {
      throw TokenizerError(file + ": " + hub_id_refusal(file) + " and name " + hub_download_directory(file) +
                           " as the tokenizer (prep --tokenizer, prep.tokenizer or model.path)");
    }
    throw TokenizerError(file + ": cannot open; a tokenizer is read from a model directory holding tokenizer.json "
                                "(or tokenizer.model), or from the file: prep --tokenizer, prep.tokenizer or model.path");
  }
  std::stringstream text;
  text << in.rdbuf();
  Json json;
  try {
    json = Json::parse(text.str());
  } catch (const Json::exception& e) {
    throw TokenizerError(file + ": not valid JSON (" + e.what() + ")");
  }
  if (!json.is_object() || !json.contains("model")) r.fail("model", "missing; is this a tokenizer.json?");
  Tokenizer tokenizer(file, read_model(r, json["model"]));

  if (json.contains("normalizer") && !json["normalizer"].is_null()) {
    const Json& normalizer = json["normalizer"];
    std::vector<std::pair<const Json*, std::string>> parts;
    if (r.type_of(normalizer, "normalizer") == "Sequence") {
      if (!normalizer.contains("normalizers") || !normalizer["normalizers"].is_array()) {
        r.fail("normalizer.normalizers", "expected the list of a Sequence");
      }
      for (size_t i = 0; i < normalizer["normalizers"].size(); ++i) {
        parts.emplace_back(&normalizer["normalizers"][i], "normalizer.normalizers[" + std::to_string(i) + "]");
      }
    } else {
      parts.emplace_back(&normalizer, "normalizer");
    }
    for (const auto& [part, field] : parts) tokenizer.normalizer_.push_back(read_normalizer(r, *part, field));
  }
  // The pre-tokenizer: Split regexes then ByteLevel, alone or in a Sequence.
  std::vector<std::pair<const Json*, std::string>> steps;
  if (json.contains("pre_tokenizer") && !json["pre_tokenizer"].is_null()) {
    const Json& pre = json["pre_tokenizer"];
    if (r.type_of(pre, "pre_tokenizer") == "Sequence") {
      if (!pre.contains("pretokenizers") || !pre["pretokenizers"].is_array()) {
        r.fail("pre_tokenizer.pretokenizers", "expected the list of a Sequence");
      }
      for (size_t i = 0; i < pre["pretokenizers"].size(); ++i) {
        steps.emplace_back(&pre["pretokenizers"][i], "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]");
      }
    } else {
      steps.emplace_back(&pre, "pre_tokenizer");
    }
  }
  for (const auto& [step, field] : steps) {
    const std::string type = r.type_of(*step, field);
    if (tokenizer.byte_level_) r.fail(field, "comes after ByteLevel; only Split steps before one ByteLevel are supported");
    if (type == "Split") {
      if (step->value("behavior", "") != "Isolated" || Reader::flag(*step, "invert")) {
        r.fail(field, "only behavior \"Isolated\" without invert is supported");
      }
      const Json& pattern = step->value("pattern", Json::object());
      if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
        tokenizer.splits_.emplace_back(pattern["Regex"].get<std::string>(), file + ": " + field + ".pattern.Regex");
      } else if (pattern.contains("String") && pattern["String"].is_string()) {
        tokenizer.splits_.emplace_back(escape_literal(pattern["String"].get<std::string>()), file + ": " + field);
      } else {
        r.fail(field + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
      }
    } else if (type == "ByteLevel") {
      tokenizer.byte_level_ = true;
      tokenizer.add_prefix_space_ = Reader::flag(*step, "add_prefix_space");
      if (!step->contains("use_regex") || Reader::flag(*step, "use_regex")) {
        tokenizer.splits_.emplace_back(kGpt2Pattern, file + ": " + field + " (use_regex)");
      }
    } else {
      r.unsupported(field + ".type", type, "Sequence, Split, ByteLevel");
    }
  }

  const Json& added = json.value("added_tokens", Json::array());
  if (!added.is_array()) r.fail("added_tokens", "expected a list of {\"id\", \"content\"}");
  for (size_t i = 0; i < added.size(); ++i) {
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const Json& entry = added[i];
    if (!entry.is_object() || !entry.contains("id") || !entry["id"].is_number_integer() || entry["id"].get<int64_t>() < 0 ||
        entry["id"].get<int64_t>() > INT32_MAX || !entry.contains("content") || !entry["content"].is_string() ||
        entry["content"].get<std::string>().empty()) {
      r.fail(field, "expected {\"id\": N in [0, 2^31), \"content\": \"...\"}");
    }
    if (Reader::flag(entry, "single_word")) r.fail(field + ".single_word", "true is not supported");
    AddedToken token{entry["content"].get<std::string>(), entry["id"].get<int32_t>(), Reader::flag(entry, "special"),
                     Reader::flag(entry, "lstrip"), Reader::flag(entry, "rstrip")};
    tokenizer.added_.push_back(std::move(token));
  }
  tokenizer.index_added_tokens();

  if (json.contains("post_processor") && !json["post_processor"].is_null()) {
    read_post_processor(r, json["post_processor"], "post_processor", tokenizer.single_prefix_, tokenizer.single_suffix_,
                        tokenizer.unread_post_processor_);
  }

  const std::string config_file = (std::filesystem::path(file).parent_path() / "tokenizer_config.json").string();
  Json config;
  if (std::ifstream config_in{config_file}) {
    try {
      config = Json::parse(config_in);
      tokenizer.bos_token_ = config_token(config, "bos_token");
      tokenizer.eos_token_ = config_token(config, "eos_token");
      for (const char* key : {"bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token"}) {
        const std::string token = config_token(config, key);
        if (!token.empty()) tokenizer.special_tokens_.emplace_back(key, token);
      }
    } catch (const Json::exception& e) {
      throw TokenizerError(config_file + ": not valid JSON (" + e.what() + ")");
    }
  }
  tokenizer.chat_template_ = model_chat_template(config.is_object() ? &config : nullptr,
                                                std::filesystem::path(file).parent_path(), config_file,
                                                tokenizer.chat_template_file_);
  return tokenizer;
}

}  // namespace st
