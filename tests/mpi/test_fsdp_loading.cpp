// Loading a Hugging Face checkpoint into FSDP shards: every rank reads only its own element
// ranges, so no rank holds the whole model. The checkpoint (~124 MB fp32) is larger than a
// rank's share on 2+ ranks; each rank's peak resident-memory growth while loading is measured
// and printed, and must stay near its share. The loaded shards equal the written weights.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <malloc.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fsdp/shard_source.h"
#include "fsdp_test_support.h"
#include "hf/model_weights.h"
#include "hf/param_table.h"
#include "hf/presets.h"
#include "hf/safetensors_writer.h"
#include "mpi_test_main.h"
#include "util/host_memory.h"
#include "util/log.h"

namespace st {
namespace {

using namespace st::testing;
namespace fs = std::filesystem;

ModelConfig loading_config() {
  ModelConfig config = preset_config("debug");
  config.vocab_size = 32000;
  config.hidden_size = 384;
  config.intermediate_size = 1024;
  config.num_hidden_layers = 4;
  config.num_attention_heads = 6;
  config.num_key_value_heads = 2;
  config.head_dim = 64;
  return config;
}

// Rank 0 writes the checkpoint into a directory every rank can read; the weights' memory is
// returned to the kernel before anyone measures.
std::string write_checkpoint(const ModelConfig& config, uint64_t seed) {
  const std::string directory = fs::temp_directory_path() / ("st_loading_" + std::to_string(::getppid()));
  if (world_communicator().rank() == 0) {
    fs::remove_all(directory);
    fs::create_directories(directory);
    std::ofstream(directory + "/config.json") << to_hf_config_json(config).dump(2);
    std::vector<std::pair<std::string, at::Tensor>> tensors;
    {
      const TensorMap weights = init_preset_weights(config, seed, at::kFloat);
      for (const auto& spec : all_params(config)) tensors.emplace_back(spec.name, weights.at(spec.name));
    }
    write_safetensors_checkpoint(directory, tensors, 64ull << 20);  // two files
  }
  world_communicator().barrier();
  return directory;
}

TEST(FsdpLoading, EachRankHoldsOnlyItsShareWhileLoading) {
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);  // freed blocks leave the resident set at once
  const ModelConfig config = loading_config();
  const std::string directory = write_checkpoint(config, 21);
  const int rank = world_communicator().rank(), ranks = world_communicator().size();
  const auto model_bytes = static_cast<double>(config.parameter_count() * 4);

  if (!reset_peak_resident()) GTEST_SKIP() << "/proc/self/clear_refs is not writable here";
  const int64_t baseline = resident_bytes();
  ModelShards shards = load_model_shards(directory, "", 0, ranks, rank);
  const auto growth = static_cast<double>(peak_resident_bytes() - baseline);
  int64_t owned = 0;
  for (const auto& master : shards.masters) owned += static_cast<int64_t>(master.nbytes());
  warn_all("loading ", model_bytes / 1e6, " MB checkpoint on ", ranks, " ranks: rank ", rank, " owns ",
           owned / 1e6, " MB, peak resident growth ", growth / 1e6, " MB (", 100.0 * growth / model_bytes,
           "% of the model)");
  // The share itself, plus one 8 MiB copy block of file pages, headers and allocator slack.
  EXPECT_LT(growth, 1.05 * static_cast<double>(owned) + 16e6) << "rank " << rank;
  if (ranks > 1) {
    EXPECT_LT(growth, 0.75 * model_bytes) << "rank " << rank << " held most of the model";
  }

  for (size_t u = 0; u < shards.units.size(); u += shards.units.size() - 1) {  // first and last unit
    const at::Tensor expected = expected_shard(shards.units[u], rank, [&](const ParamSlot& slot) {
      return init_parameter(slot.spec, 21);
    });
    EXPECT_EQ(relative_max_diff(shards.masters[u], expected), 0.0) << shards.units[u].name;
  }
  world_communicator().barrier();
  if (rank == 0) fs::remove_all(directory);
}

}  // namespace
}  // namespace st
