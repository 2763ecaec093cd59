// Tokenizer::from_tiktoken: a tiktoken rank file (Llama 3's original tokenizer.model: lines of
// "<base64 token bytes> <rank>") as byte-level BPE. A piece that is a whole token is that token;
// otherwise adjacent parts merge lowest rank of their concatenation first, which is BPE with
// every split of a token as a merge at that token's rank. Llama 3's pre-tokenizer regex and
// special tokens (ids from 128000, as Meta's tokenizer.py) complete it.
#include <algorithm>
#include <fstream>
#include <unordered_set>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "util/errors.h"

namespace st {
namespace {

constexpr size_t kMaxTokenBytes = 512;  // Llama 3's and OpenAI's longest are 128

constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::vector<std::string> llama3_special_tokens() {
  std::vector<std::string> names = {"<|begin_of_text|>", "<|end_of_text|>"};
  for (int i = 0; i < 4; ++i) names.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  names.insert(names.end(), {"<|start_header_id|>", "<|end_header_id|>", "<|reserved_special_token_4|>", "<|eot_id|>"});
  for (int i = 5; i < 251; ++i) names.push_back("<|reserved_special_token_" + std::to_string(i) + "|>");
  return names;  // 256
}

// Standard base64 (RFC 4648, padded); false on any other character.
bool decode_base64(const std::string& text, std::string& out) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  uint32_t buffer = 0;
  int bits = 0;
  out.clear();
  for (const char c : text) {
    if (c == '=') break;
    const size_t value = alphabet.find(c);
    if (value == std::string::npos) return false;
    buffer = (buffer << 6) | static_cast<uint32_t>(value);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((buffer >> bits) & 0xFF);
    }
  }
  return !out.empty();
}

}  // namespace

Tokenizer Tokenizer::from_tiktoken(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw TokenizerError(file + ": cannot open");
  std::vector<std::pair<std::string, int32_t>> tokens;  // raw bytes, rank
  std::unordered_set<int32_t> ranks_seen;
  std::string line, bytes;
  for (size_t number = 1; std::getline(in, line); ++number) {
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    const std::string rank_text = space == std::string::npos ? "" : line.substr(space + 1);
    const bool numeric = !rank_text.empty() && rank_text.size() <= 9 &&
                         rank_text.find_first_not_of("0123456789") == std::string::npos;
    if (!numeric || !decode_base64(line.substr(0, space), bytes)) {
      throw TokenizerError(file + ":" + std::to_string(number) +
                           ": expected '<base64 token> <rank>' (a tiktoken file); a SentencePiece tokenizer.model "
                           "is not supported: use the model's tokenizer.json");
    }
    // Each split of a token is a merge candidate: the cost grows with the square of its length.
    if (bytes.size() > kMaxTokenBytes) {
      throw TokenizerError(file + ":" + std::to_string(number) + ": a token of " + std::to_string(bytes.size()) +
                           " bytes; tiktoken vocabularies' tokens are at most " + std::to_string(kMaxTokenBytes) +
                           " bytes (the file is damaged)");
    }
    const auto rank = static_cast<int32_t>(std::stol(rank_text));
    if (!ranks_seen.insert(rank).second) {
      throw TokenizerError(file + ":" + std::to_string(number) + ": rank " + rank_text + " appears twice (the file is damaged)");
    }
    tokens.emplace_back(bytes, rank);
  }
  if (tokens.empty()) throw TokenizerError(file + ": no tokens; expected a tiktoken rank file");

  std::unordered_map<std::string, int32_t> vocab;  // byte-level spelling -> rank
  vocab.reserve(tokens.size());
  for (const auto& [raw, rank] : tokens) vocab.emplace(byte_level_encode(raw), rank);
  std::vector<std::pair<int32_t, std::pair<std::string, std::string>>> ranked;
  for (const auto& [raw, rank] : tokens) {
    for (size_t cut = 1; cut < raw.size(); ++cut) {
      std::string left = byte_level_encode(raw.substr(0, cut)), right = byte_level_encode(raw.substr(cut));
      if (vocab.count(left) && vocab.count(right)) ranked.push_back({rank, {std::move(left), std::move(right)}});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<std::string, std::string>> merges;
  std::vector<int32_t> ranks;
  merges.reserve(ranked.size());
  ranks.reserve(ranked.size());
  for (auto& [rank, merge] : ranked) {
    ranks.push_back(rank);
    merges.push_back(std::move(merge));
  }
  int64_t largest = 0;
  for (const auto& [raw, rank] : tokens) largest = std::max<int64_t>(largest, rank);

  BpeOptions options;
  options.ignore_merges = true;  // tiktoken: a piece that is a token is that token
  Tokenizer tokenizer(file, BpeModel(std::move(vocab), merges, options, ranks));
  tokenizer.splits_.emplace_back(kLlama3Pattern, file + " (Llama 3 pre-tokenizer)");
  tokenizer.byte_level_ = true;
  const std::vector<std::string> specials = llama3_special_tokens();
  for (size_t i = 0; i < specials.size(); ++i) {
    tokenizer.added_.push_back({specials[i], static_cast<int32_t>(largest + 1 + static_cast<int64_t>(i)), true, false, false});
  }
  tokenizer.index_added_tokens();
  tokenizer.bos_token_ = "<|begin_of_text|>";
  tokenizer.eos_token_ = "<|end_of_text|>";
  return tokenizer;
}

}  // namespace st
