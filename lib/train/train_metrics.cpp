#include "train/train_metrics.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <iterator>

#include "distributed/value_gather.h"
#include "util/duration_text.h"
#include "util/host_sync.h"

namespace st {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

double ratio(double numerator, double denominator) { return denominator > 0.0 ? numerator / denominator : 0.0; }

// A summed field's metric: the sum over what its row divides it by.
double metric_of(const Objective& objective, const LossSums& s, const LossSums::Field& field) {
  switch (field.per) {
    case LossSums::Per::pair: return ratio(s.*field.value, s.pairs);
    case LossSums::Per::router_forward: return ratio(s.*field.value, s.router_forwards);
    default: break;
  }
  const double metric = ratio(s.*field.value, objective.loss_denominator(s));
  // The loss as trained: with the router's loss of each forward, as TRL logs it.
  if (field.value == &LossSums::loss) return metric + ratio(s.weighted_router_loss, s.router_forwards);
  return metric;
}

const LossSums::Field& field_of(double LossSums::*value) {
  return *std::find_if(std::begin(LossSums::kFields), std::end(LossSums::kFields),
                       [&](const LossSums::Field& field) { return field.value == value; });
}

}  // namespace

nlohmann::ordered_json loss_metrics(const Objective& objective, const LossSums& s, const std::string& prefix) {
  nlohmann::ordered_json record;
  for (const LossSums::Field& field : LossSums::kFields) {
    if (field.per == LossSums::Per::none || !objective.reports(field)) continue;
    if (field.per == LossSums::Per::router_forward && s.router_forwards == 0.0) continue;
    record[prefix + field.metric] = metric_of(objective, s, field);
  }
  objective.add_derived_metrics(s, prefix, record);
  return record;
}

void WindowStats::add(const MicroBatchResult& micro) {
  sums += micro.counts;
  if (micro.micro_metrics.defined()) micro_metrics.push_back(micro.micro_metrics);
  output_sums = output_sums.defined() ? output_sums + micro.output_sums : micro.output_sums;
  if (micro.expert_picks.defined()) {
    expert_picks = expert_picks.defined() ? expert_picks + micro.expert_picks : micro.expert_picks;
  }
}

void WindowStats::settle() {
  if (!output_sums.defined()) return;
  sums = with_output_sums(sums, read_to_host(output_sums));
  output_sums = at::Tensor();
}

namespace {

// Each rank's values as one row of columns; the rows are gathered and each column summed and
// maxed across ranks.
struct Columns {
  std::vector<double> values;
  size_t add(double value) {
    values.push_back(value);
    return values.size() - 1;
  }
};

// Collective: the window's micro-batch metrics (Objective::micro_metric_columns), micro-batch m
// of every rank combined into row m. Ranks with fewer micro-batches add rows that change nothing.
std::vector<std::vector<double>> combined_micro_metrics(Communicator& world, const std::vector<at::Tensor>& mine,
                                                        const std::vector<MicroMetric>& columns) {
  const size_t width = columns.size();
  const auto rows = static_cast<size_t>(max_over_ranks(world, static_cast<double>(mine.size())));
  // What changes nothing in column k's combination: 0 for a sum, NaN for TRL's nanmin / nanmax.
  const auto neutral = [&](size_t k) {
    return columns[k].combine == RankCombine::sum ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<double> values(rows * width, 0.0);
  for (size_t m = mine.size(); m < rows; ++m) {
    for (size_t k = 0; k < width; ++k) values[m * width + k] = neutral(k);
  }
  if (!mine.empty()) {
    const at::Tensor host = read_to_host(at::stack(mine)).to(at::kDouble).contiguous();
    std::copy(host.data_ptr<double>(), host.data_ptr<double>() + host.numel(), values.begin());
  }
  const std::vector<double> all = all_gather_values(world, values);
  std::vector<std::vector<double>> combined(rows, std::vector<double>(width, 0.0));
  for (size_t m = 0; m < rows; ++m) {
    for (size_t k = 0; k < width; ++k) {
      double& out = combined[m][k];
      out = neutral(k);
      for (int r = 0; r < world.size(); ++r) {
        const double v = all[static_cast<size_t>(r) * rows * width + m * width + k];
        if (columns[k].combine == RankCombine::sum) out += v;
        else if (!std::isnan(v) && (std::isnan(out) || (columns[k].combine == RankCombine::min ? v < out : v > out))) out = v;
      }
    }
  }
  return combined;
}

}  // namespace

TrainRecord reduce_train_record(Communicator& world, const WindowStats& w, const RecordContext& c) {
  Columns mine{w.sums.pack()};
  const size_t flops_column = mine.add(w.flops);
  std::vector<size_t> comm_columns;
  for (const CommBytes::Field& field : CommBytes::kFields) {
    comm_columns.push_back(mine.add(static_cast<double>(w.comm.*field.bytes)));
  }
  const size_t seconds_column = mine.add(w.seconds);
  const size_t memory_column = mine.add(static_cast<double>(c.peak_memory_bytes));
  const size_t saved_column = mine.add(static_cast<double>(c.saved_activation_bytes));
  std::vector<size_t> phase_columns;
  for (const StepPhases::Field& field : StepPhases::kFields) phase_columns.push_back(mine.add(w.phases.*field.seconds));
  const std::vector<double> all = all_gather_values(world, mine.values);
  const size_t width = mine.values.size();
  std::vector<double> total(width, 0.0), most(width, 0.0);
  for (int r = 0; r < world.size(); ++r) {
    for (size_t i = 0; i < width; ++i) {
      total[i] += all[r * width + i];
      most[i] = std::max(most[i], all[r * width + i]);
    }
  }
  const LossSums sums = LossSums::unpack(total.data());
  const double flops = total[flops_column];
  const double ranks = world.size();
  const double steps = std::max<double>(1.0, static_cast<double>(w.steps));
  const double seconds = most[seconds_column];  // the slowest rank's window

  TrainRecord typed;
  typed.step = c.step;
  typed.losses = loss_summary(*c.objective, sums);
  typed.step_time_s = seconds / steps;
  typed.tokens_per_s = ratio(sums.real_tokens, seconds);
  typed.tokens = sums.real_tokens;
  typed.padding_fraction = sums.padded_tokens > 0.0 ? 1.0 - sums.computed_tokens / sums.padded_tokens : 0.0;
  if (c.peak_tflops > 0.0) typed.mfu = ratio(flops, seconds * ranks * c.peak_tflops * 1e12);
  typed.peak_memory_gib = most[memory_column] / kGiB;
  typed.saved_activations_gib = most[saved_column] / kGiB;
  if (c.exact_phases) {
    StepPhases phases;
    size_t phase = 0;
    for (const StepPhases::Field& field : StepPhases::kFields) phases.*field.seconds = most[phase_columns[phase++]] / steps;
    typed.phases = phases;
  }

  nlohmann::ordered_json& record = typed.json;
  record["step"] = c.step;
  record["epoch"] = c.epoch;
  record.update(loss_metrics(*c.objective, sums, ""));
  const std::vector<MicroMetric> columns = c.objective->micro_metric_columns();
  if (!columns.empty()) {
    c.objective->add_micro_batch_metrics(combined_micro_metrics(world, w.micro_metrics, columns), *c.sections, record);
  }
  record["lr"] = c.lr;
  record["grad_norm"] = c.grad_norm;
  record["tokens"] = typed.tokens;
  record["tokens_per_s"] = typed.tokens_per_s;
  record["samples_per_s"] = ratio(sums.pairs, seconds);
  record["padding_fraction"] = typed.padding_fraction;
  record["step_time_s"] = typed.step_time_s;
  record["tflops_per_device"] = ratio(flops, seconds * ranks) / 1e12;
  if (c.peak_tflops > 0.0) record["mfu"] = typed.mfu;
  record["peak_memory_gib"] = typed.peak_memory_gib;
  record["memory_kind"] = c.memory_kind;
  record["saved_activations_gib"] = typed.saved_activations_gib;
  // Per rank and step, averaged over ranks.
  for (size_t i = 0; i < comm_columns.size(); ++i) {
    record[std::string("comm/") + CommBytes::kFields[i].name + "_bytes"] = total[comm_columns[i]] / ranks / steps;
  }
  record["skipped_steps"] = c.skipped_steps;
  if (w.expert_picks.defined()) {
    // Each sparse layer's expert load over the window: its busiest expert's tokens over the mean
    // (1 = balanced; E / k = every token on the same k experts: routing collapse).
    const at::Tensor picks = read_to_host(w.expert_picks).to(at::kDouble).contiguous();
    const at::Tensor load = (std::get<0>(picks.max(1)) / picks.mean(1).clamp_min(1e-300)).contiguous();
    record["moe/expert_load"] = std::vector<double>(load.data_ptr<double>(), load.data_ptr<double>() + load.numel());
    record["moe/expert_load_max"] = load.max().item<double>();
  }
  if (typed.phases) {
    for (const StepPhases::Field& field : StepPhases::kFields) {
      record[std::string("time/") + field.name + "_s"] = (*typed.phases).*field.seconds;
    }
  }
  return typed;
}

LossSummary loss_summary(const Objective& objective, const LossSums& s) {
  LossSummary summary;
  summary.loss = metric_of(objective, s, field_of(&LossSums::loss));
  const LossSums::Field& correct = field_of(&LossSums::correct);
  if (objective.reports(correct)) summary.reward_accuracy = metric_of(objective, s, correct);
  return summary;
}

EvalRecord reduce_eval_record(Communicator& world, const Objective& objective, const LossSums& sums, int64_t step,
                              double seconds) {
  const std::vector<double> all = all_gather_values(world, sums.pack());
  LossSums total;
  for (int r = 0; r < world.size(); ++r) total += LossSums::unpack(all.data() + r * LossSums::kPacked);
  EvalRecord typed;
  typed.step = step;
  typed.samples = total.pairs;
  typed.losses = loss_summary(objective, total);
  nlohmann::ordered_json& record = typed.json;
  record = loss_metrics(objective, total, "eval/");
  record["step"] = step;
  record["eval/samples"] = total.pairs;
  record["eval/seconds"] = seconds;
  return typed;
}

std::string console_line(const nlohmann::ordered_json& r, int64_t total_steps) {
  const bool eval = r.contains("eval/seconds");
  const std::string p = eval ? "eval/" : "";
  char text[1024];
  int n = std::snprintf(text, sizeof(text), "%sstep %lld/%lld", eval ? "eval " : "",
                        static_cast<long long>(r.at("step").get<int64_t>()), static_cast<long long>(total_steps));
  const auto add = [&](const char* format, double value) {
    if (n < static_cast<int>(sizeof(text))) n += std::snprintf(text + n, sizeof(text) - static_cast<size_t>(n), format, value);
  };
  if (r.contains(p + "loss")) add("  loss %.4f", r.at(p + "loss").get<double>());
  if (r.contains(p + "rewards/accuracies")) {
    add("  acc %.3f", r.at(p + "rewards/accuracies").get<double>());
    add("  margin %.4f", r.at(p + "rewards/margins").get<double>());
  }
  if (!eval) {
    add("  lr %.3g", r.at("lr").get<double>());
    add("  gnorm %.3f", r.at("grad_norm").get<double>());
    add("  %.0f tok/s", r.at("tokens_per_s").get<double>());
    add("  %.3f s/step", r.at("step_time_s").get<double>());
    if (r.contains("elapsed_s") && n < static_cast<int>(sizeof(text))) {  // the ETA at the latest steps' pace
      const double left = static_cast<double>(total_steps - r.at("step").get<int64_t>()) * r.at("step_time_s").get<double>();
      n += std::snprintf(text + n, sizeof(text) - static_cast<size_t>(n), "  elapsed %s  left %s",
                         duration_text(r.at("elapsed_s").get<double>()).c_str(), duration_text(left).c_str());
    }
    if (r.contains("mfu")) add("  mfu %.1f%%", 100.0 * r.at("mfu").get<double>());
    add("  mem %.2f GiB", r.at("peak_memory_gib").get<double>());
    if (r.at("skipped_steps").get<int64_t>() > 0) add("  skipped %.0f", r.at("skipped_steps").get<double>());
  } else if (r.contains("eval/samples")) {
    add("  (%.0f samples)", r.at("eval/samples").get<double>());
  }
  if (eval) {  // benchmark tasks: eval/<task>/<metric>
    for (const auto& [key, value] : r.items()) {
      const bool task_metric = key.rfind("eval/", 0) == 0 && std::count(key.begin(), key.end(), '/') == 2 &&
                               key.size() > 7 && key.compare(key.size() - 7, 7, "_stderr") != 0 && value.is_number();
      if (task_metric && n < static_cast<int>(sizeof(text))) {
        n += std::snprintf(text + n, sizeof(text) - static_cast<size_t>(n), "  %s %.4g", key.c_str() + 5, value.get<double>());
      }
    }
  }
  return text;
}

}  // namespace st
