// Versions of shardtune and of every library it was built with and runs against: what
// --version prints and what the startup consistency check compares across ranks.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace st {

const char* git_sha();              // generated at build time, "abc123def456[-dirty]"
std::string shardtune_version();    // "0.1.0+abc123def456[-dirty]"
std::string mpi_library_version();  // "Open MPI v4.1.4"
std::string hdf5_version();         // "1.10.8"

// (name, value) pairs in display order: shardtune, libtorch, MPI, HDF5, CUDA runtime, driver,
// NCCL, GPUs.
std::vector<std::pair<std::string, std::string>> library_versions();

}  // namespace st
