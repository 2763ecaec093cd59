#include "data/row_layout.h"

#include <ATen/ATen.h>

namespace st {

RowLayout padding_row_layout(int64_t rows, int64_t width) {
  const auto long_options = at::TensorOptions(at::kLong);
  RowLayout layout;
  layout.position_ids = at::zeros({rows, width}, long_options);
  layout.segment_ids = at::full({rows, width}, kPaddingSegment, long_options);
  layout.branch_ids = at::full({rows, width}, kSharedBranch, long_options);
  layout.sequence_ids = at::full({rows, width}, -1, long_options);
  return layout;
}

}  // namespace st
