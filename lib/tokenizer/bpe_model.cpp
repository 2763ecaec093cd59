#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <limits>

#include "util/errors.h"

namespace st {
namespace {

size_t utf8_length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if ((lead >> 5) == 0x6) return 2;
  if ((lead >> 4) == 0xE) return 3;
  return 4;
}

}  // namespace

BpeModel::BpeModel(std::unordered_map<std::string, int32_t> vocab,
                   const std::vector<std::pair<std::string, std::string>>& merges, bool ignore_merges,
                   bool byte_fallback, int32_t unk_id)
    : vocab_(std::move(vocab)), ignore_merges_(ignore_merges), byte_fallback_(byte_fallback), unk_id_(unk_id) {
  merges_.reserve(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const auto l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(left + right);
    if (l == vocab_.end() || r == vocab_.end() || m == vocab_.end()) {
      throw TokenizerError("model.merges[" + std::to_string(rank) + "] '" + left + " " + right +
                           "': a part or the merged token is not in model.vocab; the tokenizer.json is inconsistent");
    }
    merges_.emplace(pair_key(l->second, r->second), Merge{static_cast<int32_t>(rank), m->second});
  }
}

void BpeModel::symbol_ids(std::string_view word, std::vector<int32_t>& ids) const {
  std::string symbol;
  for (size_t at = 0; at < word.size();) {
    const size_t length = std::min(utf8_length(static_cast<unsigned char>(word[at])), word.size() - at);
    symbol.assign(word.substr(at, length));
    at += length;
    if (const auto found = vocab_.find(symbol); found != vocab_.end()) {
      ids.push_back(found->second);
    } else if (byte_fallback_) {
      for (const char byte : symbol) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<unsigned char>(byte));
        const auto token = vocab_.find(name);
        if (token == vocab_.end()) throw TokenizerError(std::string("byte fallback: no token ") + name + " in model.vocab");
        ids.push_back(token->second);
      }
    } else if (unk_id_ >= 0) {
      ids.push_back(unk_id_);
    } else {
      throw TokenizerError("symbol '" + symbol + "' is not in model.vocab and the model has no unk_token or byte_fallback");
    }
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (const auto whole = vocab_.find(std::string(word)); whole != vocab_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  std::vector<int32_t> ids;
  symbol_ids(word, ids);
  // The lowest-ranked adjacent pair merges first, the leftmost among equals; quadratic in the
  // word's length, which pre-tokenization keeps short.
  while (ids.size() > 1) {
    int32_t best_rank = std::numeric_limits<int32_t>::max(), merged = -1;
    size_t best = 0;
    for (size_t i = 0; i + 1 < ids.size(); ++i) {
      const auto found = merges_.find(pair_key(ids[i], ids[i + 1]));
      if (found != merges_.end() && found->second.rank < best_rank) {
        best_rank = found->second.rank;
        merged = found->second.merged;
        best = i;
      }
    }
    if (merged < 0) break;
    ids[best] = merged;
    ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace st
