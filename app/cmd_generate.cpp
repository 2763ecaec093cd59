// `shardtune generate`: completions of prompts under a model, a checkpoint or a LoRA checkpoint
// (merged), greedy or sampled, with a KV cache and batching (lib/model/generation.h). Prompts
// are split across ranks in contiguous blocks; rank 0 writes one output line per prompt in
// input order (as .tmp, renamed). --json-check reports the share of outputs that parse as JSON.
#include <boost/program_options.hpp>
#include <filesystem>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/mpi_communicator.h"
#include "distributed/string_gather.h"
#include "distributed/value_gather.h"
#include "distributed/world.h"
#include "eval/eval_requests.h"
#include "eval/stop_strings.h"
#include "exit_codes.h"
#include "generate_prompts.h"
#include "inference_source.h"
#include "model/generation.h"
#include "rank_device.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

struct GenerateCommand {
  InferenceSource source;
  std::string input, output;
  std::optional<TemplateKind> chat_template;
  bool raw = false, json_check = false, overwrite = false;
  std::vector<std::string> stop;
  GenerationOptions generation;
  InferenceDtype dtype = InferenceDtype::fp32;
  DeviceChoice device = DeviceChoice::automatic;
};

po::options_description generate_options(GenerateCommand& o) {
  static const std::string template_help =
      "chat template for text prompts: " + enum_choices<TemplateKind>() + "|auto (the tokenizer's, if it implies one)";
  po::options_description options(
      "shardtune generate (--model DIR | --checkpoint DIR | --preset NAME) --input prompts.jsonl --output out.jsonl",
      110, 50);
  options.add_options()("help", "print this help and exit");
  add_inference_source_options(options, o.source);
  options.add_options()
      ("template", optional_enum_flag(&o.chat_template, "generate", "template", "auto"),
       template_help.c_str())
      ("raw", po::bool_switch(&o.raw), "encode text prompts as written (after the BOS), without a chat template")
      ("input", po::value(&o.input),
       "JSONL, one prompt per line: {\"prompt\": \"...\"}, {\"messages\": [...]} or {\"prompt_ids\": [...]}; "
       "an \"id\" is copied to the output")
      ("output", po::value(&o.output),
       "JSONL in input order: {\"index\", \"completion_ids\", \"text\", \"finish_reason\", \"num_tokens\"}")
      ("max-new-tokens", po::value(&o.generation.max_new_tokens)->default_value(256), "tokens to generate at most")
      ("temperature", po::value(&o.generation.sampling.temperature)->default_value(0.0), "0 = greedy; else sampled")
      ("top-p", po::value(&o.generation.sampling.top_p)->default_value(1.0), "nucleus sampling mass, (0, 1]")
      ("top-k", po::value(&o.generation.sampling.top_k)->default_value(0), "sample among the k most likely; 0 = all")
      ("seed", po::value(&o.generation.sampling.seed)->default_value(0),
       "sampling seed; each prompt draws from its own stream, so outputs do not depend on batches or ranks")
      ("stop", po::value(&o.stop)->composing(), "stop string (repeatable): ends a completion, its text cut before it")
      ("batch-size", po::value(&o.generation.batch_size)->default_value(8), "rows decoded together per rank, a prompt each; a finished row takes the next prompt")
      ("json-check", po::bool_switch(&o.json_check), "report the share of outputs that parse as JSON")
      ("dtype", enum_flag(&o.dtype, "generate", "dtype"), "compute dtype: fp32|bf16")
      ("device", enum_flag(&o.device, "generate", "device"), "auto (GPU when present) | cpu | cuda")
      ("overwrite", po::bool_switch(&o.overwrite), "replace an existing --output file");
  return options;
}

void check_options(const GenerateCommand& o) {
  check_inference_source(o.source, "generate");
  if (o.input.empty() || o.output.empty()) throw ConfigError("generate: --input and --output are required");
  const SamplingOptions& s = o.generation.sampling;
  if (o.generation.max_new_tokens <= 0 || o.generation.batch_size <= 0) {
    throw ConfigError("generate: --max-new-tokens and --batch-size must be > 0");
  }
  if (s.temperature < 0.0 || s.top_k < 0 || !(s.top_p > 0.0 && s.top_p <= 1.0)) {
    throw ConfigError("generate: --temperature must be >= 0, --top-k >= 0 and --top-p in (0, 1]");
  }
  if (o.raw && o.chat_template) throw ConfigError("generate: --raw and --template exclude each other");
  for (const std::string& stop : o.stop) {
    if (stop.empty()) throw ConfigError("generate: --stop strings must not be empty");
  }
  if (!o.overwrite && fs::exists(o.output)) {
    throw ConfigError("generate: --output " + o.output + " exists; pass --overwrite to replace it or choose another path");
  }
}

}  // namespace

int run_generate(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    GenerateCommand o;
    if (!parse_command_options("generate", args, generate_options(o), world.rank())) return kExitOk;
    check_options(o);
    const Timer timer;
    MpiCommunicator communicator(world.comm(), world.watchdog());
    const c10::Device device = select_rank_device(o.device, world);
    const at::TensorOptions options = inference_tensor_options(o.dtype, device);
    const InferenceModel loaded = load_inference_model(o.source, communicator, options);
    const LoadedModel& model = loaded.model;
    const std::optional<Tokenizer>& tokenizer = loaded.tokenizer;
    if (!tokenizer && (!o.stop.empty() || o.json_check)) {
      throw ConfigError("generate: --stop and --json-check read the text, which needs a tokenizer: pass --tokenizer DIR");
    }
    const std::optional<ChatTemplate> chat =
        tokenizer && !o.raw ? ChatTemplate::named_or_implied(o.chat_template, *tokenizer) : std::nullopt;
    const int64_t room = model.config.max_position_embeddings - o.generation.max_new_tokens;
    const auto prompts = read_generation_prompts(o.input, tokenizer ? &*tokenizer : nullptr, chat ? &*chat : nullptr,
                                                 model.config.vocab_size, room);
    const size_t first = prompts.size() * static_cast<size_t>(world.rank()) / static_cast<size_t>(world.size());
    const size_t last = prompts.size() * static_cast<size_t>(world.rank() + 1) / static_cast<size_t>(world.size());
    std::vector<std::vector<int64_t>> mine;
    for (size_t i = first; i < last; ++i) mine.push_back(prompts[i].ids);

    GenerationOptions generation = o.generation;
    generation.eos_ids = end_of_sequence_ids(model.config, tokenizer ? &*tokenizer : nullptr);
    if (!o.stop.empty()) generation.stop = stop_string_predicate(*tokenizer, o.stop);
    const auto results = generate(llama_weights(model.tensors, model.config), model.config, mine, generation, first);

    std::string block;
    double new_tokens = 0, parsed = 0;
    for (size_t k = 0; k < results.size(); ++k) {
      const GenerationResult& result = results[k];
      nlohmann::ordered_json line;
      if (!prompts[first + k].id.is_null()) line["id"] = prompts[first + k].id;
      line["index"] = first + k;
      line["completion_ids"] = result.ids;
      if (tokenizer) {
        std::string text = tokenizer->decode(result.ids);
        if (result.finish == FinishReason::stop) text = text.substr(0, first_stop(text, o.stop));
        line["text"] = text;
        if (o.json_check) {
          const bool valid = !nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false).is_discarded();
          line["json_valid"] = valid;
          parsed += valid ? 1 : 0;
        }
      }
      line["finish_reason"] = enum_name(result.finish);
      line["num_tokens"] = result.ids.size();
      block += line.dump() + "\n";
      new_tokens += static_cast<double>(result.ids.size());
    }
    const std::vector<double> totals = all_gather_values(communicator, {new_tokens, parsed});
    double all_tokens = 0, all_parsed = 0;
    for (size_t r = 0; r < totals.size(); r += 2) {
      all_tokens += totals[r];
      all_parsed += totals[r + 1];
    }
    write_rank_blocks(communicator, block, o.output);
    const double seconds = timer.seconds();
    log0("generate: ", prompts.size(), " prompts from ", o.input, " with ", model.description, " (",
         enum_name(o.dtype), " on ", device.str(), ", ", world.size(), " rank(s), ",
         o.generation.sampling.temperature > 0 ? "sampled" : "greedy", chat ? std::string(", template ") + enum_name(chat->kind()) : "",
         "): ", all_tokens, " new tokens in ", seconds, " s (", all_tokens / seconds, " tokens/s); wrote ", o.output);
    if (o.json_check && !prompts.empty()) {
      log0("generate: json-check: ", all_parsed, " of ", prompts.size(), " outputs (",
           100.0 * all_parsed / static_cast<double>(prompts.size()), "%) parse as JSON");
    }
    return kExitOk;
  });
}

}  // namespace st
