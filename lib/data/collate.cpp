#include "data/collate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "model/token_logp.h"
#include "util/errors.h"

namespace st {
namespace {

struct Row {
  const std::vector<int32_t>* prompt;
  const std::vector<int32_t>* response;
};

}  // namespace

MicroBatch collate_pairs(std::vector<Pair> pairs, PairKind kind, const CollateOptions& options) {
  for (Pair& pair : pairs) fit_to_cutoff(pair, options.cutoff_len, TruncationPolicy::truncate);
  std::vector<Row> rows;
  for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.chosen});
  if (kind == PairKind::dpo) {
    for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.rejected});
  }
  int64_t longest = 1;
  for (const Row& row : rows) {
    longest = std::max<int64_t>(longest, row.prompt->size() + row.response->size());
  }
  MicroBatch batch;
  batch.pairs = static_cast<int64_t>(pairs.size());
  const auto count = static_cast<int64_t>(rows.size());
  batch.input_ids = at::full({count, longest}, options.pad_id, at::kLong);
  batch.targets = at::full({count, longest}, kIgnoreTarget, at::kLong);
  auto ids = batch.input_ids.accessor<int64_t, 2>();
  auto targets = batch.targets.accessor<int64_t, 2>();
  for (int64_t r = 0; r < count; ++r) {
    const auto& prompt = *rows[r].prompt;
    const auto& response = *rows[r].response;
    const auto length = static_cast<int64_t>(prompt.size() + response.size());
    for (size_t t = 0; t < prompt.size(); ++t) ids[r][t] = prompt[t];
    for (size_t t = 0; t < response.size(); ++t) ids[r][prompt.size() + t] = response[t];
    // Position t predicts token t + 1: the response is predicted from the last prompt token on.
    for (int64_t t = static_cast<int64_t>(prompt.size()) - 1; t + 1 < length; ++t) {
      if (t >= 0) targets[r][t] = ids[r][t + 1];
    }
    batch.real_tokens += length;
    batch.target_tokens += static_cast<int64_t>(prompt.empty() ? response.size() - 1 : response.size());
  }
  batch.padded_tokens = count * longest;
  const bool with_ref = !pairs.empty() && pairs.front().ref_chosen_logp.has_value();
  if (with_ref) {
    batch.ref_logps = at::empty({count}, at::kFloat);
    for (size_t i = 0; i < pairs.size(); ++i) {
      batch.ref_logps[i] = *pairs[i].ref_chosen_logp;
      if (kind == PairKind::dpo) batch.ref_logps[pairs.size() + i] = *pairs[i].ref_rejected_logp;
    }
  }
  return batch;
}

std::vector<std::vector<size_t>> plan_micro_batches(const std::vector<int64_t>& lengths,
                                                    PairKind kind, const CollateOptions& options) {
  std::vector<size_t> order(lengths.size());
  std::iota(order.begin(), order.end(), 0);
  if (options.group_by_length) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return lengths[a] < lengths[b]; });
  }
  const int64_t rows_per_pair = kind == PairKind::dpo ? 2 : 1;
  std::vector<std::vector<size_t>> groups;
  int64_t group_longest = 0;
  for (size_t position : order) {
    const int64_t length = std::min(lengths[position], options.cutoff_len);
    bool start_new = groups.empty();
    if (!start_new && options.max_tokens > 0) {
      const int64_t longest = std::max(group_longest, length);
      start_new = longest * rows_per_pair * static_cast<int64_t>(groups.back().size() + 1) > options.max_tokens;
    } else if (!start_new) {
      start_new = static_cast<int64_t>(groups.back().size()) >= options.micro_batch;
    }
    if (start_new) {
      groups.emplace_back();
      group_longest = 0;
    }
    groups.back().push_back(position);
    group_longest = std::max(group_longest, length);
  }
  return groups;
}

}  // namespace st
