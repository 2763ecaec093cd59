// Every collective of the MPI backend for fp32 and bf16 (plus integer and fp64 reductions), at
// sizes that do not divide by the rank count, with empty shards, in place, and asynchronously;
// all-to-all with unequal and empty counts (all_to_all_case.h).
// Expected values are computed independently on each rank from the same formulas.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <time.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <thread>

#include "all_to_all_case.h"
#include "mpi_test_main.h"
#include "util/check.h"

namespace st {
namespace {

using st::testing::world_communicator;

// Integer-valued and < 256 so every input is exact in bf16.
at::Tensor pattern(int rank, int64_t count, at::ScalarType type, int64_t offset = 0) {
  const at::Tensor index = at::arange(offset, offset + count, at::kDouble);
  return ((index * 7 + rank * 31) % 251).to(type);
}

void expect_equal(const at::Tensor& actual, const at::Tensor& expected) {
  ASSERT_EQ(actual.scalar_type(), expected.scalar_type());
  ASSERT_EQ(actual.numel(), expected.numel());
  EXPECT_TRUE(at::equal(actual, expected))
      << "max difference "
      << (actual.to(at::kDouble) - expected.to(at::kDouble)).abs().max().item<double>();
}

class FloatCollectives : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(FloatCollectives, AllGatherIntoAnyShardSizeIncludingEmpty) {
  auto& comm = world_communicator();
  for (int64_t shard_size : {0, 1, 3, 7, 1001}) {
    const at::Tensor shard = pattern(comm.rank(), shard_size, GetParam());
    const at::Tensor full = at::full({shard_size * comm.size()}, -1.0, shard.options());
    comm.all_gather_into(full, shard);
    for (int rank = 0; rank < comm.size(); ++rank) {
      expect_equal(full.narrow(0, rank * shard_size, shard_size),
                   pattern(rank, shard_size, GetParam()));
    }
  }
}

TEST_P(FloatCollectives, AllGatherInPlaceFromOwnSlice) {
  auto& comm = world_communicator();
  const int64_t shard_size = 13;
  const at::Tensor full = at::zeros({shard_size * comm.size()}, GetParam());
  const at::Tensor own = full.narrow(0, comm.rank() * shard_size, shard_size);
  own.copy_(pattern(comm.rank(), shard_size, GetParam()));
  comm.all_gather_into(full, own);
  for (int rank = 0; rank < comm.size(); ++rank) {
    expect_equal(full.narrow(0, rank * shard_size, shard_size),
                 pattern(rank, shard_size, GetParam()));
  }
}

TEST_P(FloatCollectives, PaddedGatherRestoresAVectorThatDoesNotDivide) {
  auto& comm = world_communicator();
  const int64_t length = 10;  // not a multiple of 3 or 4 ranks
  const int64_t shard_size = (length + comm.size() - 1) / comm.size();
  const at::Tensor original = pattern(0, length, GetParam());
  at::Tensor padded = at::zeros({shard_size * comm.size()}, GetParam());
  padded.narrow(0, 0, length).copy_(original);
  const at::Tensor shard = padded.narrow(0, comm.rank() * shard_size, shard_size).clone();
  const at::Tensor gathered = at::empty_like(padded);
  comm.all_gather_into(gathered, shard);
  expect_equal(gathered.narrow(0, 0, length), original);
}

TEST_P(FloatCollectives, ReduceScatterSumAndAvgRoundOnce) {
  auto& comm = world_communicator();
  for (int64_t shard_size : {0, 1, 5, 333}) {
    const at::Tensor full = pattern(comm.rank(), shard_size * comm.size(), GetParam());
    at::Tensor exact = at::zeros({shard_size}, at::kDouble);
    for (int rank = 0; rank < comm.size(); ++rank) {
      exact += pattern(rank, shard_size, at::kDouble, comm.rank() * shard_size);
    }
    const at::Tensor sum = at::empty({shard_size}, GetParam());
    comm.reduce_scatter(sum, full, ReduceOp::sum);
    expect_equal(sum, exact.to(GetParam()));
    const at::Tensor avg = at::empty({shard_size}, GetParam());
    comm.reduce_scatter(avg, full, ReduceOp::avg);
    expect_equal(avg, (exact.to(at::kFloat) / comm.size()).to(GetParam()));
  }
}

TEST_P(FloatCollectives, AllReduceSumAvgMaxOnOddSizes) {
  auto& comm = world_communicator();
  for (int64_t count : {1, 1001}) {
    at::Tensor exact_sum = at::zeros({count}, at::kDouble);
    at::Tensor exact_max = at::full({count}, -1.0, at::kDouble);
    for (int rank = 0; rank < comm.size(); ++rank) {
      exact_sum += pattern(rank, count, at::kDouble);
      exact_max = at::maximum(exact_max, pattern(rank, count, at::kDouble));
    }
    at::Tensor values = pattern(comm.rank(), count, GetParam());
    comm.all_reduce(values, ReduceOp::sum);
    expect_equal(values, exact_sum.to(GetParam()));

    values = pattern(comm.rank(), count, GetParam());
    comm.all_reduce(values, ReduceOp::avg);
    expect_equal(values, (exact_sum.to(at::kFloat) / comm.size()).to(GetParam()));

    values = pattern(comm.rank(), count, GetParam());
    comm.all_reduce(values, ReduceOp::max);
    expect_equal(values, exact_max.to(GetParam()));
  }
}

TEST_P(FloatCollectives, BroadcastFromEveryRoot) {
  auto& comm = world_communicator();
  for (int root = 0; root < comm.size(); ++root) {
    for (int64_t count : {0, 7, 1001}) {
      const at::Tensor values = pattern(comm.rank(), count, GetParam());
      comm.broadcast(values, root);
      expect_equal(values, pattern(root, count, GetParam()));
    }
  }
}

TEST_P(FloatCollectives, AsyncCollectivesCompleteInAnyWaitOrder) {
  auto& comm = world_communicator();
  const int64_t shard_size = 17;
  const at::Tensor shard = pattern(comm.rank(), shard_size, GetParam());
  const at::Tensor gathered = at::empty({shard_size * comm.size()}, GetParam());
  const at::Tensor full = pattern(comm.rank(), shard_size * comm.size(), GetParam(), 5);
  const at::Tensor reduced = at::empty({shard_size}, GetParam());
  const at::Tensor summed = pattern(comm.rank(), 9, GetParam());

  Work gather = comm.all_gather_into_async(gathered, shard);
  Work scatter = comm.reduce_scatter_async(reduced, full, ReduceOp::sum);
  Work all_reduce = comm.all_reduce_async(summed, ReduceOp::sum);
  Work barrier = comm.barrier_async();
  EXPECT_TRUE(gather.pending());
  barrier.wait();
  all_reduce.wait();
  scatter.wait();
  gather.wait();
  EXPECT_FALSE(gather.pending());

  at::Tensor exact_scatter = at::zeros({shard_size}, at::kDouble);
  at::Tensor exact_sum = at::zeros({9}, at::kDouble);
  for (int rank = 0; rank < comm.size(); ++rank) {
    expect_equal(gathered.narrow(0, rank * shard_size, shard_size),
                 pattern(rank, shard_size, GetParam()));
    exact_scatter += pattern(rank, shard_size, at::kDouble, 5 + comm.rank() * shard_size);
    exact_sum += pattern(rank, 9, at::kDouble);
  }
  expect_equal(reduced, exact_scatter.to(GetParam()));
  expect_equal(summed, exact_sum.to(GetParam()));
}

TEST_P(FloatCollectives, AllToAllDeliversEachPeersRowsIncludingNone) {
  st::testing::expect_all_to_all_delivers(world_communicator(), at::TensorOptions().dtype(GetParam()));
}

TEST_P(FloatCollectives, DroppingUnwaitedWorkStillCompletesIt) {
  auto& comm = world_communicator();
  const at::Tensor values = pattern(comm.rank(), 5, GetParam());
  { Work dropped = comm.broadcast_async(values, 0); }
  expect_equal(values, pattern(0, 5, GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FloatCollectives, ::testing::Values(at::kFloat, at::kBFloat16),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

TEST(IntegerCollectives, SumAndMaxAreExact) {
  auto& comm = world_communicator();
  for (at::ScalarType type : {at::kInt, at::kLong, at::kDouble}) {
    at::Tensor values = at::full({3}, comm.rank() + 1, at::TensorOptions().dtype(type));
    comm.all_reduce(values, ReduceOp::sum);
    const int64_t expected_sum = comm.size() * (comm.size() + 1) / 2;
    EXPECT_TRUE(at::equal(values, at::full({3}, expected_sum, values.options())));
    values.fill_(comm.rank() * 10);
    comm.all_reduce(values, ReduceOp::max);
    EXPECT_TRUE(at::equal(values, at::full({3}, (comm.size() - 1) * 10, values.options())));
  }
}

TEST(CollectiveArguments, MisuseThrowsBeforeCommunicating) {
  auto& comm = world_communicator();
  const at::Tensor shard = at::zeros({3});
  EXPECT_THROW(comm.all_gather_into(at::zeros({3 * comm.size() + 1}), shard),
               std::invalid_argument);
  EXPECT_THROW(comm.all_gather_into(at::zeros({3 * comm.size()}, at::kBFloat16), shard),
               std::invalid_argument);
  EXPECT_THROW(comm.all_reduce(at::zeros({2}, at::kLong), ReduceOp::avg), std::invalid_argument);
  EXPECT_THROW(comm.broadcast(at::zeros({2}), comm.size()), std::invalid_argument);
  const at::Tensor full = at::zeros({4 * comm.size()});
  EXPECT_THROW(comm.reduce_scatter(full.narrow(0, 0, 4), full, ReduceOp::sum),
               std::invalid_argument);
  EXPECT_THROW(comm.all_reduce(at::zeros({4, 4}).t(), ReduceOp::sum), std::invalid_argument);
  const std::vector<int64_t> ones(static_cast<size_t>(comm.size()), 1);
  const at::Tensor rows = at::zeros({comm.size(), 2});
  const std::vector<int64_t> one_too_many(static_cast<size_t>(comm.size()) + 1, 0);
  EXPECT_THROW(comm.all_to_all(rows, rows.clone(), ones, one_too_many), std::invalid_argument);
  EXPECT_THROW(comm.all_to_all(at::zeros({comm.size() + 1, 2}), rows, ones, ones), std::invalid_argument);
  EXPECT_THROW(comm.all_to_all(at::zeros({comm.size(), 3}), rows, ones, ones), std::invalid_argument);
  EXPECT_THROW(comm.all_to_all(rows, rows, ones, ones), std::invalid_argument);  // output aliases input
  comm.barrier();  // every rank is still in step after the refusals
}

double thread_cpu_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

// The ranks that wait for a late peer give their core back (mpi_communicator.cpp, wait_politely):
// over a wait of about a second a waiting rank's thread uses a few percent of it. MPI_Wait polled
// the whole wait (a rank waiting for a lost peer held a core until the watchdog fired).
TEST(LatePeer, WaitingRanksLeaveTheCore) {
  auto& comm = world_communicator();
  if (comm.size() < 2) GTEST_SKIP() << "needs a peer";
  comm.barrier();
  const bool late = comm.rank() == comm.size() - 1;
  if (late) std::this_thread::sleep_for(std::chrono::seconds(1));
  const double cpu_before = thread_cpu_seconds();
  const auto started = std::chrono::steady_clock::now();
  at::Tensor values = at::ones({4});
  comm.all_reduce(values, ReduceOp::sum);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  const double cpu = thread_cpu_seconds() - cpu_before;
  EXPECT_TRUE(at::equal(values, at::full({4}, comm.size(), values.options())));
  if (late) return;
  std::printf("rank %d waited %.3f s for the late peer, using %.4f s of CPU\n", comm.rank(), waited, cpu);
  EXPECT_GT(waited, 0.5);
  EXPECT_LT(cpu, 0.1 * waited) << "rank " << comm.rank() << " spun while it waited";
}

TEST(MpiErrors, ErrorStringIsReadableOnceInitialized) {
  EXPECT_NE(mpi_error_string(MPI_ERR_COUNT).find("count"), std::string::npos)
      << mpi_error_string(MPI_ERR_COUNT);
}

}  // namespace
}  // namespace st
