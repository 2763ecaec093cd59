// The checkpoint directory rules (complete vs interrupted saves, retention, resume specs), the
// manifest's round trip and refusals, and metrics.jsonl truncation on resume.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint_directory.h"
#include "ckpt/checkpoint_manifest.h"
#include "scratch_dir.h"
#include "train/train_checkpoints.h"
#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;
using CheckpointFilesTest = testing::ScratchDirTest;

void make_step(const fs::path& dir, int64_t step, bool complete) {
  const fs::path path = dir / step_directory_name(step);
  fs::create_directories(path);
  if (complete) std::ofstream(path / kCompleteMarker) << "step\n";
}

std::vector<int64_t> steps_in(const fs::path& dir) {
  std::vector<int64_t> steps;
  for (const auto& entry : list_complete_checkpoints(dir.string())) steps.push_back(entry.step);
  return steps;
}

TEST(CheckpointNames, AreZeroPadded) {
  EXPECT_EQ(step_directory_name(500), "step_00000500");
  EXPECT_EQ(rank_file_name(3), "rank_00003.h5");
}

TEST_F(CheckpointFilesTest, OnlyMarkedStepDirectoriesAreComplete) {
  make_step(dir_, 20, true);
  make_step(dir_, 5, true);
  make_step(dir_, 30, false);                              // renamed, retention cut short
  fs::create_directories(dir_ / "step_00000040.tmp");      // save interrupted
  std::ofstream(dir_ / "step_00000040.tmp" / kCompleteMarker) << "x";
  fs::create_directories(dir_ / "other");
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{5, 20}));
  EXPECT_EQ(remove_incomplete_checkpoints(dir_.string()), 2);
  EXPECT_FALSE(fs::exists(dir_ / "step_00000040.tmp"));
  EXPECT_FALSE(fs::exists(dir_ / "step_00000030"));
  EXPECT_TRUE(fs::exists(dir_ / "other"));
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{5, 20}));
}

TEST_F(CheckpointFilesTest, RetentionKeepsTheNewest) {
  for (int64_t step : {10, 20, 30, 40}) make_step(dir_, step, true);
  apply_retention(dir_.string(), 0);
  EXPECT_EQ(steps_in(dir_).size(), 4u) << "0 keeps all";
  apply_retention(dir_.string(), 2);
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{30, 40}));
  apply_retention(dir_.string(), 1);
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{40}));
}

TEST_F(CheckpointFilesTest, RetentionNeverDeletesTheCheckpointJustWritten) {
  // A save of step 10 next to newer steps of another timeline: by step it is the oldest.
  for (int64_t step : {10, 20, 30}) make_step(dir_, step, true);
  apply_retention(dir_.string(), 2, step_directory_name(10));
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{10, 30}));
  apply_retention(dir_.string(), 1, step_directory_name(10));
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{10}));
  make_step(dir_, 30, true);
  apply_retention(dir_.string(), 1, step_directory_name(30));
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{30}));
}

TEST_F(CheckpointFilesTest, NewerCheckpointsAreSetAsideWhenAnOlderOneIsResumed) {
  for (int64_t step : {10, 20, 30}) make_step(dir_, step, true);
  make_step(dir_, 35, false);
  fs::create_directories(dir_ / "step_00000040.tmp");
  point_latest_at(dir_.string(), step_directory_name(30));
  const SetAside aside = set_aside_newer_checkpoints(dir_.string(), 20, "20261124T120000Z");
  EXPECT_EQ(fs::path(aside.folder).filename(), "abandoned-20-20261124T120000Z");
  EXPECT_EQ(aside.moved, (std::vector<std::string>{"step_00000030", "step_00000035", "step_00000040.tmp"}));
  EXPECT_TRUE(fs::exists(fs::path(aside.folder) / "step_00000030" / kCompleteMarker));
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(fs::read_symlink(dir_ / "latest"), "step_00000020") << "latest names a complete checkpoint";
  EXPECT_EQ(fs::path(*resolve_resume("auto", dir_.string())).filename(), "step_00000020");
  EXPECT_TRUE(set_aside_newer_checkpoints(dir_.string(), 20, "later").folder.empty()) << "nothing newer left";
  EXPECT_EQ(checkpoint_step((dir_ / "step_00000020").string()), 20);
  EXPECT_FALSE(checkpoint_step(aside.folder));
}

TEST_F(CheckpointFilesTest, LatestLinkFollowsTheNewestSave) {
  make_step(dir_, 10, true);
  point_latest_at(dir_.string(), step_directory_name(10));
  make_step(dir_, 20, true);
  point_latest_at(dir_.string(), step_directory_name(20));
  EXPECT_EQ(fs::read_symlink(dir_ / "latest").string(), "step_00000020");
  EXPECT_EQ(steps_in(dir_), (std::vector<int64_t>{10, 20})) << "the link is not a checkpoint";
}

TEST_F(CheckpointFilesTest, ResumeSpecs) {
  EXPECT_FALSE(resolve_resume("", dir_.string()));
  EXPECT_FALSE(resolve_resume("auto", dir_.string())) << "auto without checkpoints starts fresh";
  EXPECT_FALSE(resolve_resume("auto", (dir_ / "absent").string()));
  make_step(dir_, 10, true);
  make_step(dir_, 20, true);
  make_step(dir_, 30, false);
  EXPECT_EQ(fs::path(*resolve_resume("auto", dir_.string())).filename(), "step_00000020");
  EXPECT_EQ(fs::path(*resolve_resume(dir_.string(), "unused")).filename(), "step_00000020");
  EXPECT_EQ(fs::path(*resolve_resume((dir_ / "step_00000010").string(), "unused")).filename(), "step_00000010");
  try {
    resolve_resume((dir_ / "step_00000030").string(), "unused");
    FAIL() << "an unmarked checkpoint was accepted";
  } catch (const CheckpointError& error) {
    EXPECT_NE(std::string(error.what()).find("no COMPLETE marker"), std::string::npos) << error.what();
  }
  EXPECT_THROW(resolve_resume((dir_ / "nowhere").string(), "unused"), CheckpointError);
  fs::create_directories(dir_ / "empty");
  EXPECT_THROW(resolve_resume((dir_ / "empty").string(), "unused"), CheckpointError);
}

CheckpointManifest sample_manifest() {
  CheckpointManifest m;
  m.progress = {500, 1000, 64, {2, 128}, 499, {1024.0, 1, 7, 3}};
  m.world_size = 4;
  m.units = {{"embedding", 1024}, {"layer.0", 4096}, {"head", 64}};
  m.model_config = {{"hidden_size", 64}, {"model_type", "llama"}};
  m.model_source = "preset debug (seed 42)";
  m.config = "[train]\nseed = 42\n";
  m.git_sha = "abc123";
  m.files = {{"rank_00000.h5", 100, 0xdeadbeef}, {"rank_00001.h5", 200, 0x1}};
  return m;
}

TEST_F(CheckpointFilesTest, ManifestRoundTrips) {
  const CheckpointManifest m = sample_manifest();
  std::ofstream(dir_ / kCheckpointManifestName) << format_checkpoint_manifest(m);
  const CheckpointManifest r = read_checkpoint_manifest(dir_.string());
  EXPECT_EQ(r.progress.step, 500);
  EXPECT_EQ(r.progress.total_steps, 1000);
  EXPECT_EQ(r.progress.global_batch, 64);
  EXPECT_EQ(r.progress.cursor, (SamplerCursor{2, 128}));
  EXPECT_EQ(r.progress.optimizer_steps, 499);
  EXPECT_EQ(r.progress.scaler.scale, 1024.0);
  EXPECT_EQ(r.progress.scaler.hysteresis_left, 1);
  EXPECT_EQ(r.progress.scaler.clean_steps, 7);
  EXPECT_EQ(r.progress.scaler.skipped, 3);
  EXPECT_EQ(r.world_size, 4);
  ASSERT_EQ(r.units.size(), 3u);
  EXPECT_EQ(r.units[1].name, "layer.0");
  EXPECT_EQ(r.units[1].numel, 4096);
  EXPECT_EQ(r.model_config, m.model_config);
  EXPECT_EQ(r.model_source, m.model_source);
  EXPECT_EQ(r.config, m.config);
  EXPECT_EQ(r.git_sha, "abc123");
  ASSERT_EQ(r.shard_count(), 2);
  EXPECT_EQ(r.files[0].crc32, 0xdeadbeefu);
  EXPECT_EQ(r.files[1].bytes, 200u);
  EXPECT_EQ(r.optimizer, OptimizerName::adamw);
  CheckpointManifest eight = m;
  eight.optimizer = OptimizerName::adamw8bit;
  std::ofstream(dir_ / kCheckpointManifestName, std::ios::trunc) << format_checkpoint_manifest(eight);
  EXPECT_EQ(read_checkpoint_manifest(dir_.string()).optimizer, OptimizerName::adamw8bit);
}

// Checkpoints from before optim.name hold fp32 moments.
TEST_F(CheckpointFilesTest, AManifestWithoutAnOptimizerIsAdamW) {
  CheckpointManifest m = sample_manifest();
  m.optimizer = OptimizerName::adamw8bit;
  nlohmann::json json = nlohmann::json::parse(format_checkpoint_manifest(m));
  json.erase("optimizer");
  std::ofstream(dir_ / kCheckpointManifestName) << json.dump();
  EXPECT_EQ(read_checkpoint_manifest(dir_.string()).optimizer, OptimizerName::adamw);
}

void expect_manifest_error(const fs::path& dir, const std::string& text, const std::string& expected) {
  std::ofstream(dir / kCheckpointManifestName, std::ios::trunc) << text;
  try {
    read_checkpoint_manifest(dir.string());
    FAIL() << "accepted: " << text.substr(0, 80);
  } catch (const CheckpointError& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;
  }
}

TEST_F(CheckpointFilesTest, BadManifestsAreNamed) {
  EXPECT_THROW(read_checkpoint_manifest((dir_ / "absent").string()), CheckpointError);
  expect_manifest_error(dir_, "{ not json", "not valid JSON");
  expect_manifest_error(dir_, "{\"format\": \"other\"}", "not a shardtune checkpoint");
  nlohmann::json json = nlohmann::json::parse(format_checkpoint_manifest(sample_manifest()));
  json["format_version"] = kCheckpointFormatVersion + 1;
  expect_manifest_error(dir_, json.dump(), "format_version " + std::to_string(kCheckpointFormatVersion + 1));
  json = nlohmann::json::parse(format_checkpoint_manifest(sample_manifest()));
  json["progress"].erase("sampler");
  expect_manifest_error(dir_, json.dump(), "'sampler' is missing");
  json = nlohmann::json::parse(format_checkpoint_manifest(sample_manifest()));
  json["files"][0]["crc32"] = "xyz";
  expect_manifest_error(dir_, json.dump(), "not hexadecimal");
  json = nlohmann::json::parse(format_checkpoint_manifest(sample_manifest()));
  json["progress"]["global_batch"] = -1;
  expect_manifest_error(dir_, json.dump(), "'global_batch' is out of range (-1)");
  json = nlohmann::json::parse(format_checkpoint_manifest(sample_manifest()));
  json["optimizer"] = "lion";
  expect_manifest_error(dir_, json.dump(), "field 'optimizer' is \"lion\", not one of adamw|adamw8bit");
}

TEST_F(CheckpointFilesTest, UnrecordedGlobalBatchReadsAsZero) {
  // 0 = not recorded: the resumed run then takes the global batch from its own config.
  CheckpointManifest m = sample_manifest();
  m.progress.global_batch = 0;
  std::ofstream(dir_ / kCheckpointManifestName) << format_checkpoint_manifest(m);
  EXPECT_EQ(read_checkpoint_manifest(dir_.string()).progress.global_batch, 0);
}

TEST_F(CheckpointFilesTest, MetricsAfterTheCheckpointAreDropped) {
  const fs::path path = dir_ / "metrics.jsonl";
  std::ofstream(path) << "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":2}\n{\"step\":2,\"eval/loss\":2}\n"
                         "{\"step\":3,\"loss\":3}\n{\"step\":4,\"lo";
  truncate_metrics_after(path.string(), 2);
  std::ifstream in(path);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(kept, "{\"step\":1,\"loss\":1}\n{\"step\":2,\"loss\":2}\n{\"step\":2,\"eval/loss\":2}\n");
}

}  // namespace
}  // namespace st
