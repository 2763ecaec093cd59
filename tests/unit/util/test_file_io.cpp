// file_crc32 equals zlib's CRC-32 of the whole content whatever the size (large files are
// checksummed in parallel ranges and joined), and write_file_atomically replaces a file whole.
#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <string>
#include <vector>

#include "scratch_dir.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {
namespace {

using FileIo = testing::ScratchDirTest;

uint32_t crc_of(const std::vector<char>& bytes) {
  return static_cast<uint32_t>(crc32(crc32(0L, Z_NULL, 0), reinterpret_cast<const Bytef*>(bytes.data()),
                                     static_cast<uInt>(bytes.size())));
}

TEST_F(FileIo, Crc32MatchesZlibForSmallAndParallelSizes) {
  // 0 and 1 byte, one 8 MiB block +- 1, and sizes split over 2 and 4 threads with ragged ends.
  for (size_t size : {size_t{0}, size_t{1}, (size_t{8} << 20) - 1, (size_t{8} << 20) + 1, (size_t{130} << 20) + 7,
                      (size_t{300} << 20) + 12345}) {
    std::vector<char> bytes(size);
    uint32_t state = 12345;
    for (char& byte : bytes) byte = static_cast<char>((state = state * 1103515245u + 12345u) >> 24);
    const std::string path = (dir_ / "data.bin").string();
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    EXPECT_EQ(file_crc32(path), crc_of(bytes)) << size << " bytes";
  }
}

TEST_F(FileIo, Crc32OfAMissingFileNamesIt) {
  const std::string path = (dir_ / "absent.h5").string();
  try {
    file_crc32(path);
    FAIL() << "no error";
  } catch (const IoError& error) {
    EXPECT_NE(std::string(error.what()).find(path), std::string::npos) << error.what();
  }
}

// The weights fingerprint: a file within twice the end size is covered whole; a larger one by
// its ends only (a change there shows, one in the middle does not: documented, and cheap).
TEST_F(FileIo, EndsCrc32CoversSmallFilesWholeAndLargeOnesAtTheEnds) {
  const std::string path = (dir_ / "weights.bin").string();
  std::string bytes(10000, 'a');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(file_ends_crc32(path, 5000), file_crc32(path));
  EXPECT_EQ(file_ends_crc32(path, 1 << 20), file_crc32(path));
  const uint32_t ends = file_ends_crc32(path, 1000);
  EXPECT_NE(ends, file_crc32(path));
  bytes[5000] ^= 1;
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(file_ends_crc32(path, 1000), ends) << "the middle is not covered";
  bytes[9999] ^= 1;
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_NE(file_ends_crc32(path, 1000), ends) << "the last bytes are";
}

TEST_F(FileIo, WriteFileAtomicallyReplacesTheWholeFile) {
  const std::string path = (dir_ / "manifest.json").string();
  write_file_atomically(path, "a much longer first version\n");
  write_file_atomically(path, "second\n");
  std::ifstream in(path);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "second\n");
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

}  // namespace
}  // namespace st
