#include "model/reward_positions.h"

#include <ATen/ATen.h>

#include <string>
#include <vector>

#include "data/padded_rows.h"
#include "util/errors.h"

namespace st {

at::Tensor reward_positions(const at::Tensor& input_ids, const at::Tensor& targets, const RowLayout& layout,
                            int64_t pad_id) {
  const at::Tensor ids = input_ids.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor target_ids = targets.to(at::kCPU, at::kLong).contiguous();
  const int64_t rows = ids.size(0), length = ids.size(1);
  const int64_t sequences = layout.defined() ? layout.sequences : rows;
  at::Tensor sequence_ids;
  if (layout.defined()) sequence_ids = layout.sequence_ids.to(at::kCPU, at::kLong).contiguous();
  const int64_t* sequence_of = layout.defined() ? sequence_ids.data_ptr<int64_t>() : nullptr;
  const auto token = ids.accessor<int64_t, 2>();
  const auto target = target_ids.accessor<int64_t, 2>();
  // Each sequence's first and last target (flat row * T + position).
  std::vector<int64_t> first(static_cast<size_t>(sequences), -1), last(first);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < length; ++t) {
      const int64_t s = sequence_of ? sequence_of[r * length + t] : r;
      if (target[r][t] == kIgnoreTarget || s < 0) continue;
      const int64_t flat = r * length + t;
      if (first[static_cast<size_t>(s)] < 0) first[static_cast<size_t>(s)] = flat;
      last[static_cast<size_t>(s)] = flat;
    }
  }
  std::vector<int64_t> positions(static_cast<size_t>(sequences));
  for (int64_t s = 0; s < sequences; ++s) {
    const auto i = static_cast<size_t>(s);
    if (last[i] < 0 && layout.defined()) {
      throw ModelError("reward positions: sequence " + std::to_string(s) +
                       " of a packed or prompt-shared micro-batch has no completion token to read its reward at");
    }
    // One past the last target is the sequence's last token; a row without targets ends at its end.
    int64_t at_flat = last[i] >= 0 ? last[i] + 1 : s * length + length - 1;
    const int64_t floor = first[i] >= 0 ? first[i] : s * length;
    while (at_flat > floor && token[at_flat / length][at_flat % length] == pad_id) --at_flat;
    positions[i] = at_flat;
  }
  return at::tensor(positions, at::kLong);
}

}  // namespace st
