// NCCL bootstrap from MPI and collectives on device memory. Skipped without enough GPUs
// (NCCL refuses two ranks on one GPU). The tensor-level tests need a CUDA libtorch.
#include <ATen/ATen.h>
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "all_to_all_case.h"
#include "build_config.h"
#include "distributed/nccl_communicator.h"
#include "distributed/nccl_core.h"
#include "mpi_test_main.h"
#include "util/check_cuda.h"

namespace st {
namespace {

using st::testing::test_world;

bool enough_gpus() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return count >= test_world().topology().local_size;
}

#define ST_REQUIRE_GPUS()                                                        \
  if (!enough_gpus()) GTEST_SKIP() << "needs one GPU per rank on this node"

TEST(NcclCore, BootstrapAndAllReduceOnRawDeviceMemory) {
  ST_REQUIRE_GPUS();
  World& world = test_world();
  NcclComm comm = NcclComm::bootstrap(world.comm(), world.local_device(), 60.0);
  EXPECT_EQ(comm.size(), world.size());
  const size_t count = 597;  // odd on purpose
  std::vector<float> host(count);
  for (size_t i = 0; i < count; ++i) host[i] = static_cast<float>(i % 13 + world.rank());
  float* device = nullptr;
  ST_CHECK_CUDA(cudaMalloc(&device, count * sizeof(float)));
  ST_CHECK_CUDA(cudaMemcpy(device, host.data(), count * sizeof(float), cudaMemcpyHostToDevice));
  comm.all_reduce(device, device, count, ncclFloat32, ncclSum, nullptr);
  ST_CHECK_CUDA(cudaDeviceSynchronize());
  ST_CHECK_CUDA(cudaMemcpy(host.data(), device, count * sizeof(float), cudaMemcpyDeviceToHost));
  ST_CHECK_CUDA(cudaFree(device));
  const int ranks = world.size();
  for (size_t i = 0; i < count; ++i) {
    EXPECT_FLOAT_EQ(host[i], static_cast<float>(ranks * (i % 13) + ranks * (ranks - 1) / 2)) << i;
  }
}

#if ST_TORCH_CUDA
TEST(NcclCommunicator, GatherScatterReduceBroadcastOnTensors) {
  ST_REQUIRE_GPUS();
  World& world = test_world();
  NcclCommunicator comm(world.comm(), world.local_device(), world.watchdog());
  const auto options = at::TensorOptions().device(at::kCUDA, world.local_device());
  for (at::ScalarType type : {at::kFloat, at::kBFloat16}) {
    const int64_t shard_size = 43;
    const at::Tensor shard = at::full({shard_size}, world.rank() + 1, options.dtype(type));
    const at::Tensor full = at::empty({shard_size * world.size()}, options.dtype(type));
    comm.all_gather_into(full, shard);
    for (int rank = 0; rank < world.size(); ++rank) {
      EXPECT_EQ(full[rank * shard_size].item<float>(), rank + 1);
    }
    const at::Tensor reduced = at::empty({shard_size}, options.dtype(type));
    comm.reduce_scatter(reduced, full, ReduceOp::sum);
    EXPECT_EQ(reduced[0].item<float>(), world.size() * (world.rank() + 1));
    const at::Tensor summed = at::ones({597}, options.dtype(type));
    comm.all_reduce_async(summed, ReduceOp::avg).wait();
    // Summed in fp32: 597 itself is not a bf16 value.
    EXPECT_EQ(summed.to(at::kFloat).sum().item<float>(), 597);
    const at::Tensor values = at::full({7}, world.rank(), options.dtype(type));
    comm.broadcast(values, 0);
    EXPECT_EQ(values.abs().sum().item<float>(), 0);
    comm.barrier();
  }
}

TEST(NcclCommunicator, AllToAllDeliversEachPeersRowsIncludingNone) {
  ST_REQUIRE_GPUS();
  World& world = test_world();
  NcclCommunicator comm(world.comm(), world.local_device(), world.watchdog());
  for (at::ScalarType type : {at::kFloat, at::kBFloat16}) {
    st::testing::expect_all_to_all_delivers(comm, at::TensorOptions().device(at::kCUDA, world.local_device()).dtype(type));
  }
}

// A communicator destroyed right after its last collective (the end of every run) must not
// leave watchdog tickets polling the destroyed NCCL comm: that aborted runs at exit (code 134)
// whenever the watchdog had not yet retired the last tickets (H100, 2026-11-24).
TEST(NcclCommunicator, DestroyedRightAfterCollectivesLeavesNoTicket) {
  ST_REQUIRE_GPUS();
  World& world = test_world();
  // fp32 named: an integer fill value makes at::full's tensor int64 in libtorch 2.x.
  const auto options = at::TensorOptions().device(at::kCUDA, world.local_device()).dtype(at::kFloat);
  for (int round = 0; round < 10; ++round) {
    {
      NcclCommunicator comm(world.comm(), world.local_device(), world.watchdog());
      const at::Tensor shard = at::full({1 << 16}, world.rank() + 1, options);
      const at::Tensor full = at::empty({shard.numel() * world.size()}, options);
      for (int i = 0; i < 4; ++i) comm.all_gather_into_async(full, shard).wait();
      ST_CHECK_CUDA(cudaDeviceSynchronize());
    }
    EXPECT_EQ(world.watchdog().armed_count(), 0u) << "round " << round;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));  // a watchdog period and more
  }
}
#endif

}  // namespace
}  // namespace st
