// TensorBoard event files: the record framing (CRC-32C against its published check value), and
// the logdir across sessions: a fresh run starts over, a resumed one cuts the earlier files back
// to its step (also their torn tail) and appends a file of its own. tests/e2e/tensorboard_check.py
// reads the events back with independent code.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "scratch_dir.h"
#include "train/tensorboard_writer.h"

namespace st {
namespace {

namespace fs = std::filesystem;
using TensorboardWriterTest = testing::ScratchDirTest;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files{fs::directory_iterator(dir), fs::directory_iterator()};
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TensorboardFraming, MaskedCrc32cOfTheCheckString) {
  const uint32_t crc = 0xE3069283u;  // CRC-32C("123456789"), the published check value
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST_F(TensorboardWriterTest, ResumeCutsEarlierFilesBackAndAppendsItsOwn) {
  const std::string logdir = (dir_ / "tb").string();
  {
    TensorboardWriter first(logdir, 0);
    first.add_text("config", "a = 1\n", 0);
    for (int64_t step = 1; step <= 6; ++step) first.add_record({{"step", step}, {"loss", 1.0 / step}});
    first.add_record({{"note", "no step: skipped"}});
  }
  ASSERT_EQ(files_in(logdir).size(), 1u);
  const fs::path earlier = files_in(logdir)[0];
  EXPECT_EQ(read_event_records(earlier.string()).size(), 8u);  // version, config, 6 records
  std::ofstream(earlier, std::ios::app) << "torn";              // a crash mid-record
  EXPECT_EQ(read_event_records(earlier.string()).size(), 8u);

  TensorboardWriter resumed(logdir, 4);
  resumed.add_record({{"step", 5}, {"loss", 0.2}, {"eval", {{"loss", 0.3}}}});
  const auto files = files_in(logdir);
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(read_event_records(earlier.string()).size(), 6u);  // steps 5, 6 and the torn tail gone
  EXPECT_EQ(fs::file_size(earlier), [&] {
    size_t bytes = 0;
    for (const std::string& record : read_event_records(earlier.string())) bytes += record.size() + 16;
    return bytes;
  }());
  EXPECT_EQ(read_event_records(resumed.path()).size(), 2u);  // its version and step 5

  TensorboardWriter fresh(logdir, 0);
  ASSERT_EQ(files_in(logdir).size(), 1u);
  EXPECT_EQ(files_in(logdir)[0].string(), fresh.path());
}

}  // namespace
}  // namespace st
