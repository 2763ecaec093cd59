#include "ckpt/checkpoint_reader.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include "distributed/value_gather.h"
#include "util/dynamic_quant.h"
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

// What a shard holds past its unit's elements: zero moments (8-bit: the code of 0, which keeps
// a partly filled block's absmax what the real elements make it).
double padding_value(StateKind kind) {
  if (kind == StateKind::exp_avg_code) return zero_code(DynamicMap::signed_values);
  if (kind == StateKind::exp_avg_sq_code) return zero_code(DynamicMap::unsigned_values);
  return 0.0;
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

StoredRange stored_range(const UnitLayout& unit, int shard, StateKind kind) {
  const int64_t stride = state_kind_stride(kind), first = unit.shard_offset(shard);
  const int64_t end = first + unit.shard_numel;
  return {first / stride, (end + stride - 1) / stride - first / stride};
}

ShardState host_shard_state(const std::vector<UnitLayout>& units, bool with_moments, OptimizerName optimizer, int shard) {
  std::vector<StateKind> kinds = {StateKind::master};
  if (with_moments) {
    const auto moments = optimizer == OptimizerName::adamw8bit
                             ? std::vector<StateKind>{StateKind::exp_avg_code, StateKind::exp_avg_absmax,
                                                      StateKind::exp_avg_sq_code, StateKind::exp_avg_sq_absmax}
                             : std::vector<StateKind>{StateKind::exp_avg, StateKind::exp_avg_sq};
    kinds.insert(kinds.end(), moments.begin(), moments.end());
  }
  ShardState state;
  for (StateKind kind : kinds) {
    for (const UnitLayout& unit : units) {
      at::Tensor tensor = at::empty({stored_range(unit, shard, kind).count}, state_kind_dtype(kind));
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
  const int64_t old_multiple = shard_multiple_of(manifest.optimizer);
  at::Tensor staging;  // for destinations that are not contiguous host tensors of the kind's dtype
  for (StateKind kind : kAllStateKinds) {
    const std::vector<at::Tensor>& destinations = into.of(kind);
    if (destinations.empty()) continue;
    if (destinations.size() != units.size()) throw CheckpointError("checkpoint: one destination per unit expected");
    const at::ScalarType dtype = state_kind_dtype(kind);
    const int64_t stride = state_kind_stride(kind);
    for (size_t u = 0; u < units.size(); ++u) {
      const UnitLayout& unit = units[u];
      // In stored values: [first, last) of the unit is this shard's, the rest of it padding.
      const StoredRange range = stored_range(unit, shard, kind);
      const int64_t shard_values = range.count;
      at::Tensor destination = destinations[u];
      if (destination.numel() != shard_values) throw CheckpointError("checkpoint: destination of the wrong size");
      const bool direct = destination.is_cpu() && destination.is_contiguous() && destination.scalar_type() == dtype;
      if (!direct && (staging.numel() < shard_values || staging.scalar_type() != dtype)) {
        staging = at::empty({shard_values}, dtype);
      }
      at::Tensor out = direct ? destination : staging.narrow(0, 0, shard_values);
      const int64_t first = range.first;
      const int64_t last = std::max(first, std::min(first + shard_values, (unit.numel + stride - 1) / stride));
      out.narrow(0, last - first, shard_values - (last - first)).fill_(padding_value(kind));
      const int64_t old_shard_values = shard_numel_of(unit.numel, old_count, old_multiple) / stride;
      char* base = static_cast<char*>(out.data_ptr());
      for (int64_t at_value = first; at_value < last;) {
        const int64_t old_shard = at_value / old_shard_values;
        const int64_t old_end = std::min(last, (old_shard + 1) * old_shard_values);
        reader(old_shard).read(kind, unit.name, at_value - old_shard * old_shard_values, old_end - at_value,
                               base + (at_value - first) * out.element_size());
        at_value = old_end;
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
