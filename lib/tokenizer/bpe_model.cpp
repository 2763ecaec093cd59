#include "tokenizer/bpe_model.h"

#include <cstdio>
#include <functional>
#include <queue>

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
                   const std::vector<std::pair<std::string, std::string>>& merges, const BpeOptions& options,
                   const std::vector<int32_t>& merge_ranks)
    : vocab_(std::move(vocab)), options_(options) {
  merges_.reserve(merges.size());
  for (size_t index = 0; index < merges.size(); ++index) {
    const auto& [left, right] = merges[index];
    const auto rank = merge_ranks.empty() ? static_cast<int32_t>(index) : merge_ranks[index];
    const auto l = vocab_.find(left), r = vocab_.find(right), m = vocab_.find(left + right);
    if (l == vocab_.end() || r == vocab_.end() || m == vocab_.end()) {
      throw TokenizerError("model.merges[" + std::to_string(index) + "] '" + left + " " + right +
                           "': a part or the merged token is not in model.vocab; the tokenizer.json is inconsistent");
    }
    merges_.emplace(pair_key(l->second, r->second), Merge{rank, m->second});
  }
}

void BpeModel::symbol_ids(std::string_view word, std::vector<int32_t>& ids) const {
  std::string symbol;
  bool after_unknown = false;  // the previous symbol gave unk_id (for fuse_unk)
  for (size_t at = 0; at < word.size();) {
    const size_t length = std::min(utf8_length(static_cast<unsigned char>(word[at])), word.size() - at);
    symbol.assign(word.substr(at, length));
    at += length;
    const bool unknown = !vocab_.count(symbol) && !options_.byte_fallback && options_.unk_id >= 0;
    if (const auto found = vocab_.find(symbol); found != vocab_.end()) {
      ids.push_back(found->second);
    } else if (options_.byte_fallback) {
      for (const char byte : symbol) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", static_cast<unsigned char>(byte));
        const auto token = vocab_.find(name);
        if (token == vocab_.end()) throw TokenizerError(std::string("byte fallback: no token ") + name + " in model.vocab");
        ids.push_back(token->second);
      }
    } else if (options_.unk_id >= 0) {
      if (!(options_.fuse_unk && after_unknown)) ids.push_back(options_.unk_id);
    } else {
      throw TokenizerError("symbol '" + symbol + "' is not in model.vocab and the model has no unk_token or byte_fallback");
    }
    after_unknown = unknown;
  }
}

void BpeModel::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  if (options_.ignore_merges) {
    if (const auto whole = vocab_.find(std::string(word)); whole != vocab_.end()) {
      out.push_back(whole->second);
      return;
    }
  }
  std::vector<int32_t> ids;
  symbol_ids(word, ids);
  // The lowest-ranked adjacent pair merges first, the leftmost among equals: a heap of candidate
  // pairs over a linked list of symbols, O(n log n), so words without pre-tokenization (whole
  // SentencePiece-style texts) stay fast. A popped pair whose symbols changed is stale.
  struct Candidate {
    int32_t rank;
    size_t left;
    int32_t left_id, right_id, merged;
    bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  const size_t n = ids.size();
  std::vector<size_t> next(n), previous(n);
  for (size_t i = 0; i < n; ++i) {
    next[i] = i + 1;
    previous[i] = i - 1;  // wraps for 0: never followed
  }
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> heap;
  const auto offer = [&](size_t left) {
    if (left >= n || next[left] >= n) return;
    const auto found = merges_.find(pair_key(ids[left], ids[next[left]]));
    if (found != merges_.end()) heap.push({found->second.rank, left, ids[left], ids[next[left]], found->second.merged});
  };
  for (size_t i = 0; i + 1 < n; ++i) offer(i);
  std::vector<bool> alive(n, true);
  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    const size_t right = next[c.left];
    if (!alive[c.left] || right >= n || ids[c.left] != c.left_id || ids[right] != c.right_id) continue;
    ids[c.left] = c.merged;
    alive[right] = false;
    next[c.left] = next[right];
    if (next[right] < n) previous[next[right]] = c.left;
    if (c.left > 0 && alive[previous[c.left]]) offer(previous[c.left]);
    offer(c.left);
  }
  for (size_t i = 0; i < n; i = next[i]) out.push_back(ids[i]);
}

}  // namespace st
