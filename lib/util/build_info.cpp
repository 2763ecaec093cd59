// Collects version strings from the libraries themselves (run time, not compile time, where
// they tell: a mismatched shared library on one node must show up).
#include "util/build_info.h"

#include <dlfcn.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstdlib>
#include <sstream>

#include "build_config.h"
#include "util/blas_kernels.h"
#include "util/check.h"
#include "util/gpu_info.h"
#include "util/torch_compat.h"

namespace st {

std::string shardtune_version() { return std::string(ST_VERSION) + "+" + git_sha(); }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int length = 0;
  ST_CHECK_MPI(MPI_Get_library_version(text, &length));
  std::string version(text, static_cast<size_t>(length));
  // Open MPI appends package, ident and date after commas; the first field is the version.
  const auto cut = version.find_first_of(",\n");
  if (cut != std::string::npos) version.resize(cut);
  return version;
}

std::string hdf5_version() {
  unsigned major = 0, minor = 0, release = 0;
  ST_CHECK_HDF5(H5get_libversion(&major, &minor, &release));
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
}

std::string blas_version() {
  // OpenBLAS's own entry points, looked up at run time: libtorch links whichever BLAS the
  // system's libblas.so.3 is.
  using Text = char* (*)();
  const auto config = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_config"));
  const std::string core = blas_core();
  if (!config || core.empty()) return "unknown (not OpenBLAS)";
  std::istringstream words(config());  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Zen MAX_THREADS=64"
  std::string name, version;
  words >> name >> version;
  // A process shardtune restarted on better kernels (util/blas_kernels.h) says which it replaced.
  const char* replaced = std::getenv(kBlasGenericCoreVariable);
  const std::string choice = replaced && *replaced && core != replaced ? "; shardtune's choice over " + std::string(replaced) : "";
  return name + " " + version + " (core " + core + choice + ")";
}

std::string blas_core() {
  using Text = char* (*)();
  const auto core = reinterpret_cast<Text>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return core ? core() : "";
}

std::vector<LibraryVersion> library_versions() {
  const GpuInfo gpu = query_gpu_info();
  std::string devices;
  for (const auto& name : gpu.devices) devices += (devices.empty() ? "" : ", ") + name;
  if (devices.empty()) devices = "none (" + gpu.problem + ")";
  return {
      {"shardtune", shardtune_version()},
      {"libtorch", compat::torch_version()},
      {"MPI", mpi_library_version()},
      {"HDF5", hdf5_version()},
      {"CUDA runtime", gpu.compiled ? format_cuda_version(gpu.cuda_runtime_version) : "not built"},
      {"CUDA driver", gpu.compiled ? format_cuda_version(gpu.cuda_driver_version) : "not built"},
      {"NCCL", gpu.compiled ? format_nccl_version(gpu.nccl_version) : "not built"},
      {"GPUs", devices, false},
      {"BLAS", blas_version(), false},
  };
}

}  // namespace st
