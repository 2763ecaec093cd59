// Sharded checkpoints across rank counts: a checkpoint saved by this world (sync and async)
// reads back into any shard count with every element in place (resharding), adamw8bit's coded
// moments too; a corrupt or
// missing rank file and another model are named; the parallel HF export holds exactly the
// masters (fp32) or their bf16 rounding, and loads back into shards with identical log-probs.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "ckpt/checkpoint_directory.h"
#include "ckpt/checkpoint_reader.h"
#include "ckpt/checkpoint_writer.h"
#include "ckpt/hf_export.h"
#include "distributed/string_gather.h"
#include "fsdp/fsdp_model.h"
#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/presets.h"
#include "mpi_test_main.h"
#include "util/dynamic_quant.h"
#include "util/errors.h"

namespace st {
namespace {

using namespace st::testing;
namespace fs = std::filesystem;

// A directory every rank of this job shares, named after rank 0's pid; removed afterwards.
class SharedDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string pid = all_gather_strings(world_communicator(), std::to_string(::getpid())).at(0);
    dir_ = fs::temp_directory_path() / ("st_ckpt_" + pid + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    if (rank() == 0) {
      fs::remove_all(dir_);
      fs::create_directories(dir_);
    }
    world_communicator().barrier();
  }
  void TearDown() override {
    world_communicator().barrier();
    if (rank() == 0) fs::remove_all(dir_);
  }
  static int rank() { return world_communicator().rank(); }
  static int size() { return world_communicator().size(); }

  fs::path dir_;
};

// The value every element of the checkpoint must hold, whatever the geometry.
at::Tensor expected_values(StateKind kind, size_t unit_index, const UnitLayout& unit, int shard) {
  const int64_t first = unit.shard_offset(shard);
  const at::Tensor element = at::arange(first, first + unit.shard_numel, at::kDouble);
  const double sign = kind == StateKind::exp_avg ? -1.0 : 1.0;
  const double scale = kind == StateKind::exp_avg_sq ? 1e-3 : 1e-4;
  at::Tensor values = (sign * (element * scale + static_cast<double>(unit_index))).to(at::kFloat);
  return values.masked_fill(element >= static_cast<double>(unit.numel), 0.0);
}

constexpr StateKind kAdamWKinds[] = {StateKind::master, StateKind::exp_avg, StateKind::exp_avg_sq};

ShardState expected_state(const std::vector<UnitLayout>& units, int shard) {
  ShardState state;
  for (StateKind kind : kAdamWKinds) {
    for (size_t u = 0; u < units.size(); ++u) state.of(kind).push_back(expected_values(kind, u, units[u], shard));
  }
  return state;
}

ModelConfig test_model() { return preset_config("debug"); }

// Saves this world's shards of the expected state at `step`; returns the checkpoint directory.
fs::path save_expected(const fs::path& dir, int64_t step, bool async) {
  const std::vector<UnitLayout> units = build_unit_layouts(test_model(), world_communicator().size());
  CkptOptions options;
  options.async = async;
  CheckpointIdentity identity{to_hf_config_json(test_model()), "test model", units, "[train]\n"};
  CheckpointWriter writer(dir.string(), options, identity, world_communicator(),
                          {world_communicator().rank(), world_communicator().size(), true});
  TrainProgress progress;
  progress.step = step;
  progress.cursor = {1, 24};
  writer.save(progress, expected_state(units, world_communicator().rank()), {{1, 2, 3}, {}});
  while (writer.in_flight()) writer.poll();
  EXPECT_EQ(writer.last_committed_step(), step);
  return dir / step_directory_name(step);
}

TEST_F(SharedDirTest, ReadsBackIntoAnyShardCount) {
  for (bool async : {false, true}) {
    const fs::path checkpoint = save_expected(dir_ / (async ? "async" : "sync"), 7, async);
    ASSERT_TRUE(fs::exists(checkpoint / kCompleteMarker));
    ASSERT_FALSE(fs::exists(checkpoint.string() + ".tmp"));
    EXPECT_EQ(fs::read_symlink(checkpoint.parent_path() / "latest").string(), checkpoint.filename().string());
    for (int shards : {1, 2, 3, 5, size()}) {
      const std::vector<UnitLayout> units = build_unit_layouts(test_model(), shards);
      for (int shard = 0; shard < shards; ++shard) {
        const ShardState state = host_shard_state(units, true);
        const LoadedCheckpoint loaded = load_checkpoint(checkpoint.string(), units, shard, world_communicator(), state);
        EXPECT_EQ(loaded.manifest.progress.step, 7);
        EXPECT_EQ(loaded.manifest.progress.cursor, (SamplerCursor{1, 24}));
        EXPECT_EQ(loaded.manifest.shard_count(), size());
        const ShardState expected = expected_state(units, shard);
        for (StateKind kind : kAdamWKinds) {
          for (size_t u = 0; u < units.size(); ++u) {
            ASSERT_TRUE(at::equal(state.of(kind)[u], expected.of(kind)[u]))
                << state_kind_name(kind) << " of " << units[u].name << ", shard " << shard << " of " << shards;
          }
        }
        EXPECT_EQ(loaded.rng.cpu, (shards == size() ? std::vector<uint8_t>{1, 2, 3} : std::vector<uint8_t>{}));
      }
    }
  }
}

// Device tensors take the staging path; a strided fp64 view does too and runs on any host.
TEST_F(SharedDirTest, ReadsOnlyTheKindsAskedIntoAnyTensor) {
  const fs::path checkpoint = save_expected(dir_, 4, false);
  const std::vector<UnitLayout> units = build_unit_layouts(test_model(), size());
  ShardState into;
  for (const UnitLayout& unit : units) {
    into.of(StateKind::master).push_back(at::zeros({unit.shard_numel, 2}, at::kDouble).select(1, 1));
  }
  load_checkpoint(checkpoint.string(), units, rank(), world_communicator(), into);
  EXPECT_TRUE(into.of(StateKind::exp_avg).empty() && into.of(StateKind::exp_avg_sq).empty());
  const ShardState expected = expected_state(units, rank());
  for (size_t u = 0; u < units.size(); ++u) {
    EXPECT_TRUE(at::equal(into.of(StateKind::master)[u].to(at::kFloat), expected.of(StateKind::master)[u])) << units[u].name;
  }
}

// adamw8bit's state, whatever the geometry: codes by element (padding: the code of 0),
// absmax by block (blocks wholly past the unit: 0).
at::Tensor expected_8bit(StateKind kind, const UnitLayout& unit, int shard) {
  const StoredRange range = stored_range(unit, shard, kind);
  const at::Tensor index = at::arange(range.first, range.first + range.count, at::kLong);
  const int64_t stride = state_kind_stride(kind);
  const bool real_m = kind == StateKind::exp_avg_code;
  if (stride == 1) {
    const uint8_t zero = zero_code(real_m ? DynamicMap::signed_values : DynamicMap::unsigned_values);
    return index.remainder(real_m ? 251 : 241).to(at::kByte).masked_fill(index >= unit.numel, zero);
  }
  const double sign = kind == StateKind::exp_avg_absmax ? 1.0 : 0.5;
  return (sign * (index.to(at::kDouble) + 1.0)).to(at::kFloat).masked_fill(index * stride >= unit.numel, 0.0);
}

constexpr StateKind k8bitKinds[] = {StateKind::exp_avg_code, StateKind::exp_avg_absmax, StateKind::exp_avg_sq_code,
                                    StateKind::exp_avg_sq_absmax};

// 8-bit states saved by this world (shards of whole blocks) read back into any block-aligned
// shard count, and for adamw's unaligned geometry too (the absmax of every block a shard
// overlaps: what decoding needs), the padding holding the code of 0.
TEST_F(SharedDirTest, EightBitStatesReadBackIntoAnyShardCount) {
  const ModelConfig config = test_model();
  const std::vector<UnitLayout> units = build_unit_layouts(config, size(), 256);
  CheckpointIdentity identity{to_hf_config_json(config), "test model", units, "[train]\n", nullptr,
                              OptimizerName::adamw8bit};
  CheckpointWriter writer(dir_.string(), CkptOptions{}, identity, world_communicator(), {rank(), size(), true});
  ShardState state = host_shard_state(units, true, OptimizerName::adamw8bit, rank());
  for (StateKind kind : k8bitKinds) {
    for (size_t u = 0; u < units.size(); ++u) state.of(kind)[u] = expected_8bit(kind, units[u], rank());
  }
  writer.save(TrainProgress{}, state, {});
  const fs::path checkpoint = dir_ / step_directory_name(0);
  EXPECT_EQ(read_checkpoint_manifest(checkpoint.string()).optimizer, OptimizerName::adamw8bit);
  for (int64_t multiple : {int64_t{256}, int64_t{1}}) {
    for (int shards : {1, 2, 3, 5}) {
      const std::vector<UnitLayout> layout = build_unit_layouts(config, shards, multiple);
      for (int shard = 0; shard < shards; ++shard) {
        const ShardState read = host_shard_state(layout, true, OptimizerName::adamw8bit, shard);
        load_checkpoint(checkpoint.string(), layout, shard, world_communicator(), read);
        for (StateKind kind : k8bitKinds) {
          for (size_t u = 0; u < layout.size(); ++u) {
            ASSERT_TRUE(at::equal(read.of(kind)[u], expected_8bit(kind, layout[u], shard)))
                << state_kind_name(kind) << " of " << layout[u].name << ", shard " << shard << " of " << shards
                << ", multiple " << multiple;
          }
        }
      }
    }
  }
}

std::string load_error(const fs::path& checkpoint) {
  const std::vector<UnitLayout> units = build_unit_layouts(test_model(), world_communicator().size());
  try {
    load_checkpoint(checkpoint.string(), units, world_communicator().rank(), world_communicator(),
                    host_shard_state(units, true));
  } catch (const CheckpointError& error) {
    return error.what();
  }
  return "";
}

TEST_F(SharedDirTest, CorruptOrMissingRankFilesAreNamed) {
  const fs::path checkpoint = save_expected(dir_, 3, false);
  const fs::path victim = checkpoint / rank_file_name(size() - 1);
  if (rank() == 0) {
    std::fstream file(victim, std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(static_cast<std::streamoff>(fs::file_size(victim) / 2));
    file.put('\x5a');
  }
  world_communicator().barrier();
  std::string message = load_error(checkpoint);
  EXPECT_NE(message.find(victim.string()), std::string::npos) << message;
  EXPECT_NE(message.find("CRC-32"), std::string::npos) << message;
  world_communicator().barrier();
  if (rank() == 0) fs::remove(victim);
  world_communicator().barrier();
  message = load_error(checkpoint);
  EXPECT_NE(message.find(victim.string() + " is missing"), std::string::npos) << message;
}

TEST_F(SharedDirTest, AnotherModelIsRefused) {
  const fs::path checkpoint = save_expected(dir_, 1, false);
  const CheckpointManifest manifest = read_checkpoint_manifest(checkpoint.string());
  ModelConfig other = test_model();
  other.num_hidden_layers += 1;
  try {
    check_checkpoint_model(manifest, checkpoint.string(), to_hf_config_json(other),
                           build_unit_layouts(other, size()));
    FAIL() << "a checkpoint of another model was accepted";
  } catch (const CheckpointError& error) {
    EXPECT_NE(std::string(error.what()).find("num_hidden_layers"), std::string::npos) << error.what();
  }
  EXPECT_NO_THROW(check_checkpoint_model(manifest, checkpoint.string(), to_hf_config_json(test_model()),
                                         build_unit_layouts(test_model(), size())));
}

TEST_F(SharedDirTest, ExportHoldsTheMastersAndScoresTheSame) {
  const ModelConfig config = test_model();
  const std::vector<UnitLayout> units = build_unit_layouts(config, size());
  ModelShards trained = init_model_shards(config, 11, size(), rank());
  for (size_t u = 0; u < units.size(); ++u) {  // "trained": not the init any more; padding stays 0
    const int64_t valid = std::clamp<int64_t>(units[u].numel - units[u].shard_offset(rank()), 0, units[u].shard_numel);
    trained.masters[u].narrow(0, 0, valid).add_(0.01);
  }
  for (at::ScalarType dtype : {at::kFloat, at::kBFloat16}) {
    HfExportOptions options;
    options.dtype = dtype;
    options.max_shard_bytes = 100'000;  // several files and an index
    const fs::path output = dir_ / (dtype == at::kFloat ? "fp32" : "bf16");
    const HfExportResult result =
        export_hf_model(output.string(), config, units, trained.masters, {rank(), size(), true}, world_communicator(), options);
    EXPECT_GT(result.files, 1);
    EXPECT_TRUE(fs::exists(output / "model.safetensors.index.json"));
    EXPECT_FALSE(fs::exists(output.string() + ".tmp"));
    const ModelShards loaded = load_model_shards(output.string(), "", 0, size(), rank());
    for (size_t u = 0; u < units.size(); ++u) {
      const at::Tensor expected = trained.masters[u].to(dtype).to(at::kFloat);
      ASSERT_TRUE(at::equal(loaded.masters[u], expected)) << units[u].name;
    }
    if (dtype != at::kFloat) continue;
    ShardingGroups groups = test_groups(Sharding::full);
    FsdpModelOptions model_options;
    model_options.frozen = true;
    FsdpModel in_training(config, units, groups, trained.masters, model_options);
    FsdpModel from_export(config, units, groups, loaded.masters, model_options);
    const at::Tensor ids = at::randint(0, config.vocab_size, {2, 12}, at::kLong);
    const at::Tensor targets = ids.roll(-1, 1);
    EXPECT_TRUE(at::equal(in_training.sequence_logps(ids, targets), from_export.sequence_logps(ids, targets)));
  }
}

}  // namespace
}  // namespace st
