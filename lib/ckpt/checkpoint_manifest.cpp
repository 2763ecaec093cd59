#include "ckpt/checkpoint_manifest.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "util/errors.h"
#include "util/file_io.h"
#include "util/json_integer.h"

namespace st {
namespace {

using nlohmann::json;

// Reads field `key` of `object`, naming the manifest and the field when it is missing or mistyped.
template <typename T>
T field(const json& object, const std::string& key, const std::string& where) {
  if (!object.contains(key)) throw CheckpointError(where + ": field '" + key + "' is missing");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (const std::optional<T> value = json_integer<T>(object.at(key))) return *value;
    throw CheckpointError(where + ": field '" + key + "' is " + object.at(key).dump() + ", not an integer in [" +
                          std::to_string(std::numeric_limits<T>::min()) + ", " +
                          std::to_string(std::numeric_limits<T>::max()) + "]");
  }
  try {
    return object.at(key).get<T>();
  } catch (const json::exception&) {
    throw CheckpointError(where + ": field '" + key + "' has the wrong type (" + object.at(key).dump() + ")");
  }
}

}  // namespace

std::string format_checkpoint_manifest(const CheckpointManifest& m) {
  json units = json::array();
  for (const auto& unit : m.units) units.push_back({{"name", unit.name}, {"numel", unit.numel}});
  json files = json::array();
  for (const auto& file : m.files) {
    files.push_back({{"file", file.name}, {"bytes", file.bytes}, {"crc32", crc32_hex(file.crc32)}});
  }
  const TrainProgress& p = m.progress;
  const json progress = {
      {"step", p.step},
      {"total_steps", p.total_steps},
      {"global_batch", p.global_batch},
      {"sampler", {{"epoch", p.cursor.epoch}, {"consumed", p.cursor.consumed}}},
      {"optimizer_steps", p.optimizer_steps},
      {"loss_scaler",
       {{"scale", p.scaler.scale},
        {"hysteresis_left", p.scaler.hysteresis_left},
        {"clean_steps", p.scaler.clean_steps},
        {"skipped", p.scaler.skipped}}}};
  json out = {{"format", "shardtune.checkpoint"},
              {"format_version", m.format_version},
              {"progress", progress},
              {"world_size", m.world_size},
              {"optimizer", enum_name(m.optimizer)},
              {"shard_count", m.shard_count()},
              {"units", units},
              {"model", {{"source", m.model_source}, {"config", m.model_config}}},
              {"git_sha", m.git_sha},
              {"files", files},
              {"config", m.config}};
  if (!m.adapter.is_null()) out["adapter"] = m.adapter;
  return out.dump(2) + "\n";
}

CheckpointManifest read_checkpoint_manifest(const std::string& directory) {
  const std::string path = (std::filesystem::path(directory) / kCheckpointManifestName).string();
  std::ifstream in(path);
  if (!in) throw CheckpointError(path + ": missing or unreadable; is " + directory + " a shardtune checkpoint (step_*)?");
  json root;
  try {
    in >> root;
  } catch (const json::exception& error) {
    throw CheckpointError(path + ": not valid JSON (" + error.what() + ")");
  }
  if (!root.is_object() || root.value("format", json()) != "shardtune.checkpoint") {
    throw CheckpointError(path + ": field 'format' is not \"shardtune.checkpoint\"; not a shardtune checkpoint");
  }
  CheckpointManifest m;
  m.format_version = field<int>(root, "format_version", path);
  if (m.format_version != kCheckpointFormatVersion) {
    throw CheckpointError(path + ": format_version " + std::to_string(m.format_version) + " is not the " +
                          std::to_string(kCheckpointFormatVersion) + " this shardtune reads; resume it with "
                          "the shardtune version that wrote it (git_sha " + root.value("git_sha", json("?")).dump() + ")");
  }
  const json progress = field<json>(root, "progress", path);
  const std::string where = path + " progress";
  TrainProgress& p = m.progress;
  p.step = field<int64_t>(progress, "step", where);
  p.total_steps = field<int64_t>(progress, "total_steps", where);
  p.global_batch = field<int64_t>(progress, "global_batch", where);
  const json sampler = field<json>(progress, "sampler", where);
  p.cursor.epoch = field<uint64_t>(sampler, "epoch", where + ".sampler");
  p.cursor.consumed = field<uint64_t>(sampler, "consumed", where + ".sampler");
  p.optimizer_steps = field<int64_t>(progress, "optimizer_steps", where);
  const json scaler = field<json>(progress, "loss_scaler", where);
  p.scaler.scale = field<double>(scaler, "scale", where + ".loss_scaler");
  p.scaler.hysteresis_left = field<int64_t>(scaler, "hysteresis_left", where + ".loss_scaler");
  p.scaler.clean_steps = field<int64_t>(scaler, "clean_steps", where + ".loss_scaler");
  p.scaler.skipped = field<int64_t>(scaler, "skipped", where + ".loss_scaler");

  for (const auto& [key, value] : {std::pair<const char*, int64_t>{"step", p.step}, {"total_steps", p.total_steps},
                                   {"optimizer_steps", p.optimizer_steps}, {"global_batch", p.global_batch}}) {
    if (value < 0) throw CheckpointError(where + ": field '" + key + "' is out of range (" + progress.at(key).dump() + ")");
  }
  m.world_size = field<int>(root, "world_size", path);
  if (m.world_size < 1) throw CheckpointError(path + ": field 'world_size' is " + std::to_string(m.world_size) + ", not positive");
  if (root.contains("optimizer")) {
    const std::string name = field<std::string>(root, "optimizer", path);
    if (!find_enum(name, m.optimizer)) {
      throw CheckpointError(path + ": field 'optimizer' is \"" + name + "\", not one of " +
                            enum_choices<OptimizerName>() + "; written by a newer shardtune?");
    }
  }
  for (const json& unit : field<json>(root, "units", path)) {
    m.units.push_back({field<std::string>(unit, "name", path + " units"), field<int64_t>(unit, "numel", path + " units")});
    if (m.units.back().numel < 0) throw CheckpointError(path + ": units '" + m.units.back().name + "' has a negative numel");
  }
  const json model = field<json>(root, "model", path);
  m.model_source = field<std::string>(model, "source", path + " model");
  m.model_config = field<json>(model, "config", path + " model");
  m.config = field<std::string>(root, "config", path);
  m.git_sha = field<std::string>(root, "git_sha", path);
  if (root.contains("adapter")) m.adapter = field<json>(root, "adapter", path);
  for (const json& file : field<json>(root, "files", path)) {
    CheckpointFile entry;
    entry.name = field<std::string>(file, "file", path + " files");
    entry.bytes = field<uint64_t>(file, "bytes", path + " files");
    if (!is_plain_file_name(entry.name)) {
      throw CheckpointError(path + ": files file '" + entry.name + "' is not a file name in the checkpoint's directory");
    }
    const std::string crc = field<std::string>(file, "crc32", path + " files");
    const auto parsed = parse_crc32_hex(crc);
    if (!parsed) throw CheckpointError(path + ": files crc32 '" + crc + "' is not hexadecimal (a CRC-32: 1 to 8 hex digits)");
    entry.crc32 = *parsed;
    m.files.push_back(entry);
  }
  if (m.files.empty() || m.units.empty()) throw CheckpointError(path + ": lists no rank files or no units");
  if (field<int>(root, "shard_count", path) != m.shard_count()) {
    throw CheckpointError(path + ": shard_count differs from the number of files listed");
  }
  return m;
}

}  // namespace st
