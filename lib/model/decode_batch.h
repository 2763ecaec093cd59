// The rows one decoding loop advances together, each at its own place: a row's keys and values
// sit in its own columns of the KV cache (KvCache::columns), so a row that finishes can take a
// new prompt while the others go on. Prompts are prefilled in a left-padded batch of their own
// (PrefilledPrompts) and copied into free rows: a prompt prefilled once serves every completion
// placed from it. Hybrid models' Gated DeltaNet layers carry a state per row instead.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "hf/model_config.h"
#include "model/llama_blocks.h"
#include "model/llama_units.h"

namespace st {

// Prompts [first, last) prefilled in one forward, left-padded to the longest: their caches (with
// no room to grow) and each one's next-token logits.
struct PrefilledPrompts {
  KvCache cache;              // keys and values [P, kv_heads, T, head_dim]; carries [P, ...]
  at::Tensor key_positions;   // [P, T] int64 on the device
  at::Tensor key_valid;       // [P, T] bool on the device (false: left padding)
  std::vector<int64_t> next;  // each prompt's length: where its first new token sits
  at::Tensor logits;          // [P, V] fp32 on the host
  size_t first = 0;           // the prompts' index in the caller's list
};

// The attention mask of queries over a [B, Tk] key layout: query positions [B, Tq], key
// positions and whether each key is a real token [B, Tk] -> [B, 1, Tq, Tk] bool, true = attend
// (causal, the model's sliding window; a padding query sees itself so no row is empty).
at::Tensor decode_attention_mask(const at::Tensor& query_positions, const at::Tensor& key_positions,
                                 const at::Tensor& key_valid, int64_t sliding_window);

class DecodeBatch {
 public:
  // `rows` rows of up to `capacity` keys each (the longest prompt + the new tokens).
  DecodeBatch(const LlamaWeights& weights, const ModelConfig& config, int64_t rows, int64_t capacity);

  PrefilledPrompts prefill(const std::vector<std::vector<int64_t>>& prompts, size_t first, size_t last) const;

  // Row rows[i] becomes prompt prompt_rows[i] of `prompts`, its first token still to draw.
  void place(const PrefilledPrompts& prompts, const std::vector<int64_t>& prompt_rows,
             const std::vector<int64_t>& rows);
  // Row `row` holds no sequence: it idles (on its own first column) until placed.
  void release(int64_t row);
  // Keeps rows `kept`, in that order (the others dropped: the batch shrinks).
  void keep(const std::vector<int64_t>& kept);

  // Feeds each row its token at its next place; returns the next-token logits [rows, V] fp32 on
  // the host. Released rows' logits are meaningless.
  at::Tensor step(const std::vector<int64_t>& tokens);

  int64_t rows() const { return static_cast<int64_t>(places_.size()); }

 private:
  at::Tensor forward(const at::Tensor& ids, const at::Tensor& query_positions, const at::Tensor& key_positions,
                     const at::Tensor& key_valid, KvCache& cache) const;

  // Where a row's next token goes.
  struct Place {
    int64_t column = 0;    // in the cache
    int64_t position = 0;  // in its sequence
    bool placed = false;   // false: released (its place frozen)
  };

  const LlamaWeights& weights_;
  const ModelConfig& config_;
  ModelAttention kinds_;
  KvCache cache_;
  at::Tensor key_positions_;  // [rows, capacity] int64 on the device
  at::Tensor key_valid_;      // [rows, capacity] bool on the device
  std::vector<Place> places_;
};

}  // namespace st
