#include "inference_source.h"

#include <filesystem>

#include "ckpt/checkpoint_directory.h"
#include "ckpt/checkpoint_manifest.h"
#include "ckpt/checkpoint_model.h"
#include "fsdp/shard_source.h"
#include "util/errors.h"
#include "util/file_io.h"

namespace st {

namespace fs = std::filesystem;

at::TensorOptions inference_tensor_options(InferenceDtype dtype, const c10::Device& device) {
  return at::TensorOptions().device(device).dtype(dtype == InferenceDtype::bf16 ? at::kBFloat16 : at::kFloat);
}

void add_inference_source_options(boost::program_options::options_description& options, InferenceSource& source) {
  namespace po = boost::program_options;
  options.add_options()
      ("model", po::value(&source.model), "Hugging Face model directory (config.json + *.safetensors)")
      ("checkpoint", po::value(&source.checkpoint),
       "a step_* checkpoint or a checkpoint directory (its newest complete one); LoRA ones are merged onto their base")
      ("preset", po::value(&source.preset), "a built-in shape with seeded random weights (tests)")
      ("preset-seed", po::value(&source.preset_seed)->default_value(0), "random-weight seed for --preset")
      ("tokenizer", po::value(&source.tokenizer),
       "directory with tokenizer.json (default: the model's, or the directory the checkpoint's run read)");
}

void check_inference_source(const InferenceSource& source, const std::string& command) {
  const int sources = !source.model.empty() + !source.checkpoint.empty() + !source.preset.empty();
  if (sources != 1) throw ConfigError(command + ": give exactly one of --model DIR, --checkpoint DIR or --preset NAME");
}

InferenceModel load_inference_model(const InferenceSource& source, Communicator& communicator,
                                    const at::TensorOptions& options) {
  InferenceModel loaded;
  if (source.checkpoint.empty()) {
    loaded.model = load_model(source.model, source.preset, source.preset_seed, options);
    loaded.fingerprint = model_fingerprint(source.model, source.preset, source.preset_seed);
  } else {
    const std::string step = resolve_resume(source.checkpoint, source.checkpoint).value();
    loaded.model = load_checkpoint_model(step, communicator, options);
    loaded.fingerprint = "checkpoint " + fs::path(step).filename().string() + " manifest crc32 " +
                         crc32_hex(file_crc32((fs::path(step) / kCheckpointManifestName).string()));
  }
  const std::string directory = !source.tokenizer.empty() ? source.tokenizer
                                : holds_tokenizer(loaded.model.directory) ? loaded.model.directory
                                                                        : "";
  if (!directory.empty()) loaded.tokenizer = Tokenizer::from_file(directory);
  return loaded;
}

}  // namespace st
