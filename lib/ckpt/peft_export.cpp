#include "ckpt/peft_export.h"

#include <ATen/ATen.h>

#include <filesystem>

#include "ckpt/hf_export.h"
#include "fsdp/adapter_merge.h"
#include "hf/safetensors_writer.h"
#include "model/llama_units.h"
#include "model/lora.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAdapterWeights = "adapter_model.safetensors";

template <typename T>
T adapter_field(const nlohmann::json& adapter, const char* key) {
  const auto found = adapter.find(key);
  if (found == adapter.end()) throw CheckpointError(std::string("adapter identity lacks '") + key + "'");
  return found->get<T>();
}

}  // namespace

nlohmann::json peft_adapter_config(const nlohmann::json& adapter, const ModelConfig& model,
                                   const std::vector<std::string>& saved_modules) {
  const auto r = adapter_field<int64_t>(adapter, "r");
  const auto alpha = adapter_field<double>(adapter, "alpha");
  const bool experts = lora_adapts_routed_experts(model);
  nlohmann::json modules = nlohmann::json::array(), parameters = nlohmann::json::array();
  nlohmann::json ranks = nlohmann::json::object(), alphas = nlohmann::json::object();
  for (LoraTarget target : held_lora_targets(model, lora_targets(adapter_field<std::string>(adapter, "target_modules")))) {
    const bool mlp = target == LoraTarget::gate || target == LoraTarget::up || target == LoraTarget::down;
    if (!(experts && mlp)) {
      modules.push_back(peft_module_name(target));
    } else if (target == LoraTarget::gate) {  // what PEFT writes for gate_proj, up_proj, down_proj here
      parameters = {"gate_up_proj", "down_proj"};
      ranks[".*\\.gate_up_proj"] = kFusedExpertRank * r;
      alphas[".*\\.gate_up_proj"] = static_cast<double>(kFusedExpertRank) * alpha;
    }
  }
  const nlohmann::json base = adapter.value("base", nlohmann::json::object());
  const std::string path = base.value("path", "");
  nlohmann::json config = {
      {"peft_type", "LORA"},
      {"task_type", saved_modules.empty() ? "CAUSAL_LM" : "SEQ_CLS"},
      {"base_model_name_or_path", path.empty() ? "preset " + base.value("preset", std::string("?")) : path},
      {"r", r},
      {"lora_alpha", alpha},
      {"lora_dropout", adapter.value("dropout", 0.0)},
      {"use_rslora", adapter_field<bool>(adapter, "rslora")},
      {"target_modules", modules},
      {"bias", "none"},
      {"fan_in_fan_out", false},
      {"inference_mode", true},
      {"init_lora_weights", true},
      {"use_dora", false},
      {"modules_to_save", saved_modules.empty() ? nlohmann::json(nullptr) : nlohmann::json(saved_modules)},
      {"layers_to_transform", nullptr},
      {"layers_pattern", nullptr},
      {"rank_pattern", ranks},
      {"alpha_pattern", alphas},
      {"revision", nullptr}};
  if (!parameters.empty()) config["target_parameters"] = parameters;
  return config;
}

PeftExportResult export_peft_adapter(const std::string& output, const ModelConfig& model,
                                     const std::vector<UnitLayout>& units,
                                     const std::vector<at::Tensor>& masters, int shard, bool writes,
                                     Communicator& world, const nlohmann::json& adapter, at::ScalarType dtype,
                                     bool replace) {
  if (fs::exists(output) && !replace) {  // on every rank (shared storage), before the collective
    throw ConfigError("export: " + output + " exists; choose another output or allow replacing it");
  }
  std::vector<at::Tensor> host;
  for (const at::Tensor& master : masters) host.push_back(master.to(at::kCPU, at::kFloat));
  const TensorMap tensors = gather_adapters(units, host, shard, writes, world);
  PeftExportResult result;
  if (world.rank() == 0) {
    const std::vector<TensorSpec> specs = export_specs(units, dtype);
    const fs::path temporary = output + ".tmp";
    fs::remove_all(temporary);
    fs::create_directories(temporary);
    const SafetensorsLayout layout(specs);
    const std::string weights = (temporary / kAdapterWeights).string();
    create_safetensors_file(weights, layout);
    for (const TensorSpec& spec : specs) {
      const at::Tensor converted = tensors.at(spec.name).to(dtype).contiguous();
      write_tensor_at(weights, layout.offset_of(spec.name), converted);
      result.bytes += spec.bytes();
      ++result.tensors;
    }
    sync_file(weights);
    std::vector<std::string> saved;  // "score" of "base_model.model.score.weight"
    for (const ParamSlot& slot : units.at(run_unit_count(model) - 1).params) {  // the head unit
      if (slot.spec.key.kind != ParamKey::Kind::model) continue;
      const std::string name = model_param_name(slot.spec.key.model);
      saved.push_back(name.substr(0, name.rfind('.')));
    }
    write_file_atomically((temporary / "adapter_config.json").string(),
                          peft_adapter_config(adapter, model, saved).dump(2) + "\n");
    replace_directory(temporary.string(), output);
  }
  world.barrier();
  return result;
}

}  // namespace st
