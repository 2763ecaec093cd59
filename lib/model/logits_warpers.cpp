#include "model/logits_warpers.h"

#include <ATen/ATen.h>

#include <limits>

namespace st {
namespace {

constexpr float kCut = -std::numeric_limits<float>::infinity();

// TopKLogitsWarper: below the k-th largest logit (ties with it stay).
at::Tensor top_k_cut(const at::Tensor& scores, int64_t k) {
  const at::Tensor kth = std::get<0>(scores.topk(k, -1)).narrow(-1, k - 1, 1);
  return scores.masked_fill(scores < kth, kCut);
}

// TopPLogitsWarper: sorted ascending, the tokens whose cumulative probability is at most
// 1 - top_p go; the most likely one stays.
at::Tensor top_p_cut(const at::Tensor& scores, double top_p) {
  const auto sorted = scores.sort(-1, /*descending=*/false);
  const at::Tensor cumulative = at::softmax(std::get<0>(sorted), -1).cumsum(-1);
  at::Tensor remove_sorted = cumulative <= (1.0 - top_p);
  remove_sorted.narrow(-1, scores.size(-1) - 1, 1).fill_(false);
  const at::Tensor remove = remove_sorted.scatter(-1, std::get<1>(sorted), remove_sorted);
  return scores.masked_fill(remove, kCut);
}

// MinPLogitsWarper: probability below min_p x the top probability goes; the top one stays.
at::Tensor min_p_cut(const at::Tensor& scores, double min_p) {
  const at::Tensor probabilities = at::softmax(scores, -1);
  const auto [top, top_index] = probabilities.max(-1, /*keepdim=*/true);
  at::Tensor remove = probabilities < top * min_p;
  remove.scatter_(-1, top_index, false);
  return scores.masked_fill(remove, kCut);
}

}  // namespace

at::Tensor warped_logits(const at::Tensor& logits, const SamplingOptions& sampling) {
  at::Tensor scores = logits / sampling.temperature;
  const int64_t vocab = scores.size(-1);
  if (sampling.top_k > 0 && sampling.top_k < vocab) scores = top_k_cut(scores, sampling.top_k);
  if (sampling.top_p < 1.0) scores = top_p_cut(scores, sampling.top_p);
  if (sampling.min_p > 0.0) scores = min_p_cut(scores, sampling.min_p);
  return scores;
}

}  // namespace st
