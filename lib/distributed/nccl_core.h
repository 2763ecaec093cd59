// NCCL on raw device pointers and cudaStream_t, no libtorch: communicator lifetime, bootstrap
// over MPI (rank 0 ncclGetUniqueId -> MPI_Bcast -> ncclCommInitRankConfig, non-blocking with a
// deadline) and the collectives. Compiled only when ST_HAVE_CUDA.
#pragma once

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>
#include <vector>

namespace st {

class NcclComm {
 public:
  // Collective over `bootstrap`: one NCCL rank per MPI rank, on `cuda_device`. Aborts the world
  // if the communicator is not ready within `timeout_s`.
  static NcclComm bootstrap(MPI_Comm bootstrap, int cuda_device, double timeout_s);

  NcclComm() = default;
  ~NcclComm();
  NcclComm(NcclComm&& other) noexcept;
  NcclComm& operator=(NcclComm&& other) noexcept;
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  int device() const { return device_; }

  // Counts are elements per rank (send side for gathers, receive side for scatters).
  void all_gather(const void* send, void* receive, size_t count, ncclDataType_t type,
                  cudaStream_t stream);
  void reduce_scatter(const void* send, void* receive, size_t count, ncclDataType_t type,
                      ncclRedOp_t op, cudaStream_t stream);
  void all_reduce(const void* send, void* receive, size_t count, ncclDataType_t type,
                  ncclRedOp_t op, cudaStream_t stream);
  void broadcast(const void* send, void* receive, size_t count, ncclDataType_t type, int root,
                 cudaStream_t stream);
  // send_bytes[r] bytes to rank r, receive_bytes[r] from it, each side's pieces back to back in
  // rank order: one group of sends and receives.
  void all_to_all(const void* send, void* receive, const std::vector<size_t>& send_bytes,
                  const std::vector<size_t>& receive_bytes, cudaStream_t stream);

  // Asynchronous error state (ncclSuccess, ncclInProgress, or the failure); thread-safe.
  ncclResult_t async_error() const;
  // Tears the communicator down without waiting for peers (used by abort_world).
  void abort();

 private:
  // Non-blocking communicators return ncclInProgress; block until settled or the deadline.
  void wait_until_ready(const char* operation);
  void release();

  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
  double timeout_s_ = 1800.0;
  int abort_hook_ = 0;
};

}  // namespace st
