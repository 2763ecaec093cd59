#include "model/attention_spans.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "util/host_sync.h"
#include "util/torch_compat.h"

namespace st {
namespace {

// [L, Hkv, d] -> [L, Hkv * repeats, d], each head repeated in place.
at::Tensor repeat_heads(const at::Tensor& x, int64_t repeats) {
  if (repeats == 1) return x;
  const auto length = x.size(0), kv = x.size(1), d = x.size(2);
  return x.unsqueeze(2).expand({length, kv, repeats, d}).reshape({length, kv * repeats, d});
}

// One span: q [Lq, H, d] over keys k, v [Lk, H, d], the last query aligned with the last key.
at::Tensor attend_span(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, int64_t window) {
  const int64_t queries = q.size(0), keys = k.size(0), offset = keys - queries;
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(2)));
  at::Tensor scores = at::matmul(q.transpose(0, 1), k.permute({1, 2, 0})) * scale;  // [H, Lq, Lk]
  const bool windowed = window > 0 && window < keys;
  if (queries > 1 || windowed) {
    const auto steps = at::TensorOptions(at::kLong).device(q.device());
    const at::Tensor query_place = at::arange(offset, offset + queries, steps).unsqueeze(1);
    const at::Tensor key_place = at::arange(keys, steps).unsqueeze(0);
    at::Tensor hidden = key_place.gt(query_place);
    if (windowed) hidden = hidden.logical_or(query_place.sub(key_place).ge(window));
    scores = scores.masked_fill(hidden, -std::numeric_limits<double>::infinity());
  }
  const at::Tensor probs = at::softmax(scores, -1, compat::softmax_dtype(scores)).to(q.scalar_type());
  return at::matmul(probs, v.transpose(0, 1)).transpose(0, 1);  // [Lq, H, d]
}

}  // namespace

AttentionSpans spans_from_offsets(std::vector<int64_t> query_starts, std::vector<int64_t> key_starts,
                            const std::vector<int64_t>* key_tokens, int64_t window, const at::Device& device) {
  AttentionSpans spans;
  for (size_t p = 0; p + 1 < query_starts.size(); ++p) {
    spans.longest_query = std::max(spans.longest_query, query_starts[p + 1] - query_starts[p]);
    spans.longest_key = std::max(spans.longest_key, key_starts[p + 1] - key_starts[p]);
  }
  const auto int32 = at::TensorOptions(at::kInt);
  spans.query_offsets = to_device_async(at::tensor(query_starts, at::kLong).to(int32), device);
  spans.key_offsets = to_device_async(at::tensor(key_starts, at::kLong).to(int32), device);
  if (key_tokens) spans.key_tokens = to_device_async(at::tensor(*key_tokens, at::kLong), device);
  spans.query_starts = std::move(query_starts);
  spans.key_starts = std::move(key_starts);
  spans.window = window;
  return spans;
}

AttentionSpans with_window(AttentionSpans spans, int64_t window) {
  spans.window = window;
  return spans;
}

AttentionSpans row_spans(int64_t rows, int64_t length, int64_t window, const at::Device& device) {
  std::vector<int64_t> starts;
  for (int64_t r = 0; r <= rows; ++r) starts.push_back(r * length);
  return spans_from_offsets(starts, starts, nullptr, window, device);
}

AttentionSpans layout_spans(const RowLayout& layout, int64_t window, const at::Device& device) {
  const std::optional<std::vector<SequenceRun>> runs = layout_runs(layout);
  return runs ? run_spans(*runs, window, device) : AttentionSpans{};
}

AttentionSpans run_spans(const std::vector<SequenceRun>& runs, int64_t window, const at::Device& device) {
  std::vector<int64_t> query_starts{0}, key_starts{0}, key_tokens;
  bool shares = false;
  for (const SequenceRun& run : runs) {
    if (run.continues >= 0) {  // a branch's keys: its prompt's, then its own
      const SequenceRun& prompt = runs[static_cast<size_t>(run.continues)];
      for (int64_t k = prompt.begin; k < prompt.end; ++k) key_tokens.push_back(k);
      shares = true;
    }
    for (int64_t k = run.begin; k < run.end; ++k) key_tokens.push_back(k);
    query_starts.push_back(run.end);
    key_starts.push_back(static_cast<int64_t>(key_tokens.size()));
  }
  return spans_from_offsets(query_starts, key_starts, shares ? &key_tokens : nullptr, window, device);
}

bool uses_flash_varlen(const at::Tensor& q) {
  const bool half = q.scalar_type() == at::kBFloat16 || q.scalar_type() == at::kHalf;
  return compat::kHasFlashVarlen && q.is_cuda() && half && q.size(-1) % 8 == 0 && q.size(-1) <= 256;
}

at::Tensor span_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const AttentionSpans& spans) {
  const at::Tensor keys = spans.key_tokens.defined() ? k.index_select(0, spans.key_tokens) : k;
  const at::Tensor values = spans.key_tokens.defined() ? v.index_select(0, spans.key_tokens) : v;
  if (uses_flash_varlen(q)) {
    return compat::flash_varlen_attention(q, keys, values, spans.query_offsets, spans.key_offsets,
                                          spans.longest_query, spans.longest_key, spans.window);
  }
  const int64_t repeats = q.size(1) / k.size(1);
  std::vector<at::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(spans.count()));
  for (int64_t p = 0; p < spans.count(); ++p) {
    const auto s = static_cast<size_t>(p);
    const int64_t query_count = spans.query_starts[s + 1] - spans.query_starts[s];
    const int64_t key_count = spans.key_starts[s + 1] - spans.key_starts[s];
    outputs.push_back(attend_span(q.narrow(0, spans.query_starts[s], query_count),
                                  repeat_heads(keys.narrow(0, spans.key_starts[s], key_count), repeats),
                                  repeat_heads(values.narrow(0, spans.key_starts[s], key_count), repeats),
                                  spans.window));
  }
  return at::cat(outputs, 0);
}

}  // namespace st
