// shardtune: one binary, one subcommand per file. main() only dispatches.
#include <algorithm>
#include <cstring>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "exit_codes.h"
#include "util/blas_kernels.h"
#include "util/build_info.h"
#include "util/errors.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(std::vector<std::string>, int&, char**&);
};

const Command kCommands[] = {
    {"train", "fine-tune a model (every train.stage; full, lora, qlora) with FSDP-style sharding; reads "
              "LlamaFactory and TRL configs", st::run_train},
    {"plot", "loss and reward-accuracy curves of a run's metrics.jsonl as an SVG", st::run_plot},
    {"precompute-ref", "write the reference model's log-probs into a DPO dataset's shards", st::run_precompute_ref},
    {"prep", "token-id JSONL -> HDF5 pair dataset (train/val shards + manifest)", st::run_prep},
    {"synth", "a learnable synthetic pair dataset for demos, tests and benchmarks", st::run_synth},
    {"export", "a sharded checkpoint -> a consolidated Hugging Face model (safetensors)", st::run_export},
    {"eval", "benchmark tasks (multiple choice, perplexity, generation) scored as lm-evaluation-harness scores them", st::run_eval},
    {"generate", "completions of prompts under a model or checkpoint (greedy or sampled, KV cache)", st::run_generate},
    {"score", "log-probs of completions under a model (JSONL in, JSONL out)", st::run_score},
    {"estimate", "memory per GPU and per host for a model, cluster shape and sharding", st::run_estimate},
    {"env", "print every rank's software versions and check they match", st::run_env},
    {"bench", "training throughput (tokens/s, MFU, peak memory) of a model shape on synthetic data", st::run_bench},
};

void print_usage() {
  std::cout << "usage: shardtune <command> [options]   (shardtune <command> --help for options)\n\n"
               "commands:\n";
  size_t width = std::strlen("--version");
  for (const auto& command : kCommands) width = std::max(width, std::strlen(command.name));
  for (const auto& command : kCommands) {
    std::cout << "  " << command.name << std::string(width + 2 - std::strlen(command.name), ' ')
              << command.summary << "\n";
  }
  std::cout << "\n  --version" << std::string(width + 2 - std::strlen("--version"), ' ')
            << "print versions of shardtune and its libraries\n";
}

void print_version() {
  const auto versions = st::library_versions();
  std::cout << "shardtune " << versions.front().value << "\n";
  for (size_t i = 1; i < versions.size(); ++i) {
    std::cout << "  " << versions[i].name << ": " << versions[i].value << "\n";
  }
}

// Ends the process without running the static destructors. By the time a command returns it has
// closed its files and finalized MPI; what the destructors would still do is libtorch's: remove
// its thousands of operators from the dispatcher one by one, 0.04-0.055 s of CPU in every process
// (bench/startup.sh; docs/performance.md, "Start-up").
[[noreturn]] void exit_now(int code) {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(code);
}

int run_command_line(int argc, char** argv) {
  // Past a file-size limit (ulimit -f, quotas) a write fails with EFBIG and a clear error
  // instead of the kernel killing the process mid-save.
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string first = argc > 1 ? argv[1] : "";
  if (first.empty() || first == "--help" || first == "-h" || first == "help") {
    print_usage();
    return first.empty() ? st::kExitConfigError : st::kExitOk;
  }
  if (first == "--version") {
    print_version();
    return st::kExitOk;
  }
  for (const auto& command : kCommands) {
    if (first == command.name) {
      try {
        return command.run(std::vector<std::string>(argv + 2, argv + argc), argc, argv);
      } catch (const st::ConfigError& error) {  // before a command's own guard: its start-up
        std::cerr << "shardtune: error: " << error.what() << "\n";
        return st::kExitConfigError;
      }
    }
  }
  std::cerr << "shardtune: unknown command '" << first << "'\n\n";
  print_usage();
  return st::kExitConfigError;
}

}  // namespace

int main(int argc, char** argv) {
  st::run_the_best_blas_kernels(argv);  // returns unless it restarts on better OpenBLAS kernels
  exit_now(run_command_line(argc, argv));
}
