// Versions of shardtune and of every library it was built with and runs against: what
// --version prints and what the startup consistency check compares across ranks.
#pragma once

#include <string>
#include <vector>

namespace st {

const char* git_sha();              // generated at build time, "abc123def456[-dirty]"
std::string shardtune_version();    // "0.1.0+abc123def456[-dirty]"
std::string mpi_library_version();  // "Open MPI v4.1.4"
std::string hdf5_version();         // "1.10.8"
// "OpenBLAS 0.3.21 (core Haswell)": the CPU BLAS libtorch calls and the kernels it picked for
// this CPU (or OPENBLAS_CORETYPE); "unknown (not OpenBLAS)" for another BLAS.
std::string blas_version();
// OpenBLAS's core name ("Haswell"), or "" for another BLAS.
std::string blas_core();

struct LibraryVersion {
  std::string name;
  std::string value;
  bool same_on_every_rank = true;  // false: a node's own (its GPUs, its CPU's BLAS kernels)
};
// In display order: shardtune, libtorch, MPI, HDF5, CUDA runtime, driver, NCCL, GPUs, BLAS.
std::vector<LibraryVersion> library_versions();

}  // namespace st
