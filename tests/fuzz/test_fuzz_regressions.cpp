// The fuzz targets on the inputs of earlier findings: each file under regressions/<target>/
// (fixed since, docs/testing.md "Fuzzing") gets the refusal its <file>.expect names (a part
// of the message, or "accepted"); and every target has seeds in corpus/<target>/, at least one
// of which it accepts, so a campaign starts from inputs that reach past the first check.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz_target.h"

namespace st::fuzz {
namespace {
namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

Refusal run(const std::string& target, const std::string& bytes) {
  return targets().at(target)(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

TEST(FuzzRegressions, EachInputGetsTheRefusalItsExpectFileNames) {
  int inputs = 0;
  for (const auto& directory : fs::directory_iterator(fs::path(ST_FUZZ_DIR) / "regressions")) {
    const std::string target = directory.path().filename().string();
    ASSERT_EQ(targets().count(target), 1u) << directory.path() << " names no fuzz target";
    for (const auto& input : fs::directory_iterator(directory.path())) {
      if (input.path().extension() == ".expect") continue;
      const fs::path expect_path = input.path().string() + ".expect";
      ASSERT_TRUE(fs::exists(expect_path)) << input.path() << " has no .expect file";
      std::string expected = read_file(expect_path);
      while (!expected.empty() && (expected.back() == '\n' || expected.back() == '\r')) expected.pop_back();
      const Refusal refusal = run(target, read_file(input.path()));
      if (expected == "accepted") {
        EXPECT_FALSE(refusal.has_value()) << input.path() << " is refused: " << *refusal;
      } else {
        ASSERT_TRUE(refusal.has_value()) << input.path() << " is accepted; expected a refusal with: " << expected;
        EXPECT_NE(refusal->find(expected), std::string::npos) << input.path() << ": " << *refusal;
      }
      ++inputs;
    }
  }
  EXPECT_GT(inputs, 0);
}

TEST(FuzzCorpus, EveryTargetAcceptsOneOfItsSeeds) {
  for (const auto& [target, function] : targets()) {
    const fs::path seeds = fs::path(ST_FUZZ_DIR) / "corpus" / target;
    ASSERT_TRUE(fs::is_directory(seeds)) << target << " has no corpus/" << target;
    int accepted = 0;
    for (const auto& seed : fs::directory_iterator(seeds)) accepted += !run(target, read_file(seed.path())).has_value();
    EXPECT_GT(accepted, 0) << target << " refuses every seed in " << seeds;
  }
}

}  // namespace
}  // namespace st::fuzz
