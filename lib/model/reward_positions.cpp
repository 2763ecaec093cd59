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
  const int64_t rows = ids.size(0), length = ids.size(1);
  const auto token = ids.accessor<int64_t, 2>();
  if (!layout.defined()) {
    at::Tensor positions = at::empty({rows}, at::kLong);
    for (int64_t r = 0; r < rows; ++r) {
      int64_t last = length - 1;
      while (last > 0 && token[r][last] == pad_id) --last;
      positions[r] = r * length + last;
    }
    return positions;
  }
  const at::Tensor sequence_ids = layout.sequence_ids.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor target_ids = targets.to(at::kCPU, at::kLong).contiguous();
  const auto sequence = sequence_ids.accessor<int64_t, 2>();
  const auto target = target_ids.accessor<int64_t, 2>();
  std::vector<int64_t> first(static_cast<size_t>(layout.sequences), -1), last(first);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < length; ++t) {
      if (target[r][t] == kIgnoreTarget || sequence[r][t] < 0) continue;
      const auto s = static_cast<size_t>(sequence[r][t]);
      const int64_t flat = r * length + t;
      if (first[s] < 0) first[s] = flat;
      last[s] = flat;
    }
  }
  at::Tensor positions = at::empty({layout.sequences}, at::kLong);
  for (size_t s = 0; s < last.size(); ++s) {
    if (last[s] < 0) {
      throw ModelError("reward positions: sequence " + std::to_string(s) +
                       " of a packed or prompt-shared micro-batch has no completion token to read its reward at");
    }
    int64_t at_flat = last[s] + 1;  // the target at last[s] is this token
    while (at_flat > first[s] && token[at_flat / length][at_flat % length] == pad_id) --at_flat;
    positions[static_cast<int64_t>(s)] = at_flat;
  }
  return positions;
}

}  // namespace st
