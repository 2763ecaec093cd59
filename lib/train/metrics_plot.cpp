#include "train/metrics_plot.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "util/errors.h"

namespace st {
namespace {

constexpr double kWidth = 720, kPanelHeight = 300, kLeft = 70, kRight = 20, kTop = 40, kBottom = 40;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.4g", value);
  return text;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

// About five round tick values covering [low, high].
std::vector<double> ticks(double low, double high) {
  const double span = high - low > 0 ? high - low : 1.0;
  const double raw = span / 5.0;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double step = raw / magnitude < 2 ? 2 * magnitude : raw / magnitude < 5 ? 5 * magnitude : 10 * magnitude;
  std::vector<double> values;
  for (double value = std::ceil(low / step) * step; value <= high + step * 1e-9; value += step) values.push_back(value);
  return values;
}

void render_panel(std::ostringstream& svg, const Panel& panel, double top) {
  double x_low = 1e300, x_high = -1e300, y_low = 1e300, y_high = -1e300;
  for (const Series& series : panel.series) {
    for (const auto& [x, y] : series.points) {
      x_low = std::min(x_low, x), x_high = std::max(x_high, x);
      y_low = std::min(y_low, y), y_high = std::max(y_high, y);
    }
  }
  if (x_high <= x_low) x_high = x_low + 1;
  const double pad = (y_high - y_low) * 0.05 + (y_high == y_low ? 0.5 : 0.0);
  y_low -= pad, y_high += pad;
  const double plot_w = kWidth - kLeft - kRight, plot_h = kPanelHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - x_low) / (x_high - x_low) * plot_w; };
  const auto py = [&](double y) { return top + kTop + (1.0 - (y - y_low) / (y_high - y_low)) * plot_h; };

  svg << "<text x=\"" << kLeft << "\" y=\"" << top + kTop - 12 << "\" font-size=\"15\" font-weight=\"bold\">"
      << escape(panel.title) << "</text>\n";
  svg << "<rect x=\"" << kLeft << "\" y=\"" << top + kTop << "\" width=\"" << plot_w << "\" height=\"" << plot_h
      << "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (double y : ticks(y_low, y_high)) {
    svg << "<line x1=\"" << kLeft << "\" x2=\"" << kLeft + plot_w << "\" y1=\"" << py(y) << "\" y2=\"" << py(y)
        << "\" stroke=\"#ddd\"/><text x=\"" << kLeft - 6 << "\" y=\"" << py(y) + 4
        << "\" font-size=\"11\" text-anchor=\"end\">" << number(y) << "</text>\n";
  }
  for (double x : ticks(x_low, x_high)) {
    svg << "<text x=\"" << px(x) << "\" y=\"" << top + kTop + plot_h + 16 << "\" font-size=\"11\" text-anchor=\"middle\">"
        << number(x) << "</text>\n";
  }
  svg << "<text x=\"" << kLeft + plot_w / 2 << "\" y=\"" << top + kPanelHeight - 6
      << "\" font-size=\"12\" text-anchor=\"middle\">step</text>\n";
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const Series& series = panel.series[i];
    const char* color = kColors[i % 4];
    svg << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"2\" points=\"";
    for (const auto& [x, y] : series.points) svg << px(x) << "," << py(y) << " ";
    svg << "\"/>\n";
    if (series.points.size() > 60) continue;  // markers only where they stay apart
    for (const auto& [x, y] : series.points) {
      svg << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"2.5\" fill=\"" << color << "\"/>\n";
    }
  }
  // The legend last, on a box opaque enough to read over the curves.
  const double legend_x = kLeft + plot_w - 118;
  svg << "<rect x=\"" << legend_x << "\" y=\"" << top + kTop + 4 << "\" width=\"112\" height=\""
      << 8 + 16 * static_cast<double>(panel.series.size()) << "\" fill=\"white\" fill-opacity=\"0.9\" stroke=\"#bbb\"/>\n";
  for (size_t i = 0; i < panel.series.size(); ++i) {
    const double legend_y = top + kTop + 20 + 16 * static_cast<double>(i);
    svg << "<line x1=\"" << legend_x + 8 << "\" x2=\"" << legend_x + 28 << "\" y1=\"" << legend_y - 4 << "\" y2=\""
        << legend_y - 4 << "\" stroke=\"" << kColors[i % 4] << "\" stroke-width=\"2\"/><text x=\"" << legend_x + 34
        << "\" y=\"" << legend_y << "\" font-size=\"12\">" << escape(panel.series[i].name) << "</text>\n";
  }
}

}  // namespace

std::vector<Panel> read_metric_panels(const std::string& metrics_path) {
  std::ifstream in(metrics_path);
  if (!in) throw DataError(metrics_path + ": cannot open; give the metrics.jsonl of a run (train.output_dir)");
  Series train_loss{"train", {}}, eval_loss{"eval", {}}, train_accuracy{"train", {}}, eval_accuracy{"eval", {}};
  std::string line;
  for (int64_t number_of_line = 1; std::getline(in, line); ++number_of_line) {
    if (line.empty()) continue;
    nlohmann::json record;
    try {
      record = nlohmann::json::parse(line);
      const double step = record.at("step").get<double>();
      const auto take = [&](const char* key, Series& series) {
        if (record.contains(key)) series.points.emplace_back(step, record.at(key).get<double>());
      };
      take("loss", train_loss);
      take("eval/loss", eval_loss);
      take("rewards/accuracies", train_accuracy);
      take("eval/rewards/accuracies", eval_accuracy);
    } catch (const nlohmann::json::exception& error) {
      throw DataError(metrics_path + ":" + std::to_string(number_of_line) + ": not a metrics record (" + error.what() + ")");
    }
  }
  if (train_loss.points.empty() && eval_loss.points.empty()) {
    throw DataError(metrics_path + ": no 'loss' or 'eval/loss' records; is this a shardtune metrics.jsonl?");
  }
  std::vector<Panel> panels;
  const auto panel = [&](const char* title, Series& train, Series& eval) {
    Panel built{title, {}};
    if (!train.points.empty()) built.series.push_back(std::move(train));
    if (!eval.points.empty()) built.series.push_back(std::move(eval));
    if (!built.series.empty()) panels.push_back(std::move(built));
  };
  panel("loss", train_loss, eval_loss);
  panel("reward accuracy", train_accuracy, eval_accuracy);
  return panels;
}

std::string render_svg(const std::vector<Panel>& panels, const std::string& title) {
  const double height = 30 + kPanelHeight * static_cast<double>(panels.size());
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth
      << "\" height=\"" << height << "\" viewBox=\"0 0 " << kWidth << " " << height
      << "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"" << kLeft
      << "\" y=\"20\" font-size=\"13\" fill=\"#555\">" << escape(title) << "</text>\n";
  for (size_t i = 0; i < panels.size(); ++i) render_panel(svg, panels[i], 20 + kPanelHeight * static_cast<double>(i));
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace st
