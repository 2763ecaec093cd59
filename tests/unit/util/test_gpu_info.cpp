// Version formatting as CUDA and NCCL encode their numbers; the build reports what it compiled.
#include <gtest/gtest.h>

#include "build_config.h"
#include "util/build_info.h"
#include "util/gpu_info.h"

namespace st {
namespace {

TEST(GpuInfo, FormatsCudaVersions) {
  EXPECT_EQ(format_cuda_version(13000), "13.0");
  EXPECT_EQ(format_cuda_version(12040), "12.4");
  EXPECT_EQ(format_cuda_version(0), "none");
}

TEST(GpuInfo, FormatsNcclVersions) {
  EXPECT_EQ(format_nccl_version(22809), "2.28.9");
  EXPECT_EQ(format_nccl_version(2708), "2.7.8");  // pre-2.9 encoding
  EXPECT_EQ(format_nccl_version(0), "none");
}

TEST(GpuInfo, ReportsWhetherCudaWasCompiled) {
  const GpuInfo info = query_gpu_info();
  EXPECT_EQ(info.compiled, ST_HAVE_CUDA == 1);
  if (info.compiled) {
    EXPECT_GT(info.cuda_runtime_version, 0);
    EXPECT_GT(info.nccl_version, 0);
  }
  if (info.devices.empty()) {
    EXPECT_FALSE(info.problem.empty());
  }
}

TEST(BuildInfo, VersionsNameEveryLibrary) {
  const auto versions = library_versions();
  std::vector<std::string> names;
  for (const auto& entry : versions) names.push_back(entry.name);
  const std::vector<std::string> expected = {"shardtune",   "libtorch", "MPI",  "HDF5", "CUDA runtime",
                                             "CUDA driver", "NCCL",     "GPUs", "BLAS"};
  EXPECT_EQ(names, expected);
  EXPECT_EQ(versions[0].value.rfind(ST_VERSION "+", 0), 0u) << versions[0].value;
  EXPECT_NE(versions[3].value.find('.'), std::string::npos);
}

}  // namespace
}  // namespace st
