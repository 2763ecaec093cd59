// NcclComm: bootstrap, readiness polling, collectives, abort.
#include "distributed/nccl_core.h"

#include <chrono>
#include <thread>

#include "util/abort.h"
#include "util/check_cuda.h"
#include "util/timer.h"

namespace st {

NcclComm NcclComm::bootstrap(MPI_Comm bootstrap, int cuda_device, double timeout_s) {
  NcclComm result;
  ST_CHECK_MPI(MPI_Comm_rank(bootstrap, &result.rank_));
  ST_CHECK_MPI(MPI_Comm_size(bootstrap, &result.size_));
  result.device_ = cuda_device;
  result.timeout_s_ = timeout_s;

  ncclUniqueId id{};
  if (result.rank_ == 0) ST_CHECK_NCCL(ncclGetUniqueId(&id));
  ST_CHECK_MPI(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, bootstrap));

  ST_CHECK_CUDA(cudaSetDevice(cuda_device));
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ST_CHECK_NCCL(ncclCommInitRankConfig(&result.comm_, result.size_, id, result.rank_, &config));
  result.wait_until_ready("ncclCommInitRankConfig");
  ncclComm_t comm = result.comm_;
  result.abort_hook_ = add_abort_hook([comm] { ncclCommAbort(comm); });
  return result;
}

NcclComm::~NcclComm() { release(); }

NcclComm::NcclComm(NcclComm&& other) noexcept { *this = std::move(other); }

NcclComm& NcclComm::operator=(NcclComm&& other) noexcept {
  if (this != &other) {
    release();
    comm_ = other.comm_;
    rank_ = other.rank_;
    size_ = other.size_;
    device_ = other.device_;
    timeout_s_ = other.timeout_s_;
    abort_hook_ = other.abort_hook_;
    other.comm_ = nullptr;
    other.abort_hook_ = 0;
  }
  return *this;
}

void NcclComm::release() {
  if (abort_hook_) remove_abort_hook(abort_hook_);
  abort_hook_ = 0;
  if (!comm_) return;
  ncclCommFinalize(comm_);
  wait_until_ready("ncclCommFinalize");
  ncclCommDestroy(comm_);
  comm_ = nullptr;
}

void NcclComm::wait_until_ready(const char* operation) {
  const Timer waited;
  for (;;) {
    const ncclResult_t state = async_error();
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      fail_check(operation, __FILE__, __LINE__, ncclGetErrorString(state));
    }
    if (waited.seconds() > timeout_s_) {
      ncclCommAbort(comm_);
      comm_ = nullptr;
      fail_check(operation, __FILE__, __LINE__,
                 "not ready after " + std::to_string(waited.seconds()) +
                     " s (dist.timeout_s); check NCCL_SOCKET_IFNAME and that every rank started");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

ncclResult_t NcclComm::async_error() const {
  ncclResult_t state = ncclSuccess;
  if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return ncclInternalError;
  return state;
}

void NcclComm::abort() {
  if (!comm_) return;
  ncclCommAbort(comm_);
  comm_ = nullptr;
}

void NcclComm::all_gather(const void* send, void* receive, size_t count, ncclDataType_t type,
                          cudaStream_t stream) {
  ST_CHECK_NCCL(ncclAllGather(send, receive, count, type, comm_, stream));
  wait_until_ready("ncclAllGather");
}

void NcclComm::reduce_scatter(const void* send, void* receive, size_t count, ncclDataType_t type,
                              ncclRedOp_t op, cudaStream_t stream) {
  ST_CHECK_NCCL(ncclReduceScatter(send, receive, count, type, op, comm_, stream));
  wait_until_ready("ncclReduceScatter");
}

void NcclComm::all_reduce(const void* send, void* receive, size_t count, ncclDataType_t type,
                          ncclRedOp_t op, cudaStream_t stream) {
  ST_CHECK_NCCL(ncclAllReduce(send, receive, count, type, op, comm_, stream));
  wait_until_ready("ncclAllReduce");
}

void NcclComm::broadcast(const void* send, void* receive, size_t count, ncclDataType_t type,
                         int root, cudaStream_t stream) {
  ST_CHECK_NCCL(ncclBroadcast(send, receive, count, type, root, comm_, stream));
  wait_until_ready("ncclBroadcast");
}

void NcclComm::all_to_all(const void* send, void* receive, const std::vector<size_t>& send_bytes,
                          const std::vector<size_t>& receive_bytes, cudaStream_t stream) {
  ST_CHECK_NCCL(ncclGroupStart());
  size_t sent = 0, received = 0;
  for (int peer = 0; peer < size_; ++peer) {
    const auto p = static_cast<size_t>(peer);
    if (send_bytes[p] > 0) {
      ST_CHECK_NCCL(ncclSend(static_cast<const char*>(send) + sent, send_bytes[p], ncclUint8, peer, comm_, stream));
    }
    if (receive_bytes[p] > 0) {
      ST_CHECK_NCCL(ncclRecv(static_cast<char*>(receive) + received, receive_bytes[p], ncclUint8, peer, comm_, stream));
    }
    sent += send_bytes[p];
    received += receive_bytes[p];
  }
  ST_CHECK_NCCL(ncclGroupEnd());
  wait_until_ready("ncclSend/ncclRecv");
}

}  // namespace st
