// Safetensors reader and writer: round trips (single file, sharded + index, element ranges)
// and every malformed input named by file and tensor.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hf/safetensors_checkpoint.h"
#include "hf/safetensors_file.h"
#include "hf/safetensors_writer.h"
#include "scratch_dir.h"
#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public st::testing::ScratchDirTest {
 protected:
  std::vector<std::pair<std::string, at::Tensor>> sample() const {
    at::manual_seed(11);  // the same tensors on every call
    return {{"a.weight", at::arange(597 * 43, at::kFloat).view({597, 43})},
            {"b.bias", at::randn({7}).to(at::kBFloat16)},
            {"c.half", at::randn({3, 5}).to(at::kHalf)},
            {"empty", at::empty({0, 4})}};
  }

  // Writes raw bytes: an 8-byte length, the header text, then `data_bytes` zero bytes.
  std::string raw_file(const std::string& header, size_t data_bytes, int64_t length = -1) const {
    const std::string path = (dir_ / "raw.safetensors").string();
    std::ofstream out(path, std::ios::binary);
    const uint64_t n = length >= 0 ? static_cast<uint64_t>(length) : header.size();
    for (int i = 0; i < 8; ++i) out.put(static_cast<char>((n >> (8 * i)) & 0xff));
    out << header << std::string(data_bytes, '\0');
    return path;
  }

  std::string error_of(const std::string& path) const {
    try {
      SafetensorsFile file(path);
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }
};

TEST_F(SafetensorsTest, SingleFileRoundTrip) {
  write_safetensors_checkpoint(dir_.string(), sample(), 1ull << 30);
  ASSERT_TRUE(fs::exists(dir_ / "model.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ / "model.safetensors.index.json"));
  const SafetensorsFile file((dir_ / "model.safetensors").string());
  EXPECT_EQ(file.metadata().at("format"), "pt");
  for (const auto& [name, tensor] : sample()) {
    const at::Tensor read = file.read(name);
    EXPECT_EQ(read.scalar_type(), tensor.scalar_type()) << name;
    EXPECT_EQ(read.sizes(), tensor.sizes()) << name;
    EXPECT_TRUE(read.equal(tensor)) << name;
  }
  // The data section starts 8-byte aligned.
  std::ifstream in((dir_ / "model.safetensors").string(), std::ios::binary);
  uint64_t header = 0;
  in.read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u);
}

TEST_F(SafetensorsTest, ShardedAtTheSizeLimitWithIndex) {
  // a.weight alone is 102,684 bytes, over the 100,000-byte limit: a file of its own.
  write_safetensors_checkpoint(dir_.string(), sample(), 100000);
  ASSERT_TRUE(fs::exists(dir_ / "model-00001-of-00002.safetensors"));
  ASSERT_TRUE(fs::exists(dir_ / "model-00002-of-00002.safetensors"));
  std::ifstream index_file((dir_ / "model.safetensors.index.json").string());
  const auto index = nlohmann::json::parse(index_file);
  EXPECT_EQ(index["weight_map"]["a.weight"], "model-00001-of-00002.safetensors");
  EXPECT_EQ(index["weight_map"]["c.half"], "model-00002-of-00002.safetensors");
  EXPECT_EQ(index["metadata"]["total_size"], 597 * 43 * 4 + 7 * 2 + 15 * 2);
  const SafetensorsCheckpoint checkpoint(dir_.string());
  EXPECT_EQ(checkpoint.names().size(), 4u);
  for (const auto& [name, tensor] : sample()) EXPECT_TRUE(checkpoint.read(name).equal(tensor));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_NE(entry.path().extension(), ".tmp") << "temporary file left behind";
  }
}

TEST_F(SafetensorsTest, ElementRangesReadOnlyThatSlice) {
  write_safetensors_checkpoint(dir_.string(), sample(), 1ull << 30);
  const SafetensorsCheckpoint checkpoint(dir_.string());
  const at::Tensor full = sample()[0].second.flatten();
  for (int64_t first : {0, 1, 596, 25000}) {
    const int64_t count = std::min<int64_t>(671, full.numel() - first);
    EXPECT_TRUE(checkpoint.read_range("a.weight", first, count).equal(full.narrow(0, first, count)));
  }
  EXPECT_EQ(checkpoint.read_range("a.weight", 5, 0).numel(), 0);
  EXPECT_THROW(checkpoint.read_range("a.weight", full.numel() - 3, 4), ModelError);
}

TEST_F(SafetensorsTest, LayoutOffsetsAllowWritingTensorsInAnyOrder) {
  const std::vector<TensorSpec> specs = {{"x", at::kFloat, {3, 4}}, {"y", at::kBFloat16, {5}}};
  const SafetensorsLayout layout(specs);
  const std::string path = (dir_ / "model.safetensors").string();
  create_safetensors_file(path, layout);
  const at::Tensor y = at::randn({5}).to(at::kBFloat16);
  const at::Tensor x = at::randn({3, 4});
  write_tensor_at(path, layout.offset_of("y"), y);  // the later tensor first
  write_tensor_at(path, layout.offset_of("x"), x);
  EXPECT_EQ(fs::file_size(path), layout.file_size());
  const SafetensorsFile file(path);
  EXPECT_TRUE(file.read("x").equal(x));
  EXPECT_TRUE(file.read("y").equal(y));
}

TEST_F(SafetensorsTest, MalformedFilesAreNamed) {
  const std::string ok_entry = R"("t": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]})";
  struct Case {
    std::string header;
    size_t data;
    int64_t length;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {"{" + ok_entry + "}", 0, -1, "data_offsets [0, 16] fall outside the 0-byte data section"},
      {"{" + ok_entry + "}", 16, 1ll << 40, "header length 1099511627776 exceeds"},
      {"{not json", 16, -1, "header is not valid JSON"},
      {R"({"t": {"dtype": "I64", "shape": [2], "data_offsets": [0, 16]}})", 16, -1,
       "tensor 't' has dtype \"I64\"; shardtune reads F32, BF16 and F16"},
      {R"({"t": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", 16, -1,
       "tensor 't': shape and dtype need 12 bytes but data_offsets span 16"},
      {R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]},
           "u": {"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}})", 16, -1,
       "tensors 't' and 'u' overlap"},
      {R"({"t": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 16]}})", 16, -1,
       "shape must hold non-negative integers"},
      {R"({"t": {"dtype": "F32"}})", 16, -1, "header entry needs dtype, shape and data_offsets"},
  };
  for (const Case& c : cases) {
    const std::string path = raw_file(c.header, c.data, c.length);
    const std::string message = error_of(path);
    EXPECT_NE(message.find(path), std::string::npos) << message;
    EXPECT_NE(message.find(c.expected), std::string::npos) << message << "\nexpected: " << c.expected;
  }
  const std::string tiny = (dir_ / "tiny.safetensors").string();
  std::ofstream(tiny) << "abc";
  EXPECT_NE(error_of(tiny).find("truncated (3 bytes"), std::string::npos);
  EXPECT_NE(error_of((dir_ / "missing.safetensors").string()).find("cannot open"), std::string::npos);
}

TEST_F(SafetensorsTest, TruncatedDataIsCaughtByTheOffsets) {
  write_safetensors_checkpoint(dir_.string(), sample(), 1ull << 30);
  const fs::path path = dir_ / "model.safetensors";
  fs::resize_file(path, fs::file_size(path) - 10);
  EXPECT_NE(error_of(path.string()).find("fall outside"), std::string::npos);
}

TEST_F(SafetensorsTest, CheckpointDirectoryErrors) {
  try {
    SafetensorsCheckpoint checkpoint(dir_.string());
    FAIL() << "empty directory accepted";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("holds neither model.safetensors nor"), std::string::npos);
  }
  write_safetensors_checkpoint(dir_.string(), sample(), 100000);
  fs::remove(dir_ / "model-00002-of-00002.safetensors");
  try {
    SafetensorsCheckpoint checkpoint(dir_.string());
    FAIL() << "missing shard accepted";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("lists 'model-00002-of-00002.safetensors', which does not exist"),
              std::string::npos) << error.what();
  }
}

TEST_F(SafetensorsTest, IndexNamesOnlyFilesInItsDirectory) {
  // A hub index must not make the reader map files elsewhere (the file exists, one level up).
  write_safetensors_checkpoint(dir_.string(), sample(), 100000);
  const std::string outside = dir_.filename().string() + "_outside.safetensors";
  fs::copy_file(dir_ / "model-00001-of-00002.safetensors", dir_.parent_path() / outside,
                fs::copy_options::overwrite_existing);
  std::ofstream(dir_ / "model.safetensors.index.json") << R"({"weight_map": {"a.weight": "../)" + outside + "\"}}";
  try {
    SafetensorsCheckpoint checkpoint(dir_.string());
    FAIL() << "an index entry outside the directory accepted";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("weight_map['a.weight'] = \"../" + outside + "\" must be a file name"),
              std::string::npos) << error.what();
  }
  fs::remove(dir_.parent_path() / outside);
  // A name longer than the file system allows is a missing file, not a filesystem_error.
  const std::string long_name(300, 'x');
  std::ofstream(dir_ / "model.safetensors.index.json", std::ios::trunc)
      << R"({"weight_map": {"a.weight": ")" + long_name + "\"}}";
  try {
    SafetensorsCheckpoint checkpoint(dir_.string());
    FAIL() << "a 300-character shard name accepted";
  } catch (const ModelError& error) {
    EXPECT_NE(std::string(error.what()).find("which does not exist in"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace st
