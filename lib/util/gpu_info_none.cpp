// GpuInfo for builds without CUDA.
#include "util/gpu_info.h"

namespace st {

GpuInfo query_gpu_info() {
  GpuInfo info;
  info.problem = "built without CUDA (ST_ENABLE_CUDA=OFF or no toolkit found)";
  return info;
}

}  // namespace st
