// Expert parallelism's collective as the model sees it: the ranks of an expert-parallel group,
// each holding its own run of a sparse layer's experts (rank i: experts [i E/P, (i + 1) E/P)).
// Tokens go to the rank of each expert they picked and their outputs come back, by all-to-all
// (counts first, then rows). The model code knows no ranks: the FSDP layer hands in an
// implementation over its communicator (fsdp/expert_group.h) and the token batch carries it.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace st {

class ExpertExchange {
 public:
  virtual ~ExpertExchange() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // input's first input_rows[0] rows to rank 0, the next input_rows[1] to rank 1 ...; output's
  // rows from each rank in rank order (output_rows[i] from rank i).
  virtual void all_to_all(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                          const std::vector<int64_t>& input_rows) = 0;
};

// How many of a rank's rows each rank's experts get: `counts` [E] int64 (this rank's tokens per
// expert, on any device) -> [P, E / P] int64 on the host, row i rank i's tokens for each of this
// rank's experts.
at::Tensor exchange_expert_counts(ExpertExchange& exchange, const at::Tensor& counts);

// Differentiable all-to-all of rows [n, ...]: `send[i]` rows to rank i, `receive[i]` from it.
// Backward sends the gradient's rows back the way they came.
at::Tensor exchange_rows(const std::shared_ptr<ExpertExchange>& exchange, const at::Tensor& rows,
                         const std::vector<int64_t>& send, const std::vector<int64_t>& receive);

}  // namespace st
