// dist.backend resolution: auto falls back to mpi, explicit nccl without a GPU is refused.
#include <gtest/gtest.h>

#include "build_config.h"
#include "distributed/backend.h"
#include "util/errors.h"

namespace st {
namespace {

TEST(Backend, AutoPicksNcclOnlyWhenUsable) {
  EXPECT_EQ(resolve_backend(BackendChoice::automatic, ""), Backend::nccl);
  EXPECT_EQ(resolve_backend(BackendChoice::automatic, "rank 3: no GPU 3"), Backend::mpi);
  EXPECT_EQ(resolve_backend(BackendChoice::mpi, ""), Backend::mpi);
}

TEST(Backend, ExplicitNcclWithoutGpuIsAConfigErrorWithTheReason) {
  try {
    resolve_backend(BackendChoice::nccl, "rank 1: libtorch was built without CUDA");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find("dist.backend = nccl cannot be used: rank 1: libtorch was built "
                           "without CUDA. Set dist.backend = mpi"),
              std::string::npos)
        << message;
  }
}

TEST(Backend, TheNameTableReadsBothWays) {
  EXPECT_EQ(parse_enum<BackendChoice>("auto", "dist.backend"), BackendChoice::automatic);
  EXPECT_STREQ(enum_name(BackendChoice::nccl), "nccl");
  EXPECT_STREQ(enum_name(Backend::mpi), "mpi");
  try {
    parse_enum<BackendChoice>("gloo", "dist.backend");
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& error) {
    EXPECT_STREQ(error.what(), "dist.backend = 'gloo' is not one of auto|mpi|nccl");
  }
}

TEST(Backend, LocalProblemExplainsWhatIsMissing) {
  const std::string problem = local_nccl_problem(0);
  if (!ST_HAVE_CUDA) {
    EXPECT_NE(problem.find("no CUDA/NCCL backend"), std::string::npos) << problem;
  } else if (!ST_TORCH_CUDA) {
    EXPECT_EQ(problem, "libtorch was built without CUDA");
  }
  EXPECT_FALSE(local_nccl_problem(1 << 20).empty());
}

}  // namespace
}  // namespace st
