// Communicator over MPI for CPU tensors (fp32, fp64, bf16, fp16, int32, int64, uint8).
// bf16/fp16 reductions run in fp32 (MPI has no 16-bit float types) and round once at the end.
// CUDA tensors are staged through host copies (the device work before them is waited for), so
// several ranks can share one GPU, which NCCL refuses: slow, for tests and small runs.
#pragma once

#include "distributed/communicator.h"
#include "distributed/mpi_comm.h"
#include "distributed/watchdog.h"

namespace st {

class MpiCommunicator : public Communicator {
 public:
  // Collective over `comm`: works on a private duplicate of it.
  MpiCommunicator(MPI_Comm comm, Watchdog& watchdog);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }
  MPI_Comm comm() const { return comm_.get(); }

  Work all_gather_into_async(const at::Tensor& full, const at::Tensor& shard) override;
  Work reduce_scatter_async(const at::Tensor& shard, const at::Tensor& full, ReduceOp op) override;
  Work all_reduce_async(const at::Tensor& tensor, ReduceOp op) override;
  Work broadcast_async(const at::Tensor& tensor, int root) override;
  Work barrier_async() override;
  Work all_to_all_async(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                        const std::vector<int64_t>& input_rows) override;

 private:
  Work all_gather_host(const at::Tensor& full, const at::Tensor& shard);
  Work reduce_scatter_host(const at::Tensor& shard, const at::Tensor& full, ReduceOp op);
  Work all_reduce_host(const at::Tensor& tensor, ReduceOp op);
  Work broadcast_host(const at::Tensor& tensor, int root);
  Work all_to_all_host(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                       const std::vector<int64_t>& input_rows);
  // Arms the watchdog, and returns Work that waits on `request`, disarms, then runs `after`.
  Work track(MPI_Request request, const std::string& description, std::function<void()> after);

  MpiComm comm_;
  Watchdog& watchdog_;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace st
