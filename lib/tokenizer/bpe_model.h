// A BPE model's vocabulary and merge ranks (tokenizer.json "model": {"type": "BPE"}): turns one
// pre-tokenized word, already in the vocabulary's alphabet, into token ids by applying the
// lowest-ranked merge of adjacent symbols until none applies.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace st {

struct BpeOptions {
  bool ignore_merges = false;  // a word that is a whole vocabulary entry is that token (Llama 3)
  bool byte_fallback = false;  // a symbol outside the vocabulary becomes its bytes' <0xXX> tokens
  bool fuse_unk = false;       // consecutive unknown symbols give one unk_id
  int32_t unk_id = -1;         // for symbols outside the vocabulary without byte fallback; -1: none
};

class BpeModel {
 public:
  // merges: pairs of vocabulary strings; merge_ranks their ranks (empty: their order; tiktoken
  // vocabularies give every split of a token that token's rank).
  BpeModel(std::unordered_map<std::string, int32_t> vocab,
           const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& options,
           const std::vector<int32_t>& merge_ranks = {});

  // Appends the ids of `word` to `out`. Throws TokenizerError when a symbol has no token and
  // neither byte fallback nor an unknown token covers it.
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  const std::unordered_map<std::string, int32_t>& vocab() const { return vocab_; }

 private:
  struct Merge {
    int32_t rank, merged;
  };
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  void symbol_ids(std::string_view word, std::vector<int32_t>& ids) const;

  std::unordered_map<std::string, int32_t> vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  BpeOptions options_;
};

}  // namespace st
