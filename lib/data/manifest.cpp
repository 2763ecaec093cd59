#include "data/manifest.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "data/pair_shard.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/json_integer.h"

namespace st {

using nlohmann::json;

uint64_t Manifest::total_pairs() const {
  uint64_t total = 0;
  for (const auto& shard : shards) total += shard.pairs;
  return total;
}

uint64_t Manifest::total_tokens() const {
  uint64_t total = 0;
  for (const auto& shard : shards) total += shard.tokens;
  return total;
}

void write_manifest(const std::string& directory, const Manifest& manifest) {
  json shards = json::array();
  for (const auto& shard : manifest.shards) {
    shards.push_back({{"file", shard.file}, {"pairs", shard.pairs}, {"tokens", shard.tokens},
                      {"crc32", crc32_hex(shard.crc32)}});
  }
  json out = {{"format", kPairFormatName},   {"format_version", kPairFormatVersion},
                    {"kind", enum_name(manifest.kind)}, {"vocab_size", manifest.vocab_size},
                    {"split", manifest.split},     {"source", manifest.source},
                    {"total_pairs", manifest.total_pairs()}, {"total_tokens", manifest.total_tokens()},
                    {"shards", shards}};
  if (manifest.cutoff_len > 0) out["cutoff_len"] = manifest.cutoff_len;
  if (manifest.reference) {
    out["reference"] = {{"model", manifest.reference->model}, {"cutoff_len", manifest.reference->cutoff_len},
                        {"dtype", manifest.reference->dtype}, {"fingerprint", manifest.reference->fingerprint},
                        {"template", manifest.reference->chat_template}};
    if (manifest.reference->partner_group > 0) out["reference"]["partner_group"] = manifest.reference->partner_group;
  }
  write_file_atomically(directory + "/" + kManifestName, out.dump(2) + "\n");
}

Manifest read_manifest(const std::string& directory) {
  const std::string path = directory + "/" + kManifestName;
  std::ifstream file(path);
  if (!file) {
    throw DataError(path + ": cannot open; data.train / data.val must be a directory written by "
                           "`shardtune prep` or `shardtune synth`");
  }
  json in;
  try {
    in = json::parse(file);
  } catch (const json::exception& error) {
    throw DataError(path + ": not valid JSON (" + error.what() + ")");
  }
  auto fail = [&](const std::string& what) { return DataError(path + ": " + what); };
  auto integer = [&](const json& object, const char* key, auto kind) {
    using T = decltype(kind);
    const std::optional<T> value = json_integer<T>(object.at(key));
    if (!value) {
      throw fail("field '" + std::string(key) + "' is " + object.at(key).dump() + ", not " +
                 (std::is_unsigned_v<T> ? "a non-negative integer" : "an integer"));
    }
    return *value;
  };
  try {
    if (in.at("format") != kPairFormatName) throw fail("field 'format' is not " + std::string(kPairFormatName));
    if (integer(in, "format_version", int64_t{}) > kPairFormatVersion) {
      throw fail("field 'format_version' is newer than this build reads (" +
                 std::to_string(kPairFormatVersion) + "); upgrade shardtune");
    }
    Manifest manifest;
    if (!find_enum(in.at("kind").get<std::string>(), manifest.kind)) throw fail("field 'kind' must be one of " + enum_choices<PairKind>());
    manifest.vocab_size = integer(in, "vocab_size", int64_t{});
    if (manifest.vocab_size <= 0) throw fail("field 'vocab_size' is " + std::to_string(manifest.vocab_size) + ", not positive");
    manifest.split = in.value("split", "");
    manifest.source = in.value("source", "");
    const json& shards = in.at("shards");
    if (!shards.is_array()) throw fail("field 'shards' must be a list");
    for (const json& shard : shards) {
      const auto file = shard.at("file").get<std::string>();
      if (!is_plain_file_name(file)) {
        throw fail("shards file '" + file + "' is not a file name in the dataset's directory");
      }
      const auto crc = parse_crc32_hex(shard.at("crc32").get<std::string>());
      if (!crc) {
        throw fail("shards crc32 '" + shard.at("crc32").get<std::string>() + "' is not hexadecimal (a CRC-32: 1 to 8 hex digits)");
      }
      manifest.shards.push_back({file, integer(shard, "pairs", uint64_t{}), integer(shard, "tokens", uint64_t{}), *crc});
    }
    if (in.contains("cutoff_len")) manifest.cutoff_len = integer(in, "cutoff_len", int64_t{});
    if (in.contains("reference")) {
      const json& reference = in.at("reference");
      manifest.reference = ReferenceInfo{reference.at("model").get<std::string>(),
                                         integer(reference, "cutoff_len", int64_t{}),
                                         reference.at("dtype").get<std::string>(),
                                         reference.value("fingerprint", std::string()),
                                         reference.value("template", std::string()),
                                         reference.contains("partner_group") ? integer(reference, "partner_group", int64_t{})
                                                                         : int64_t{0}};
    }
    return manifest;
  } catch (const json::exception& error) {
    throw fail(std::string("malformed (") + error.what() + ")");
  }
}

}  // namespace st
