// `shardtune score`: log-probs of completions under a model (a reward model's rewards of prompt
// + completion), one output line per input line, in input order. Lines are split across ranks
// in contiguous blocks; rank 0 writes the file (as .tmp, renamed), so an existing output is
// never half-overwritten.
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/mpi_communicator.h"
#include "distributed/string_gather.h"
#include "distributed/world.h"
#include "exit_codes.h"
#include "inference_source.h"
#include "model/model_source.h"
#include "model/score_jsonl.h"
#include "model/sequence_scorer.h"
#include "rank_device.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

namespace po = boost::program_options;

struct ScoreOptions {
  std::string model, checkpoint, preset, input, output;
  InferenceDtype dtype = InferenceDtype::fp32;
  DeviceChoice device = DeviceChoice::automatic;
  uint64_t seed = 0;
  ScorerOptions scorer;
  bool overwrite = false;
  bool reward = false;
};

po::options_description score_options(ScoreOptions& o) {
  po::options_description options("shardtune score --model DIR --input pairs.jsonl --output out.jsonl", 110, 50);
  options.add_options()
      ("help", "print this help and exit")
      ("model", po::value(&o.model), "Hugging Face model directory (config.json + *.safetensors)")
      ("checkpoint", po::value(&o.checkpoint),
       "instead of --model: a step_* checkpoint or a checkpoint directory (its newest complete one)")
      ("preset", po::value(&o.preset), "instead of --model: a built-in shape with seeded random weights")
      ("seed", po::value(&o.seed)->default_value(0), "random-weight seed for --preset")
      ("input", po::value(&o.input), "JSONL, one {\"prompt_ids\": [...], \"completion_ids\": [...]} per line")
      ("output", po::value(&o.output),
       "JSONL written in input order: {\"logp\", \"token_logps\", \"num_tokens\"}, or a reward model's {\"reward\"}")
      ("reward", po::bool_switch(&o.reward),
       "the model must be a reward model (*ForSequenceClassification, num_labels 1; train.stage = rm): one reward "
       "per line, read at the last token that is not its pad_token_id")
      ("dtype", enum_flag(&o.dtype, "score", "dtype"), "compute dtype: fp32|bf16")
      ("device", enum_flag(&o.device, "score", "device"), "auto (GPU when present) | cpu | cuda")
      ("chunk-tokens", po::value(&o.scorer.chunk_tokens)->default_value(1024),
       "tokens per lm_head log-prob chunk (bounds the [tokens, vocab] logits memory)")
      ("batch-tokens", po::value(&o.scorer.max_batch_tokens)->default_value(8192),
       "padded tokens per forward pass")
      ("routing", po::bool_switch(&o.scorer.routing),
       "a mixture-of-experts model: each line also gets \"routing\", every token's top-k experts and weights per "
       "sparse layer (prompt and completion)")
      ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --output file");
  return options;
}

void check_options(const ScoreOptions& o) {
  if (!o.model.empty() + !o.checkpoint.empty() + !o.preset.empty() != 1) {
    throw ConfigError("score: give exactly one of --model DIR, --checkpoint DIR or --preset NAME");
  }
  if (o.input.empty() || o.output.empty()) throw ConfigError("score: --input and --output are required");
  if (o.scorer.chunk_tokens <= 0 || o.scorer.max_batch_tokens <= 0) {
    throw ConfigError("score: --chunk-tokens and --batch-tokens must be > 0");
  }
  if (!o.overwrite && std::filesystem::exists(o.output)) {
    throw ConfigError("score: --output " + o.output + " exists; pass --overwrite to replace it or choose another path");
  }
}

}  // namespace

int run_score(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    ScoreOptions o;
    const po::options_description options = score_options(o);
    if (!parse_command_options("score", args, options, world.rank())) return kExitOk;
    check_options(o);
    const Timer timer;
    const c10::Device device = select_rank_device(o.device, world);
    const at::TensorOptions tensor_options = inference_tensor_options(o.dtype, device);
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const LoadedModel model =
        load_inference_model({o.model, o.checkpoint, o.preset, "", o.seed}, communicator, tensor_options).model;
    if (o.reward && model.config.head != ModelHead::score) {
      throw ConfigError("score --reward: " + model.description + " is a causal LM (" + hf_architecture(model.config) +
                        "), not a reward model; give a train.stage = rm export or checkpoint, or drop --reward");
    }
    if (o.scorer.routing && model.config.experts.num_experts == 0) {
      throw ConfigError("score --routing: " + model.description + " has no experts (config.json num_experts); drop "
                        "--routing");
    }
    const auto requests = read_score_requests(o.input, model.config.vocab_size,
                                              model.config.max_position_embeddings);
    const size_t first = requests.size() * world.rank() / world.size();
    const size_t last = requests.size() * (world.rank() + 1) / world.size();
    const std::vector<ScoreRequest> mine(requests.begin() + first, requests.begin() + last);
    const auto results = score_sequences(llama_weights(model.tensors, model.config), model.config,
                                         mine, o.scorer);
    std::string block;
    int64_t tokens = 0;
    for (const ScoreResult& result : results) {
      block += format_score_line(result, model.config.head) + "\n";
      tokens += static_cast<int64_t>(result.token_logps.size());
    }
    write_rank_blocks(communicator, block, o.output);
    const bool rewards = model.config.head == ModelHead::score;
    log0("score: ", requests.size(), " lines from ", o.input, rewards ? " rewarded by " : " scored with ",
         model.description, " (", enum_name(o.dtype), " on ", device.str(), ", ", world.size(), " rank(s)) in ",
         timer.seconds(), " s; ", rewards ? "" : std::to_string(tokens) + " completion tokens on rank 0; ", "wrote ",
         o.output);
    return kExitOk;
  });
}

}  // namespace st
