// Backend resolution and the Communicator factory.
#include "distributed/backend.h"

#include "build_config.h"
#include "distributed/mpi_communicator.h"
#include "distributed/string_gather.h"
#include "util/check.h"
#include "util/errors.h"
#include "util/gpu_info.h"
#if ST_HAVE_CUDA
#include "distributed/nccl_communicator.h"
#endif

namespace st {

Backend resolve_backend(BackendChoice requested, const std::string& nccl_problem) {
  switch (requested) {
    case BackendChoice::mpi: return Backend::mpi;
    case BackendChoice::automatic: return nccl_problem.empty() ? Backend::nccl : Backend::mpi;
    case BackendChoice::nccl: break;
  }
  if (nccl_problem.empty()) return Backend::nccl;
  throw ConfigError("dist.backend = nccl cannot be used: " + nccl_problem + ". Set dist.backend = mpi (CPU) or auto.");
}

std::string local_nccl_problem(int device) {
  if (!ST_HAVE_CUDA) return "this build has no CUDA/NCCL backend (ST_ENABLE_CUDA)";
  if (!ST_TORCH_CUDA) return "libtorch was built without CUDA";
  const GpuInfo gpu = query_gpu_info();
  if (device >= static_cast<int>(gpu.devices.size())) {
    return "no GPU " + std::to_string(device) + " on this node (" +
           std::to_string(gpu.devices.size()) + " visible" +
           (gpu.problem.empty() ? "" : ": " + gpu.problem) + ")";
  }
  return "";
}

std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, BackendChoice requested,
                                                int device, Watchdog& watchdog) {
  auto mpi = std::make_unique<MpiCommunicator>(comm, watchdog);
  if (requested == BackendChoice::mpi) return mpi;
  // Every rank must pick the same backend: the first rank with a problem decides for all.
  std::string problem;
  int rank = 0;
  for (const auto& text : all_gather_strings(*mpi, local_nccl_problem(device))) {
    if (!text.empty() && problem.empty()) problem = "rank " + std::to_string(rank) + ": " + text;
    ++rank;
  }
  if (resolve_backend(requested, problem) == Backend::mpi) return mpi;
#if ST_HAVE_CUDA
  return std::make_unique<NcclCommunicator>(comm, device, watchdog);
#else
  ST_ASSERT(false, "NCCL resolved in a build without CUDA");
#endif
}

}  // namespace st
