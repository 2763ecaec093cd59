#include "model/sequence_runs.h"

#include <ATen/ATen.h>

#include <map>
#include <set>
#include <utility>

namespace st {

std::optional<std::vector<SequenceRun>> layout_runs(const RowLayout& layout) {
  const at::Tensor segment_ids = layout.segment_ids.to(at::kCPU, at::kLong).contiguous();
  const at::Tensor branch_ids = layout.branch_ids.to(at::kCPU, at::kLong).contiguous();
  const auto segments = segment_ids.accessor<int64_t, 2>();
  const auto branches = branch_ids.accessor<int64_t, 2>();
  const int64_t rows = segment_ids.size(0), length = segment_ids.size(1);
  std::vector<SequenceRun> runs;
  std::map<int64_t, int64_t> shared_run;       // segment -> index of its shared run
  std::set<std::pair<int64_t, int64_t>> seen;  // (segment, branch) runs so far
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t t = 0; t < length;) {
      const int64_t segment = segments[r][t], branch = branches[r][t];
      int64_t end = t;
      while (end < length && segments[r][end] == segment && branches[r][end] == branch) ++end;
      SequenceRun run{r * length + t, r * length + end, -1};
      if (segment != kPaddingSegment) {
        if (!seen.insert({segment, branch}).second) return std::nullopt;
        if (branch == kSharedBranch) {
          for (int64_t other : {kChosenBranch, kRejectedBranch}) {
            if (seen.count({segment, other})) return std::nullopt;
          }
          shared_run[segment] = static_cast<int64_t>(runs.size());
        } else if (const auto prompt = shared_run.find(segment); prompt != shared_run.end()) {
          run.continues = prompt->second;
        }
      }
      runs.push_back(run);
      t = end;
    }
  }
  return runs;
}

}  // namespace st
