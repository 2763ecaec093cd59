// Communicator over NCCL for CUDA tensors. Collectives run on a dedicated communication stream
// ordered after the caller's compute stream by an event; Work::wait() orders the compute
// stream after the collective without blocking the host, so communication overlaps compute.
// The watchdog polls each collective's completion event. Compiled only when ST_HAVE_CUDA.
#pragma once

#include <cuda_runtime_api.h>

#include "distributed/communicator.h"
#include "distributed/nccl_core.h"
#include "distributed/watchdog.h"

namespace st {

class NcclCommunicator : public Communicator {
 public:
  // Collective over `bootstrap`.
  NcclCommunicator(MPI_Comm bootstrap, int cuda_device, Watchdog& watchdog);
  ~NcclCommunicator() override;

  int rank() const override { return comm_.rank(); }
  int size() const override { return comm_.size(); }
  std::string backend() const override { return "nccl"; }
  cudaStream_t stream() const { return stream_; }

  Work all_gather_into_async(const at::Tensor& full, const at::Tensor& shard) override;
  Work reduce_scatter_async(const at::Tensor& shard, const at::Tensor& full, ReduceOp op) override;
  Work all_reduce_async(const at::Tensor& tensor, ReduceOp op) override;
  Work broadcast_async(const at::Tensor& tensor, int root) override;
  Work barrier_async() override;
  Work all_to_all_async(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                        const std::vector<int64_t>& input_rows) override;

 private:
  // Makes the communication stream wait for the compute stream's work so far.
  cudaStream_t begin(std::initializer_list<at::Tensor> tensors);
  // Records completion, arms the watchdog; the Work makes the compute stream wait for it.
  Work finish(const std::string& description, std::function<void()> after = {});

  NcclComm comm_;
  Watchdog& watchdog_;
  cudaStream_t stream_ = nullptr;
};

}  // namespace st
