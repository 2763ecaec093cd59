// `shardtune plot <run>/metrics.jsonl -o loss.svg`: loss and reward-accuracy curves (train and
// eval) as an SVG. No MPI; the output is written as .tmp and renamed.
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>

#include "command_runner.h"
#include "commands.h"
#include "config/command_options.h"
#include "exit_codes.h"
#include "train/metrics_plot.h"
#include "util/errors.h"
#include "util/file_io.h"
#include "util/log.h"

namespace st {

int run_plot(std::vector<std::string> args, int&, char**&) {
  return run_guarded([&] {
    namespace po = boost::program_options;
    std::string input, output;
    bool overwrite = false;
    po::options_description options("shardtune plot <run>/metrics.jsonl -o loss.svg", 110, 50);
    options.add_options()
        ("help", "print this help and exit")
        ("metrics", po::value(&input), "a run's metrics.jsonl (also the first positional argument)")
        ("output,o", po::value(&output), "SVG file to write; default: loss.svg next to the metrics file")
        ("overwrite", po::bool_switch(&overwrite), "replace an existing output file");
    std::vector<std::string> rest;
    for (const std::string& arg : args) {
      if (input.empty() && !arg.empty() && arg[0] != '-' && (rest.empty() || rest.back() != "-o")) {
        input = arg;
      } else {
        rest.push_back(arg);
      }
    }
    if (!parse_command_options("plot", rest, options, 0)) return kExitOk;
    if (input.empty()) throw ConfigError("plot: give the metrics.jsonl to plot (shardtune plot runs/x/metrics.jsonl -o loss.svg)");
    if (output.empty()) output = (std::filesystem::path(input).parent_path() / "loss.svg").string();
    if (!overwrite && std::filesystem::exists(output)) {
      throw ConfigError("plot: " + output + " exists; pass --overwrite to replace it or choose another -o");
    }
    const std::vector<Panel> panels = read_metric_panels(input);
    try {
      write_file_atomically(output, render_svg(panels, input));
    } catch (const IoError& error) {
      throw IoError(std::string(error.what()) + "; is the directory there and writable, the disk not full?");
    }
    size_t points = 0;
    for (const Panel& panel : panels) {
      for (const Series& series : panel.series) points += series.points.size();
    }
    std::cout << "plot: " << panels.size() << " panel(s), " << points << " points from " << input << " -> " << output << "\n";
    return kExitOk;
  });
}

}  // namespace st
