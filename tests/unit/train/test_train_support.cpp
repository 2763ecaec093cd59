// The pieces around the training loop: FLOPs, the held-out split, metric records and the SVG plot.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "data/holdout.h"
#include "hf/presets.h"
#include "scratch_dir.h"
#include "train/flops.h"
#include "train/metrics_plot.h"
#include "train/objective.h"
#include "train/train_metrics.h"
#include "util/errors.h"

namespace st {
namespace {

TEST(Flops, ForwardIsTwoNPlusAttention) {
  const ModelConfig config = preset_config("debug");  // untied: the embedding is a lookup
  const double matmul = static_cast<double>(config.parameter_count() - config.vocab_size * config.hidden_size);
  const double attention = 4.0 * config.num_hidden_layers * config.q_size() * 10.0 * 10.0;
  EXPECT_DOUBLE_EQ(forward_flops(config, 10), 2.0 * matmul * 10 + attention);
  EXPECT_DOUBLE_EQ(training_flops(config, {10, 10}, false), 6.0 * forward_flops(config, 10));
  EXPECT_DOUBLE_EQ(training_flops(config, {10}, true), 4.0 * forward_flops(config, 10));
  // Frozen weights (LoRA): no weight-gradient matmuls, 2 N n less; attention's backward stays.
  EXPECT_DOUBLE_EQ(training_flops(config, {10}, false, true), 4.0 * matmul * 10 + 3.0 * attention);
}

TEST(Flops, TiedHeadCountsTheTableOnce) {
  const ModelConfig tied = preset_config("llama-3.2-1b");
  ASSERT_TRUE(tied.tie_word_embeddings);
  EXPECT_DOUBLE_EQ(forward_flops(tied, 1) - 4.0 * tied.num_hidden_layers * tied.q_size(),
                   2.0 * static_cast<double>(tied.parameter_count()));
}

TEST(Flops, KnownPeaks) {
  EXPECT_EQ(known_peak_tflops("NVIDIA H100 80GB HBM3", ComputeDtype::bf16), 989.4);
  EXPECT_EQ(known_peak_tflops("NVIDIA H100 PCIe", ComputeDtype::bf16), 756.0);
  EXPECT_EQ(known_peak_tflops("NVIDIA H100 80GB HBM3", ComputeDtype::fp32), 0.0);
  EXPECT_EQ(known_peak_tflops("cpu", ComputeDtype::bf16), 0.0);
}

TEST(HoldOut, DisjointCompleteAndSeeded) {
  const IndexSplit split = hold_out(1000, 0.1, 7);
  EXPECT_EQ(split.val.size(), 100u);
  EXPECT_EQ(split.train.size(), 900u);
  std::set<uint64_t> all(split.train.begin(), split.train.end());
  all.insert(split.val.begin(), split.val.end());
  EXPECT_EQ(all.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(split.val.begin(), split.val.end()));
  EXPECT_EQ(hold_out(1000, 0.1, 7).val, split.val);
  EXPECT_NE(hold_out(1000, 0.1, 8).val, split.val);
  EXPECT_EQ(hold_out(10, 0.01, 1).val.size(), 1u) << "a positive fraction holds out at least one pair";
  EXPECT_EQ(hold_out(10, 0.0, 1).train.size(), 10u);
}

TEST(TrainMetrics, LossMetricsFromSums) {
  LossSums sums;
  sums.loss = 3.0, sums.pairs = 4.0, sums.target_tokens = 30.0;
  sums.chosen_rewards = 2.0, sums.rejected_rewards = -2.0, sums.correct = 3.0;
  const auto dpo = loss_metrics(objective_for(Stage::dpo), sums, "eval/");
  EXPECT_DOUBLE_EQ(dpo.at("eval/loss").get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(dpo.at("eval/rewards/accuracies").get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(dpo.at("eval/rewards/margins").get<double>(), 1.0);
  const auto sft = loss_metrics(objective_for(Stage::sft), sums, "");
  EXPECT_DOUBLE_EQ(sft.at("loss").get<double>(), 0.1) << "SFT loss is per completion token";
  EXPECT_FALSE(sft.contains("rewards/accuracies"));
  EXPECT_FALSE(sft.contains("aux_loss")) << "no router loss without one";
}

// A mixture-of-experts run: aux_loss is the mean over the forwards, and the loss metric is the
// loss as trained, with the coefficient x that mean (as TRL logs both).
TEST(TrainMetrics, RouterLossIsAMeanPerForwardAndPartOfTheLoss) {
  LossSums sums;
  sums.loss = 3.0, sums.pairs = 4.0;
  sums.router_loss = 5.0, sums.weighted_router_loss = 0.05, sums.router_forwards = 2.0;
  const auto dpo = loss_metrics(objective_for(Stage::dpo), sums, "");
  EXPECT_DOUBLE_EQ(dpo.at("aux_loss").get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(dpo.at("loss").get<double>(), 0.75 + 0.025);
  EXPECT_DOUBLE_EQ(loss_summary(objective_for(Stage::dpo), sums).loss, 0.75 + 0.025);
}

// Per-test scratch dir: ctest runs each case as its own process, in parallel.
class MetricsPlot : public st::testing::ScratchDirTest {
 protected:
  std::string path;
  void write(const std::string& text) {
    path = (dir_ / "metrics.jsonl").string();
    std::ofstream(path) << text;
  }
};

TEST_F(MetricsPlot, PanelsFromTrainAndEvalRecords) {
  write("{\"step\":5,\"loss\":0.69,\"rewards/accuracies\":0.5}\n{\"step\":10,\"loss\":0.5,\"rewards/accuracies\":0.9}\n"
        "{\"step\":10,\"eval/loss\":0.55,\"eval/rewards/accuracies\":0.95}\n");
  const auto panels = read_metric_panels(path);
  ASSERT_EQ(panels.size(), 2u);
  EXPECT_EQ(panels[0].title, "loss");
  ASSERT_EQ(panels[0].series.size(), 2u);
  EXPECT_EQ(panels[0].series[0].points.size(), 2u);
  EXPECT_EQ(panels[0].series[1].points[0], (std::pair<double, double>{10, 0.55}));
  const std::string svg = render_svg(panels, "run <x>");
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("run &lt;x&gt;"), std::string::npos) << "titles are escaped";
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

TEST_F(MetricsPlot, SftHasOnlyTheLossPanel) {
  write("{\"step\":1,\"loss\":2.0}\n{\"step\":2,\"loss\":1.5}\n");
  EXPECT_EQ(read_metric_panels(path).size(), 1u);
}

TEST_F(MetricsPlot, MalformedLineIsNamed) {
  write("{\"step\":1,\"loss\":2.0}\n{\"step\":2,\"loss\":\n");
  try {
    read_metric_panels(path);
    FAIL() << "no error";
  } catch (const DataError& error) {
    EXPECT_NE(std::string(error.what()).find(path + ":2:"), std::string::npos) << error.what();
  }
  write("{\"step\":1,\"lr\":0.1}\n");
  EXPECT_THROW(read_metric_panels(path), DataError);
  EXPECT_THROW(read_metric_panels(path + ".missing"), DataError);
}

}  // namespace
}  // namespace st
