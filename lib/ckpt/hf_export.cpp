#include "ckpt/hf_export.h"

#include <ATen/ATen.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "hf/expert_checkpoint.h"
#include "hf/safetensors_writer.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/host_memory.h"
#include "util/timer.h"

namespace st {
namespace {

namespace fs = std::filesystem;

// Files of a base model directory that belong with the weights.
constexpr const char* kCompanionFiles[] = {"generation_config.json", "tokenizer.json", "tokenizer_config.json",
                                           "special_tokens_map.json", "tokenizer.model", "vocab.json",
                                           "merges.txt", "chat_template.jinja", "added_tokens.json"};

TorchDtype torch_dtype_of(at::ScalarType dtype) { return dtype == at::kFloat ? TorchDtype::float32 : TorchDtype::bfloat16; }

// config.json: the base model's own (every field kept; an image-text model's text_config) or the
// one the config describes; the fields of the head a run trained (a reward model's class, labels
// and pad id) are the run's.
// `wrapped`: the export keeps the base's image-text layout, and with it the wrapper's config.json
// (its text_config's dtype the export's).
nlohmann::json export_config_json(const ModelConfig& config, const HfExportOptions& options, bool wrapped_layout) {
  const nlohmann::json described = to_hf_config_json(config);
  nlohmann::json json = described;
  const fs::path base = fs::path(options.base_model_dir) / "config.json";
  if (!options.base_model_dir.empty() && fs::exists(base)) {
    std::ifstream in(base);
    json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (json.is_discarded()) throw ModelError(base.string() + ": not valid JSON");
    if (wrapped_layout) {
      json["torch_dtype"] = enum_name(torch_dtype_of(options.dtype));
      if (json.contains("text_config") && json.at("text_config").is_object()) {
        json["text_config"]["torch_dtype"] = json["torch_dtype"];
        json["text_config"].erase("dtype");
      }
      json.erase("dtype");
      return json;
    }
    const bool named = json.contains("model_type") && json.at("model_type").is_string();
    const bool wrapped = named && multimodal_wrapper(json.at("model_type").get<std::string>()) != nullptr;
    if (wrapped && json.contains("text_config") && json.at("text_config").is_object()) {  // the language model alone
      json = json.at("text_config");
      json["model_type"] = described["model_type"];
      for (const auto& [key, value] : described.items()) {  // what it left to the wrapper or the defaults
        if (!json.contains(key)) json[key] = value;
      }
    }
    for (const char* key : {"architectures", "id2label", "label2id", "pad_token_id"}) {
      if (described.contains(key)) json[key] = described[key];
    }
  }
  json["torch_dtype"] = enum_name(torch_dtype_of(options.dtype));
  return json;
}

// Rank 0: the directory with every file at its final size, headers and side files in place.
void prepare_output(const fs::path& temporary, const ModelConfig& config, const ShardedLayout& layout,
                    const HfExportOptions& options, bool wrapped_layout) {
  fs::remove_all(temporary);
  fs::create_directories(temporary);
  for (size_t i = 0; i < layout.files.size(); ++i) {
    create_safetensors_file((temporary / layout.file_names[i]).string(), layout.files[i]);
  }
  if (layout.has_index()) {
    write_file_atomically((temporary / "model.safetensors.index.json").string(), layout.index_json().dump(2) + "\n");
  }
  write_file_atomically((temporary / "config.json").string(),
                        export_config_json(config, options, wrapped_layout).dump(2) + "\n");
  for (const char* name : kCompanionFiles) {
    const fs::path source = fs::path(options.base_model_dir) / name;
    if (!options.base_model_dir.empty() && fs::exists(source)) fs::copy_file(source, temporary / name);
  }
}

}  // namespace

std::vector<TensorSpec> export_specs(const std::vector<UnitLayout>& units, at::ScalarType dtype) {
  std::vector<TensorSpec> specs;
  for (const UnitLayout& unit : units) {
    for (const ParamSlot& slot : unit.params) specs.push_back({slot.spec.name, dtype, slot.spec.shape});
  }
  return specs;
}

at::ScalarType export_scalar_type(ExportDtype dtype) { return dtype == ExportDtype::fp32 ? at::kFloat : at::kBFloat16; }

namespace {

// The base's tensors beside its language model, copied as stored (rank 0).
void copy_through(const WrapperLayout& wrapped, const std::string& base_dir, const fs::path& temporary,
                  const ShardedLayout& layout) {
  const SafetensorsCheckpoint base(base_dir);
  for (const TensorSpec& spec : wrapped.copied) {
    const size_t file = layout.file_of.at(spec.name);
    const fs::path path = temporary / layout.file_names[file];
    write_tensor_at(path.string(), layout.files[file].offset_of(spec.name), base.read(spec.name).contiguous());
  }
}

}  // namespace

HfExportResult export_hf_model(const std::string& output, const ModelConfig& config,
                               const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& masters,
                               const ShardPlace& place, Communicator& world, const HfExportOptions& options) {
  const Timer timer;
  const fs::path final_path = output;
  const fs::path temporary = output + ".tmp";
  // An image-text base whose exports keep its layout: the text model under its names, beside
  // what else it holds (a reward model's export is the text model's class alone).
  const std::optional<WrapperLayout> wrapped =
      config.head == ModelHead::lm ? wrapper_layout(options.base_model_dir) : std::nullopt;
  const auto export_name = [&](const std::string& name) { return wrapped ? wrapped->wrapped_name(name) : name; };
  std::vector<TensorSpec> specs = export_specs(units, options.dtype);
  const size_t trained_specs = specs.size();
  for (TensorSpec& spec : specs) spec.name = export_name(spec.name);
  if (wrapped) specs.insert(specs.end(), wrapped->copied.begin(), wrapped->copied.end());
  const ShardedLayout layout = plan_sharded_layout(specs, options.max_shard_bytes);
  if (world.rank() == 0) {
    if (fs::exists(final_path) && !options.replace) {
      throw ConfigError("export: " + output + " exists; choose another output or allow replacing it");
    }
    prepare_output(temporary, config, layout, options, wrapped.has_value());
    if (wrapped) copy_through(*wrapped, options.base_model_dir, temporary, layout);
  }
  world.barrier();

  std::set<size_t> touched;
  at::Tensor staging;  // reused for conversions: a fresh buffer per piece costs a page fault per 4 KiB
  if (place.writes) {
    for (size_t u = 0; u < units.size(); ++u) {
      const UnitLayout& unit = units[u];
      const at::Tensor shard = masters.at(u).to(at::kCPU);
      for (const ParamSlot& slot : unit.params) {
        const SlotOverlap piece = overlap(slot, unit.shard_offset(place.shard), unit.shard_numel);
        if (piece.length == 0) continue;
        const std::string name = export_name(slot.spec.name);
        const size_t file = layout.file_of.at(name);
        at::Tensor converted = shard.narrow(0, piece.range_offset, piece.length);
        if (converted.scalar_type() != options.dtype) {
          if (staging.numel() < piece.length) {
            staging = at::empty({piece.length}, options.dtype);
            advise_huge_pages(staging.data_ptr(), staging.nbytes());
          }
          converted = staging.narrow(0, 0, piece.length).copy_(converted);
        }
        const uint64_t offset = layout.files[file].offset_of(name) +
                                static_cast<uint64_t>(piece.param_offset) * at::elementSize(options.dtype);
        write_tensor_at((temporary / layout.file_names[file]).string(), offset, converted);
        touched.insert(file);
      }
    }
    for (size_t file : touched) sync_file((temporary / layout.file_names[file]).string());
  }
  world.barrier();
  if (world.rank() == 0) replace_directory(temporary.string(), output);
  world.barrier();
  HfExportResult result;
  for (size_t i = 0; i < trained_specs; ++i) result.bytes += specs[i].bytes();
  result.files = static_cast<int>(layout.files.size());
  result.seconds = timer.seconds();
  return result;
}

}  // namespace st
