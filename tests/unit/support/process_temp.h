// A path under GoogleTest's temp dir that is this process's own: ctest runs every case as its
// own process, in parallel, so fixed names there race.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace st::testing {

inline std::string process_temp_path(const std::string& name) {
  return ::testing::TempDir() + "/" + std::to_string(::getpid()) + "_" + name;
}

}  // namespace st::testing
