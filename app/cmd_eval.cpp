// `shardtune eval`: benchmark tasks (multiple choice, perplexity, generation with an answer
// filter; lib/eval) on a model, a checkpoint or a preset, their metrics computed as
// lm-evaluation-harness computes them. Documents are split across ranks in contiguous blocks;
// rank 0 gathers the sample records, aggregates and writes results.json (and --log-samples)
// once every task has run, so a failure leaves no output behind.
#include <boost/program_options.hpp>
#include <filesystem>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "distributed/mpi_communicator.h"
#include "distributed/string_gather.h"
#include "distributed/world.h"
#include "eval/eval_context.h"
#include "eval/eval_options.h"
#include "eval/eval_results.h"
#include "eval/eval_runner.h"
#include "eval/preference_accuracy.h"
#include "eval/task_file.h"
#include "exit_codes.h"
#include "inference_source.h"
#include "rank_device.h"
#include "util/build_info.h"
#include "util/device.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

namespace po = boost::program_options;
namespace fs = std::filesystem;

struct EvalCommand {
  InferenceSource source;
  std::vector<std::string> tasks;
  std::string output, log_samples, pairs;
  int64_t limit = 0, max_length = 0, generation_batch = 8;
  bool add_bos = false, overwrite = false;
  std::optional<TemplateKind> chat_template;
  ScorerOptions scorer;
  InferenceDtype dtype = InferenceDtype::fp32;
  DeviceChoice device = DeviceChoice::automatic;
};

po::options_description eval_options(EvalCommand& o) {
  static const std::string template_help =
      "chat template for tasks with chat_template = true: " + enum_choices<TemplateKind>() + "|auto (the tokenizer's)";
  po::options_description options(
      "shardtune eval (--model DIR | --checkpoint DIR | --preset NAME) --tasks a.jsonl[,b.jsonl] --output results.json",
      110, 50);
  options.add_options()("help", "print this help and exit");
  add_inference_source_options(options, o.source);
  options.add_options()
      ("tasks", po::value(&o.tasks)->composing(), "task files (JSONL: a {\"task\": ...} header, then documents), "
       "comma-separated or repeated; docs/evaluation.md")
      ("pairs", po::value(&o.pairs),
       "a reward model's pairwise accuracy on preference pairs (prepped dpo shards, comma-separated "
       "directories): the share whose chosen completion it rewards above the rejected one")
      ("output", po::value(&o.output), "results JSON: per task each metric's value and standard error, the settings")
      ("log-samples", po::value(&o.log_samples), "also write each document's inputs, scores and prediction (JSONL)")
      ("limit", po::value(&o.limit)->default_value(0), "the first N documents of each task (0 = all)")
      ("max-length", po::value(&o.max_length)->default_value(0),
       "tokens the model sees at once (0 = config.json's max_position_embeddings)")
      ("add-bos", po::bool_switch(&o.add_bos), "begin contexts with the BOS token (the harness's add_bos_token)")
      ("template", optional_enum_flag(&o.chat_template, "eval", "template", "auto"), template_help.c_str())
      ("batch-size", po::value(&o.generation_batch)->default_value(8), "rows decoded together (generate_until), a prompt each; a finished row takes the next prompt")
      ("chunk-tokens", po::value(&o.scorer.chunk_tokens)->default_value(1024), "tokens per lm_head log-prob chunk")
      ("batch-tokens", po::value(&o.scorer.max_batch_tokens)->default_value(8192), "padded tokens per forward pass")
      ("dtype", enum_flag(&o.dtype, "eval", "dtype"), "compute dtype: fp32|bf16")
      ("device", enum_flag(&o.device, "eval", "device"), "auto (GPU when present) | cpu | cuda")
      ("overwrite", po::bool_switch(&o.overwrite), "replace existing --output / --log-samples files");
  return options;
}

// --tasks, repeated or comma-separated.
std::vector<std::string> task_paths(const std::vector<std::string>& values) {
  std::vector<std::string> paths;
  for (const std::string& value : values) {
    for (std::string& path : eval_task_paths(value)) paths.push_back(std::move(path));
  }
  return paths;
}

void check_options(const EvalCommand& o) {
  check_inference_source(o.source, "eval");
  if ((task_paths(o.tasks).empty() && o.pairs.empty()) || o.output.empty()) {
    throw ConfigError("eval: --output and --tasks (or a reward model's --pairs) are required");
  }
  if (o.limit < 0 || o.max_length < 0 || o.generation_batch <= 0 || o.scorer.chunk_tokens <= 0 ||
      o.scorer.max_batch_tokens <= 0) {
    throw ConfigError("eval: --limit and --max-length must be >= 0; --batch-size, --chunk-tokens and --batch-tokens > 0");
  }
  for (const std::string& path : {o.output, o.log_samples}) {
    if (!path.empty() && !o.overwrite && fs::exists(path)) {
      throw ConfigError("eval: " + path + " exists; pass --overwrite to replace it or choose another path");
    }
  }
}

}  // namespace

int run_eval(std::vector<std::string> args, int& argc, char**& argv) {
  World world(argc, argv);
  return run_guarded([&] {
    EvalCommand o;
    if (!parse_command_options("eval", args, eval_options(o), world.rank())) return kExitOk;
    check_options(o);
    const Timer timer;
    // All read first: a bad file is refused before the model loads.
    const std::vector<EvalTask> tasks = read_task_files(task_paths(o.tasks), o.limit, "eval");

    MpiCommunicator communicator(world.comm(), world.watchdog());
    const c10::Device device = select_rank_device(o.device, world);
    const at::TensorOptions options = inference_tensor_options(o.dtype, device);
    InferenceModel loaded = load_inference_model(o.source, communicator, options);
    if (!tasks.empty() && !loaded.tokenizer) {
      throw ConfigError("eval: tasks are text, which needs a tokenizer: pass --tokenizer DIR");
    }
    const LlamaWeights weights = llama_weights(loaded.model.tensors, loaded.model.config);
    nlohmann::ordered_json results;
    results["model"] = {{"source", loaded.model.description}, {"fingerprint", loaded.fingerprint},
                        {"dtype", enum_name(o.dtype)}};
    results["shardtune"] = {{"version", shardtune_version()}, {"ranks", world.size()}};
    if (!o.pairs.empty()) {
      const nlohmann::ordered_json result =
          preference_accuracy(o.pairs, weights, loaded.model.config, o.scorer, communicator);
      log0("eval: pairwise accuracy on ", o.pairs, " (", result["pairs"].get<uint64_t>(), " pairs): ",
           result["accuracy"].get<double>(), " +- ", result["accuracy_stderr"].get<double>(), ", margin ",
           result["margin"].get<double>());
      results["results"]["pairwise_accuracy"] = result;
    }
    std::string sample_lines;
    for (const EvalTask& task : tasks) {
      const Tokenizer& tokenizer = *loaded.tokenizer;
      const std::optional<ChatTemplate> chat = ChatTemplate::named_or_implied(o.chat_template, tokenizer);
      EvalSettings settings;
      settings.encode = encode_settings_for(tokenizer, loaded.model.config, o.add_bos, o.max_length, "eval");
      settings.eos_ids = end_of_sequence_ids(loaded.model.config, &tokenizer);
      settings.generation_batch = o.generation_batch;
      WholeWeightsModel model(weights, loaded.model.config, o.scorer);
      const std::vector<std::string> contexts = document_contexts(task, chat ? &*chat : nullptr);
      const std::vector<nlohmann::json> samples =
          evaluate_task_on_ranks(task, contexts, tokenizer, settings, model, communicator);
      const nlohmann::ordered_json run = {{"limit", o.limit}, {"max_length", settings.encode.max_length},
                                          {"add_bos", o.add_bos},
                                          {"template", task.spec.chat_template && chat ? enum_name(chat->kind()) : "none"}};
      const nlohmann::ordered_json result = task_result(task, samples, run);
      log0("eval: ", task.spec.name, " (", enum_name(task.spec.kind), ", ", samples.size(), " documents, ",
           task.spec.num_fewshot, "-shot): ", metrics_line(result));
      results["results"][task.spec.name] = result;
      for (const nlohmann::json& sample : samples) {
        nlohmann::ordered_json line = {{"task", task.spec.name}};
        for (const auto& [key, value] : sample.items()) line[key] = value;
        sample_lines += line.dump() + "\n";
      }
    }
    if (world.rank() == 0) {
      if (!o.log_samples.empty()) write_file_atomically(o.log_samples, sample_lines);
      write_file_atomically(o.output, results.dump(2) + "\n");
    }
    communicator.barrier();
    log0("eval: ", tasks.size(), " task(s)", o.pairs.empty() ? "" : " and pairwise accuracy", " on ",
         loaded.model.description, " (", enum_name(o.dtype), " on ",
         device.str(), ", ", world.size(), " rank(s)) in ", timer.seconds(), " s; wrote ", o.output,
         o.log_samples.empty() ? "" : " and " + o.log_samples);
    return kExitOk;
  });
}

}  // namespace st
