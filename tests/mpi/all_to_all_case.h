// The all-to-all case both backends run (tests/mpi/test_collectives.cpp on MPI,
// tests/cuda/test_nccl.cpp on NCCL): rank s sends rank d (s + 2d + 1) mod 3 rows (some none,
// unequal both ways), rows of [2, 3], each value naming its source, destination and place, all
// exact in bf16; every rank checks that it received each peer's rows in rank order.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <vector>

#include "distributed/communicator.h"

namespace st::testing {

inline int64_t all_to_all_rows(int source, int destination) { return (source + 2 * destination + 1) % 3; }

inline at::Tensor all_to_all_block(int source, int destination, const at::TensorOptions& options) {
  const int64_t rows = all_to_all_rows(source, destination);
  const at::Tensor index = at::arange(rows * 6, at::kDouble).view({rows, 2, 3});
  return ((index * 3 + source * 31 + destination * 7) % 251).to(options.dtype().toScalarType()).to(options.device());
}

inline void expect_all_to_all_delivers(Communicator& comm, const at::TensorOptions& options) {
  std::vector<at::Tensor> sent, expected;
  std::vector<int64_t> input_rows, output_rows;
  for (int peer = 0; peer < comm.size(); ++peer) {
    sent.push_back(all_to_all_block(comm.rank(), peer, options));
    input_rows.push_back(all_to_all_rows(comm.rank(), peer));
    expected.push_back(all_to_all_block(peer, comm.rank(), options));
    output_rows.push_back(all_to_all_rows(peer, comm.rank()));
  }
  const at::Tensor input = at::cat(sent), want = at::cat(expected);
  const at::Tensor output = at::full(want.sizes(), -1.0, want.options());
  comm.all_to_all(output, input, output_rows, input_rows);
  EXPECT_TRUE(at::equal(output.cpu(), want.cpu())) << "rank " << comm.rank();
}

}  // namespace st::testing
