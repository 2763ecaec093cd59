#include "data/collate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "data/padded_rows.h"
#include "util/errors.h"

namespace st {

MicroBatch collate_pairs(std::vector<Pair> pairs, PairKind kind, const CollateOptions& options) {
  for (Pair& pair : pairs) fit_to_cutoff(pair, options.cutoff_len, TruncationPolicy::truncate);
  std::vector<PromptResponse<int32_t>> rows;
  for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.chosen});
  if (kind == PairKind::dpo) {
    for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.rejected});
  }
  MicroBatch batch;
  batch.pairs = static_cast<int64_t>(pairs.size());
  PaddedRows padded = pad_prompt_response_rows(rows, options.pad_id);
  batch.input_ids = std::move(padded.input_ids);
  batch.targets = std::move(padded.targets);
  const int64_t count = batch.input_ids.size(0);
  const int64_t longest = batch.input_ids.size(1);
  for (const auto& row : rows) {
    const auto& prompt = *row.prompt;
    const auto& response = *row.response;
    batch.row_lengths.push_back(static_cast<int64_t>(prompt.size() + response.size()));
    batch.real_tokens += batch.row_lengths.back();
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
