// CUDA and NCCL members of the check-macro family (check.h); included only in files compiled
// when ST_HAVE_CUDA. A failed CUDA/NCCL call aborts the world.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "util/check.h"

#define ST_CHECK_CUDA(call)                                                        \
  do {                                                                             \
    const cudaError_t st_cuda_rc_ = (call);                                        \
    if (st_cuda_rc_ != cudaSuccess)                                                \
      ::st::fail_check(#call, __FILE__, __LINE__,                                  \
                       std::string(cudaGetErrorName(st_cuda_rc_)) + ": " +         \
                           cudaGetErrorString(st_cuda_rc_));                       \
  } while (0)

// ncclInProgress is success for non-blocking communicators: the operation was enqueued.
#define ST_CHECK_NCCL(call)                                                        \
  do {                                                                             \
    const ncclResult_t st_nccl_rc_ = (call);                                       \
    if (st_nccl_rc_ != ncclSuccess && st_nccl_rc_ != ncclInProgress)               \
      ::st::fail_check(#call, __FILE__, __LINE__, ncclGetErrorString(st_nccl_rc_)); \
  } while (0)
