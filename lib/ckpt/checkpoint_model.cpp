#include "ckpt/checkpoint_model.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "ckpt/checkpoint_reader.h"
#include "fsdp/shard_source.h"
#include "fsdp/unit_layout.h"
#include "model/adapted_pieces.h"
#include "model/lora.h"
#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;

// The parameters of whole (one-shard) unit flats, by name.
TensorMap unit_tensors(const std::vector<UnitLayout>& units, const std::vector<at::Tensor>& flats) {
  TensorMap tensors;
  for (size_t u = 0; u < units.size(); ++u) {
    for (const ParamSlot& slot : units[u].params) {
      tensors[slot.spec.name] = flats[u].narrow(0, slot.offset, slot.spec.numel()).view(slot.spec.shape);
    }
  }
  return tensors;
}

}  // namespace

double checkpoint_adapter_scale(const CheckpointManifest& manifest) {
  LoraOptions lora;
  lora.r = manifest.adapter.at("r").get<int64_t>();
  lora.alpha = manifest.adapter.at("alpha").get<double>();
  lora.rslora = manifest.adapter.at("rslora").get<bool>();
  return lora_scale(lora);
}

AdapterBase checked_adapter_base(const CheckpointManifest& manifest, const std::string& directory,
                                 const std::string& command, const std::string& alternative) {
  const std::string or_else = alternative.empty() ? "" : ", or " + alternative;
  const nlohmann::json base = manifest.adapter.value("base", nlohmann::json::object());
  AdapterBase out{base.value("path", ""), base.value("preset", ""), base.value("seed", uint64_t{0})};
  if (!out.path.empty() && !fs::exists(fs::path(out.path) / "config.json")) {
    throw ModelError(command + ": the base model " + out.path + " of " + directory + " is gone; its manifest.json "
                     "\"adapter\".\"base\".\"path\" names it - restore it there" + or_else);
  }
  const std::string expected = manifest.adapter.value("base_fingerprint", "");
  const std::string found = model_fingerprint(out.path, out.preset, out.seed);
  if (found != expected) {
    throw ModelError(command + ": the base model at " + model_source_description(out.path, out.preset, out.seed) +
                     " is not the one " + directory + " was trained on (fingerprint " + found + ", the checkpoint's " +
                     expected + "); use that base" + or_else);
  }
  return out;
}

LoadedModel load_checkpoint_model(const std::string& directory, Communicator& world, const at::TensorOptions& options) {
  const CheckpointManifest manifest = read_checkpoint_manifest(directory);
  const ModelConfig config = parse_model_config(manifest.model_config, directory + "/manifest.json");
  const bool adapters = !manifest.adapter.is_null();
  const std::vector<UnitLayout> units =
      adapters ? build_adapter_unit_layouts(config, lora_targets(manifest.adapter.value("target_modules", "")),
                                            manifest.adapter.value("r", int64_t{0}), 1)
               : build_unit_layouts(config, 1);
  const ShardState masters = host_shard_state(units, /*with_moments=*/false);
  load_checkpoint(directory, units, /*shard=*/0, world, masters);  // every rank reads the one shard
  const std::string step = " (step " + std::to_string(manifest.progress.step) + ")";
  if (!adapters) {
    LoadedModel model{config, {}, "checkpoint " + directory + step,
                      fs::is_directory(manifest.model_source) ? manifest.model_source : ""};
    for (auto& [name, tensor] : unit_tensors(units, masters.of(StateKind::master))) model.tensors[name] = tensor.to(options);
    return model;
  }
  const AdapterBase base = checked_adapter_base(manifest, directory, "checkpoint " + directory);
  LoadedModel model = load_model(base.path, base.preset, base.seed, at::TensorOptions().dtype(at::kFloat));
  const TensorMap pairs = unit_tensors(units, masters.of(StateKind::master));
  const double scale = checkpoint_adapter_scale(manifest);
  const std::vector<LoraTarget> targets = lora_targets(manifest.adapter.value("target_modules", ""));
  for (int64_t layer = 0; layer < config.num_hidden_layers; ++layer) {
    for (const auto& [weight, pair] : adapted_pieces(config, layer, targets, pairs)) {
      model.tensors.at(weight).add_(at::mm(pair.b, pair.a), scale);
    }
  }
  for (const ParamSpec& spec : saved_module_params(config)) {  // a reward model's score, trained in full
    model.tensors[model_param_name(spec.key.model)] = pairs.at(spec.name);
  }
  if (config.head == ModelHead::score) model.config = config;
  for (auto& [name, tensor] : model.tensors) tensor = tensor.to(options);
  model.description = "LoRA checkpoint " + directory + step + " merged onto " + model.description;
  return model;
}

}  // namespace st
