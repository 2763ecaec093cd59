#include "ckpt/checkpoint_reader.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "distributed/value_gather.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/host_memory.h"

namespace st {
namespace {

namespace fs = std::filesystem;

enum FileProblem { kFileOk = 0, kFileMissing = 1, kFileSize = 2, kFileChecksum = 3 };

FileProblem inspect_file(const fs::path& path, const CheckpointFile& expected) {
  std::error_code error;
  const auto size = fs::file_size(path, error);
  if (error) return kFileMissing;
  if (size != expected.bytes) return kFileSize;
  return file_crc32(path.string()) == expected.crc32 ? kFileOk : kFileChecksum;
}

std::string describe_problem(FileProblem problem, const std::string& directory, const CheckpointFile& file) {
  const std::string path = (fs::path(directory) / file.name).string();
  const std::string what = problem == kFileMissing ? "is missing"
                           : problem == kFileSize  ? "does not have the " + std::to_string(file.bytes) +
                                                        " bytes manifest.json lists (truncated?)"
                                                   : "fails its CRC-32 check (manifest.json: " + crc32_hex(file.crc32) +
                                                        "; the file is corrupt)";
  return "checkpoint " + directory + ": rank file " + path + " " + what +
         "; resume from an earlier checkpoint (train.resume = <ckpt.dir>/step_...)";
}

// Collective: each rank checks files rank, rank + size, ...; all throw the same error for the
// first bad file.
void verify_files(const CheckpointManifest& manifest, const std::string& directory, Communicator& world) {
  double first_bad = -1.0, problem = kFileOk;
  for (size_t i = static_cast<size_t>(world.rank()); i < manifest.files.size(); i += static_cast<size_t>(world.size())) {
    const FileProblem found = inspect_file(fs::path(directory) / manifest.files[i].name, manifest.files[i]);
    if (found != kFileOk) {
      first_bad = static_cast<double>(i);
      problem = found;
      break;
    }
  }
  const std::vector<double> all = all_gather_values(world, {first_bad, problem});
  for (size_t rank = 0; rank < all.size() / 2; ++rank) {
    if (all[2 * rank] >= 0.0 && (first_bad < 0.0 || all[2 * rank] < first_bad)) {
      first_bad = all[2 * rank];
      problem = all[2 * rank + 1];
    }
  }
  if (first_bad >= 0.0) {
    throw CheckpointError(describe_problem(static_cast<FileProblem>(static_cast<int>(problem)), directory,
                                           manifest.files[static_cast<size_t>(first_bad)]));
  }
}

}  // namespace

void check_checkpoint_model(const CheckpointManifest& manifest, const std::string& directory,
                            const nlohmann::json& model_config, const std::vector<UnitLayout>& units,
                            const nlohmann::json& adapter) {
  if (manifest.adapter.is_null() != adapter.is_null()) {
    const bool theirs_adapter = !manifest.adapter.is_null();
    const std::string method = theirs_adapter ? manifest.adapter.value("method", "lora") : "full";
    const std::string run = method == "qlora" ? "QLoRA run (adapters only)" : "LoRA run (adapters only)";
    throw CheckpointError("checkpoint " + directory + " was written by a " +
                          (theirs_adapter ? run : "run that trained every weight") +
                          "; resume it with train.method = " + method);
  }
  if (!adapter.is_null()) {
    for (const auto& [key, value] : adapter.items()) {
      // Where the base was read from may move (base_fingerprint is compared); dropout may change.
      if (key == "base" || key == "dropout") continue;
      const auto theirs = manifest.adapter.find(key);
      const std::string there = theirs == manifest.adapter.end() ? "absent" : theirs->dump();
      if (there == value.dump()) continue;
      throw CheckpointError("checkpoint " + directory + ": its adapters' " + key + " is " + there + " there and " +
                            value.dump() + " here; resume with the base model and [lora] settings it was trained "
                            "with (manifest.json \"adapter\")");
    }
  }
  const std::string prefix = "checkpoint " + directory + " was written for another model (" + manifest.model_source + ")";
  for (const auto& [key, value] : model_config.items()) {
    const auto theirs = manifest.model_config.find(key);
    const std::string there = theirs == manifest.model_config.end() ? "absent" : theirs->dump();
    if (there != value.dump()) {
      throw CheckpointError(prefix + ": config.json " + key + " is " + there + " there and " + value.dump() +
                            " here; resume with the model.path / model.preset it was trained from");
    }
  }
  bool same_units = manifest.units.size() == units.size();
  for (size_t u = 0; same_units && u < units.size(); ++u) {
    same_units = manifest.units[u].name == units[u].name && manifest.units[u].numel == units[u].numel;
  }
  if (!same_units) throw CheckpointError(prefix + ": its parameter units differ from this model's");
}

ShardState host_shard_state(const std::vector<UnitLayout>& units, bool with_moments) {
  ShardState state;
  for (StateKind kind : kAllStateKinds) {
    if (kind != StateKind::master && !with_moments) continue;
    for (const UnitLayout& unit : units) {
      at::Tensor tensor = at::empty({unit.shard_numel}, at::kFloat);
      advise_huge_pages(tensor.data_ptr(), tensor.nbytes());  // a fault per 4 KiB page was half of a load
      state.of(kind).push_back(tensor);
    }
  }
  return state;
}

LoadedCheckpoint load_checkpoint(const std::string& directory, const std::vector<UnitLayout>& units, int shard,
                                 Communicator& world, const ShardState& into) {
  LoadedCheckpoint loaded;
  loaded.manifest = read_checkpoint_manifest(directory);
  const CheckpointManifest& manifest = loaded.manifest;
  if (manifest.units.size() != units.size()) {
    throw CheckpointError("checkpoint " + directory + ": " + std::to_string(manifest.units.size()) +
                          " units, this model has " + std::to_string(units.size()));
  }
  verify_files(manifest, directory, world);

  const int64_t old_count = manifest.shard_count();
  std::map<int64_t, std::unique_ptr<RankFileReader>> readers;
  const auto reader = [&](int64_t old_shard) -> RankFileReader& {
    auto& slot = readers[old_shard];
    if (!slot) {
      slot = std::make_unique<RankFileReader>(
          (fs::path(directory) / manifest.files[static_cast<size_t>(old_shard)].name).string());
    }
    return *slot;
  };
  at::Tensor staging;  // for destinations that are not contiguous fp32 host memory
  for (StateKind kind : kAllStateKinds) {
    const std::vector<at::Tensor>& destinations = into.of(kind);
    if (destinations.empty()) continue;
    if (destinations.size() != units.size()) throw CheckpointError("checkpoint: one destination per unit expected");
    for (size_t u = 0; u < units.size(); ++u) {
      const UnitLayout& unit = units[u];
      at::Tensor destination = destinations[u];
      if (destination.numel() != unit.shard_numel) throw CheckpointError("checkpoint: destination of the wrong size");
      const bool direct = destination.is_cpu() && destination.is_contiguous() && destination.scalar_type() == at::kFloat;
      if (!direct && staging.numel() < unit.shard_numel) staging = at::empty({unit.shard_numel}, at::kFloat);
      at::Tensor out = direct ? destination : staging.narrow(0, 0, unit.shard_numel);
      const int64_t first = unit.shard_offset(shard);
      const int64_t last = std::max(first, std::min(first + unit.shard_numel, unit.numel));
      out.narrow(0, last - first, unit.shard_numel - (last - first)).zero_();  // padding past numel
      const int64_t old_shard_numel = (unit.numel + old_count - 1) / old_count;
      for (int64_t at_element = first; at_element < last;) {
        const int64_t old_shard = at_element / old_shard_numel;
        const int64_t old_end = std::min(last, (old_shard + 1) * old_shard_numel);
        reader(old_shard).read(kind, unit.name, at_element - old_shard * old_shard_numel, old_end - at_element,
                               out.data_ptr<float>() + (at_element - first));
        at_element = old_end;
      }
      if (!direct) destination.copy_(out);
    }
  }
  if (old_count == static_cast<int64_t>(units.empty() ? 0 : units[0].padded_numel / units[0].shard_numel)) {
    loaded.rng = reader(shard).rng();
  }
  return loaded;
}

}  // namespace st
