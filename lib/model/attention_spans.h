// Variable-length attention without a [T, T] mask: a micro-batch's tokens, flattened to
// [R * T] in row order, cut into consecutive query spans, each attending causally to its own
// key list aligned at the end (the span's last query sees every key): a sequence's keys are
// itself; a prompt-shared branch's are the segment's shared prompt, then the branch (the
// prompt's K/V gathered once per branch). Built once per micro-batch; the flash varlen kernel
// (CUDA) and the per-span path (any device) read the same offsets. Cost: sum of Lq * Lk.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "data/row_layout.h"
#include "model/sequence_runs.h"

namespace st {

struct AttentionSpans {
  at::Tensor query_offsets;  // [P + 1] int32 on the device: queries of spans before p
  at::Tensor key_offsets;    // [P + 1] int32 on the device: keys of spans before p
  at::Tensor key_tokens;     // [K] int64 on the device: the flattened token of each key; undefined = the queries
  std::vector<int64_t> query_starts, key_starts;  // the same offsets on the host, [P + 1]
  int64_t longest_query = 0, longest_key = 0;
  int64_t window = 0;  // > 0: a query sees only the keys fewer than this many places back

  bool defined() const { return query_offsets.defined(); }
  int64_t count() const { return static_cast<int64_t>(query_starts.size()) - 1; }
};

// Spans from host offsets [P + 1] and, when given, the key list (else the keys are the queries).
AttentionSpans spans_from_offsets(std::vector<int64_t> query_starts, std::vector<int64_t> key_starts,
                                  const std::vector<int64_t>* key_tokens, int64_t window, const at::Device& device);

// `spans` under another window: the offsets and key lists do not depend on it (the kernels apply
// it), so the device tensors are shared.
AttentionSpans with_window(AttentionSpans spans, int64_t window);

// One causal span per row of `rows` x `length` tokens (plain rows under a sliding window).
AttentionSpans row_spans(int64_t rows, int64_t length, int64_t window, const at::Device& device);

// The spans of laid-out rows (row_layout.h; host tensors): each run of tokens of one segment
// and branch is a span; a branch run's keys are its segment's shared run, then itself; a
// padding run attends to itself. Undefined when the layout is not one that collate builds (a
// branch run before its segment's shared run, or one branch in two runs): the caller keeps
// the mask.
AttentionSpans layout_spans(const RowLayout& layout, int64_t window, const at::Device& device);
// The same from the layout's runs (sequence_runs.h), where the caller has them already.
AttentionSpans run_spans(const std::vector<SequenceRun>& runs, int64_t window, const at::Device& device);

// q [N, H, d], k and v [N, Hkv, d] with H a multiple of Hkv, N the flattened tokens the spans
// cover -> [N, H, d]. CUDA in bf16/fp16: the flash varlen kernel where libtorch has it; else
// each span alone (scores in the compute dtype, softmax in fp32), as transformers' eager path.
at::Tensor span_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const AttentionSpans& spans);

// Whether span_attention takes the flash kernel for these inputs (benches and tests say so).
bool uses_flash_varlen(const at::Tensor& q);

}  // namespace st
