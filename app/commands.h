// The subcommands of the shardtune binary; each gets argv after its own name.
#pragma once

#include <string>
#include <vector>

namespace st {

int run_eval(std::vector<std::string> args, int& argc, char**& argv);
int run_generate(std::vector<std::string> args, int& argc, char**& argv);
int run_export(std::vector<std::string> args, int& argc, char**& argv);
int run_estimate(std::vector<std::string> args, int& argc, char**& argv);
int run_env(std::vector<std::string> args, int& argc, char**& argv);
int run_plot(std::vector<std::string> args, int& argc, char**& argv);
int run_precompute_ref(std::vector<std::string> args, int& argc, char**& argv);
int run_prep(std::vector<std::string> args, int& argc, char**& argv);
int run_score(std::vector<std::string> args, int& argc, char**& argv);
int run_synth(std::vector<std::string> args, int& argc, char**& argv);
int run_bench(std::vector<std::string> args, int& argc, char**& argv);
int run_train(std::vector<std::string> args, int& argc, char**& argv);

}  // namespace st
