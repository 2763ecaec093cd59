// What the CUDA runtime, driver and NCCL report on this host; all zeros/empty in builds without
// CUDA. Used by --version, `shardtune env` and the startup consistency check.
#pragma once

#include <string>
#include <vector>

namespace st {

struct GpuInfo {
  bool compiled = false;           // CUDA/NCCL code is part of this build
  int cuda_runtime_version = 0;    // e.g. 13000 for 13.0
  int cuda_driver_version = 0;     // 0 when no driver is installed
  int nccl_version = 0;            // e.g. 22809 for 2.28.9
  std::vector<std::string> devices;  // names of visible GPUs
  std::string problem;             // why no GPU is usable, if none is
};

GpuInfo query_gpu_info();
// "13.0", "2.28.9", "none"
std::string format_cuda_version(int version);
std::string format_nccl_version(int version);

}  // namespace st
