// Choosing the collectives backend (dist.backend) and building the Communicator for it.
// nccl needs a CUDA build, a CUDA libtorch and a GPU for the rank; auto takes nccl when every
// rank has all three, else mpi. An explicit nccl that cannot work is a ConfigError.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "distributed/communicator.h"
#include "distributed/dist_options.h"
#include "distributed/watchdog.h"

namespace st {

// The backend a run resolved to.
enum class Backend { mpi, nccl };
template <>
struct EnumNames<Backend> {
  static constexpr NamedValue<Backend> table[] = {{Backend::mpi, "mpi"}, {Backend::nccl, "nccl"}};
};

// Pure: `nccl_problem` is empty when NCCL is usable on every rank, else why not.
Backend resolve_backend(BackendChoice requested, const std::string& nccl_problem);

// Why NCCL cannot serve this rank on `device` ("" when it can).
std::string local_nccl_problem(int device);

// Collective over `comm`: agrees on one backend for all ranks (any rank's problem rules NCCL
// out for everyone) and builds the communicator. Throws ConfigError for an impossible request.
std::unique_ptr<Communicator> make_communicator(MPI_Comm comm, BackendChoice requested,
                                                int device, Watchdog& watchdog);

}  // namespace st
