// A rank's CPU threads: the user's OMP_NUM_THREADS first, else its share of the node; and both
// libtorch and OpenBLAS compute with that many (OpenBLAS otherwise keeps the pool it sized as it
// loaded, every core, whatever libtorch uses).
#include <ATen/Parallel.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "util/cpu_threads.h"

namespace st {
namespace {

// Sets (or, with nullopt, unsets) an environment variable for one scope.
class ScopedVariable {
 public:
  ScopedVariable(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* before = std::getenv(name)) before_ = before;
    if (value) {
      setenv(name, value->c_str(), 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedVariable() {
    if (before_) {
      setenv(name_, before_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> before_;
};

int openblas_threads() {
  using GetThreads = int (*)();
  const auto get = reinterpret_cast<GetThreads>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads"));
  return get ? get() : -1;
}

TEST(CpuThreads, OmpNumThreadsIsTheUsersChoice) {
  ScopedVariable omp("OMP_NUM_THREADS", "3");
  EXPECT_EQ(cpu_threads_per_rank(1), 3);
  EXPECT_EQ(cpu_threads_per_rank(8), 3);
}

TEST(CpuThreads, WithoutAValidChoiceRanksShareTheCores) {
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ASSERT_EQ(sched_getaffinity(0, sizeof(allowed), &allowed), 0);
  const bool bound = CPU_COUNT(&allowed) < machine;
  for (const std::optional<std::string>& value : {std::optional<std::string>(), std::optional<std::string>("0"),
                                                 std::optional<std::string>("2x"), std::optional<std::string>("")}) {
    ScopedVariable omp("OMP_NUM_THREADS", value);
    EXPECT_EQ(cpu_threads_per_rank(1), bound ? CPU_COUNT(&allowed) : machine) << value.value_or("(unset)");
    EXPECT_EQ(cpu_threads_per_rank(machine * 2), bound ? CPU_COUNT(&allowed) : 1) << value.value_or("(unset)");
  }
}

TEST(CpuThreads, LibtorchAndOpenBlasComputeWithTheRanksThreads) {
  if (openblas_threads() < 0) GTEST_SKIP() << "the BLAS is not OpenBLAS";
  const int before_torch = at::get_num_threads();
  const int before_blas = openblas_threads();
  {
    ScopedVariable blas("OPENBLAS_NUM_THREADS", std::nullopt);
    use_cpu_threads(1);
    EXPECT_EQ(at::get_num_threads(), 1);
    EXPECT_EQ(openblas_threads(), 1);
    use_cpu_threads(2);
    EXPECT_EQ(at::get_num_threads(), 2);
    EXPECT_EQ(openblas_threads(), 2);
  }
  {
    // The user's OPENBLAS_NUM_THREADS stays OpenBLAS's.
    ScopedVariable blas("OPENBLAS_NUM_THREADS", "2");
    use_cpu_threads(1);
    EXPECT_EQ(at::get_num_threads(), 1);
    EXPECT_EQ(openblas_threads(), 2);
  }
  use_cpu_threads(before_torch);
  using SetThreads = void (*)(int);
  reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))(before_blas);
}

}  // namespace
}  // namespace st
