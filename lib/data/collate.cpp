#include "data/collate.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <numeric>

#include "data/packed_rows.h"
#include "data/padded_rows.h"
#include "util/errors.h"

namespace st {

namespace {

MicroBatch collate_plain(const std::vector<Pair>& pairs, PairKind kind, const CollateOptions& options) {
  std::vector<PromptResponse<int32_t>> rows;
  for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.chosen, &pair.loss_mask});
  if (sequences_of(kind) == 2) {
    for (const Pair& pair : pairs) rows.push_back({&pair.prompt, &pair.rejected});
  }
  MicroBatch batch;
  batch.pairs = static_cast<int64_t>(pairs.size());
  PaddedRows padded = pad_prompt_response_rows(rows, options.pad_id);
  batch.input_ids = std::move(padded.input_ids);
  batch.targets = std::move(padded.targets);
  const int64_t count = batch.input_ids.size(0);
  const int64_t longest = batch.input_ids.size(1);
  std::vector<int64_t> counts;
  batch.token_weights = at::zeros({count, longest}, at::kFloat);
  for (const auto& row : rows) {
    batch.segment_lengths.push_back(static_cast<int64_t>(row.prompt->size() + row.response->size()));
    const bool partner = schema_of(kind).second == SecondSequence::partner && counts.size() >= pairs.size();
    batch.token_weights[static_cast<int64_t>(counts.size())].narrow(0, 0, batch.segment_lengths.back()).fill_(partner ? 0.0 : 1.0);
    batch.real_tokens += batch.segment_lengths.back();
    counts.push_back(response_targets(*row.prompt, *row.response, row.loss_mask));
    batch.target_tokens += counts.back();
  }
  batch.target_counts = at::tensor(counts, at::kLong);
  batch.computed_tokens = batch.real_tokens;
  batch.padded_tokens = count * longest;
  batch.ref_logps = sequence_ref_logps(pairs, kind);
  return batch;
}

}  // namespace

at::Tensor sequence_ref_logps(const std::vector<Pair>& pairs, PairKind kind) {
  if (pairs.empty() || !pairs.front().ref_chosen_logp.has_value()) return {};
  const auto count = static_cast<int64_t>(pairs.size());
  at::Tensor logps = at::empty({sequences_of(kind) * count}, at::kFloat);
  for (int64_t i = 0; i < count; ++i) {
    logps[i] = *pairs[i].ref_chosen_logp;
    if (sequences_of(kind) == 2) logps[count + i] = *pairs[i].ref_rejected_logp;
  }
  return logps;
}

MicroBatch collate_pairs(std::vector<Pair> pairs, PairKind kind, const CollateOptions& options) {
  const ExampleSchema& schema = schema_of(kind);
  std::vector<uint8_t> labels;
  std::vector<float> margins;
  for (const Pair& pair : pairs) {
    if (pair.margin) margins.push_back(*pair.margin);
    if (schema.second == SecondSequence::partner && pair.rejected.empty()) {
      throw DataError("an example without its mismatched partner's completion (read it with PairDataset::example)");
    }
    if (schema.labelled) labels.push_back(pair.label.value_or(false) ? 1 : 0);
  }
  for (Pair& pair : pairs) fit_to_cutoff(pair, options.cutoff_len, TruncationPolicy::truncate);
  MicroBatch batch =
      options.laid_out(kind) ? collate_laid_out(pairs, kind, options) : collate_plain(pairs, kind, options);
  if (schema.labelled) batch.labels = at::tensor(labels, at::kByte).to(at::kBool);
  if (!margins.empty()) {
    if (margins.size() != pairs.size()) throw DataError("a micro-batch mixes pairs with and without a margin");
    batch.margins = at::tensor(margins, at::kFloat);
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
  const int64_t rows_per_pair = sequences_of(kind);
  std::vector<std::vector<size_t>> groups;
  int64_t group_longest = 0, group_tokens = 0;
  for (size_t position : order) {
    const int64_t length = std::min(lengths[position], options.cutoff_len);
    bool start_new = groups.empty();
    if (!start_new && options.max_tokens > 0 && options.packing) {
      start_new = group_tokens + rows_per_pair * length > options.max_tokens;
    } else if (!start_new && options.max_tokens > 0) {
      const int64_t longest = std::max(group_longest, length);
      start_new = longest * rows_per_pair * static_cast<int64_t>(groups.back().size() + 1) > options.max_tokens;
    } else if (!start_new) {
      start_new = static_cast<int64_t>(groups.back().size()) >= options.micro_batch;
    }
    if (start_new) {
      groups.emplace_back();
      group_longest = group_tokens = 0;
    }
    groups.back().push_back(position);
    group_longest = std::max(group_longest, length);
    group_tokens += rows_per_pair * length;
  }
  return groups;
}

}  // namespace st
