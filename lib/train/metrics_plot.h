// `shardtune plot`: the curves of a run's metrics.jsonl as one self-contained SVG - train and
// eval loss, and (DPO) train and eval reward accuracy, against the optimizer step; what
// LlamaFactory's plot_loss gives, without Python.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace st {

struct Series {
  std::string name;                              // legend, e.g. "train"
  std::vector<std::pair<double, double>> points;  // (step, value), in file order
};

struct Panel {
  std::string title;  // "loss"
  std::vector<Series> series;
};

// Panels from metrics.jsonl lines (train records: "loss", "rewards/accuracies"; eval records:
// "eval/loss", "eval/rewards/accuracies"). Throws DataError naming the file and line of a
// malformed record, or when the file has no loss at all.
std::vector<Panel> read_metric_panels(const std::string& metrics_path);

// The SVG document; `title` heads it (e.g. the run directory).
std::string render_svg(const std::vector<Panel>& panels, const std::string& title);

}  // namespace st
