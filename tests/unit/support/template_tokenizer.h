// A tokenizer for tests of chat templates and what renders through them.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace st::testing {

// Writes into `dir` a byte-level tokenizer whose vocabulary is the 256 byte symbols (no merges)
// plus the special tokens of every template; tokenizer_config.json names <s> and </s> for
// `plain`. Returns `dir`.
inline std::string write_template_tokenizer(const std::string& dir, bool with_config) {
  using Json = nlohmann::json;
  std::filesystem::create_directories(dir);
  Json vocab = Json::object();
  int id = 0, next = 256;
  for (int b = 0; b < 256; ++b) {  // GPT-2's byte alphabet, as byte_level.cpp builds it
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    const int codepoint = printable ? b : next++;
    std::string utf8;
    if (codepoint < 0x80) {
      utf8 += static_cast<char>(codepoint);
    } else {
      utf8 += static_cast<char>(0xC0 | (codepoint >> 6));
      utf8 += static_cast<char>(0x80 | (codepoint & 0x3F));
    }
    vocab[utf8] = id++;
  }
  Json added = Json::array();
  for (const char* token : {"<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<s>",
                            "</s>", "<|im_start|>", "<|im_end|>", "<think>", "</think>"}) {
    added.push_back({{"id", id++}, {"content", token}, {"special", true}});
  }
  const Json json = {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", Json::array()}}},
                     {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
                     {"added_tokens", added}};
  std::ofstream(dir + "/tokenizer.json") << json.dump();
  if (with_config) std::ofstream(dir + "/tokenizer_config.json") << R"({"bos_token": "<s>", "eos_token": {"content": "</s>"}})";
  return dir;
}

}  // namespace st::testing
