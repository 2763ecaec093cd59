// Weighted dataset mixtures (dataset_mixture.h): the list syntax, exact proportions over 10k
// samples and in every prefix, each dataset walked whole before a repeat, and the order resumed
// from any cursor.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <set>

#include "data/dataset_mixture.h"
#include "data/sampler.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

TEST(DatasetMixture, ParsesWeightsAndRefusesBadLists) {
  const auto entries = parse_mixture(" /data/a:0.7, /data/b : 0.3 ,/data/c", "data.train");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].directory, "/data/a");
  EXPECT_DOUBLE_EQ(entries[0].weight, 0.7);
  EXPECT_EQ(entries[1].directory, "/data/b");
  EXPECT_DOUBLE_EQ(entries[1].weight, 0.3);
  EXPECT_DOUBLE_EQ(entries[2].weight, 1.0);
  EXPECT_EQ(parse_mixture("one", "data.train").size(), 1u);
  auto error = [](const std::string& text) {
    return st::testing::thrown_message<ConfigError>([&] { parse_mixture(text, "data.train"); });
  };
  EXPECT_NE(error("a:0.5,,b").find("has an empty entry"), std::string::npos);
  EXPECT_NE(error("a:0, b:1").find("weight '0' of 'a:0' must be a number > 0"), std::string::npos);
  EXPECT_NE(error("a:x").find("weight 'x'"), std::string::npos);
  EXPECT_NE(error("a:1, a:2").find("a is listed twice"), std::string::npos);
}

// Proportions within 1% over 10k samples, whatever the dataset sizes; every prefix within one
// sample of the weights.
TEST(DatasetMixture, ProportionsHoldOverTenThousandSamplesAndInEveryPrefix) {
  const std::vector<uint64_t> sizes = {1200, 7000, 1800};  // 10k samples per epoch
  const std::vector<double> weights = {0.5, 0.3, 0.2};
  const std::vector<uint64_t> order = mixture_epoch_order(sizes, weights, 3, 0, true);
  ASSERT_EQ(order.size(), 10000u);
  std::vector<uint64_t> seen(3, 0);
  for (size_t j = 0; j < order.size(); ++j) {
    const size_t k = order[j] < 1200 ? 0 : order[j] < 8200 ? 1 : 2;
    seen[k] += 1;
    for (size_t d = 0; d < 3; ++d) {
      const double expected = weights[d] * static_cast<double>(j + 1);
      ASSERT_LE(std::abs(static_cast<double>(seen[d]) - expected), 1.0) << "prefix " << j + 1 << " dataset " << d;
    }
  }
  for (size_t d = 0; d < 3; ++d) EXPECT_NEAR(static_cast<double>(seen[d]) / 10000.0, weights[d], 0.01) << d;
  EXPECT_EQ(mixture_counts(sizes, weights), (std::vector<uint64_t>{5000, 3000, 2000}));
}

// Dataset 0 (weight 0.5 of 10k = 5000 draws over 1200 pairs) is repeated: every pass visits all
// 1200 before any twice; dataset 1 (3000 of 7000) continues next epoch with unseen pairs.
TEST(DatasetMixture, PassesAreWholeAndContinueAcrossEpochs) {
  const std::vector<uint64_t> sizes = {1200, 7000, 1800};
  const std::vector<double> weights = {0.5, 0.3, 0.2};
  std::vector<uint64_t> stream0, stream1;
  for (uint64_t epoch = 0; epoch < 2; ++epoch) {
    for (uint64_t index : mixture_epoch_order(sizes, weights, 3, epoch, true)) {
      if (index < 1200) stream0.push_back(index);
      if (index >= 1200 && index < 8200) stream1.push_back(index);
    }
  }
  for (size_t pass = 0; pass + 1200 <= stream0.size(); pass += 1200) {
    const std::set<uint64_t> distinct(stream0.begin() + static_cast<int64_t>(pass),
                                      stream0.begin() + static_cast<int64_t>(pass + 1200));
    EXPECT_EQ(distinct.size(), 1200u) << "pass at " << pass;
  }
  ASSERT_EQ(stream1.size(), 6000u);
  EXPECT_EQ(std::set<uint64_t>(stream1.begin(), stream1.end()).size(), 6000u) << "no repeat within 7000";
  EXPECT_NE(mixture_epoch_order(sizes, weights, 3, 0, true), mixture_epoch_order(sizes, weights, 4, 0, true));
  EXPECT_EQ(mixture_epoch_order(sizes, weights, 3, 1, true), mixture_epoch_order(sizes, weights, 3, 1, true));
}

// The sampler over a mixture: batches from any cursor are the slices of the epoch's order, so a
// resumed run (any rank count) continues exactly; one dataset is the plain sampler.
TEST(DatasetMixture, SamplerResumesFromAnyCursor) {
  const GlobalSampler mixed({30, 50}, {0.25, 0.75}, 7, 11, true);
  std::vector<uint64_t> walked;
  SamplerCursor cursor;
  while (cursor.epoch < 2) {
    const GlobalBatch batch = mixed.batch_at(cursor);
    const GlobalSampler fresh({30, 50}, {0.25, 0.75}, 7, 11, true);  // a resumed process
    EXPECT_EQ(fresh.batch_at(cursor).indices, batch.indices);
    walked.insert(walked.end(), batch.indices.begin(), batch.indices.end());
    cursor = batch.next;
  }
  std::vector<uint64_t> expected = mixture_epoch_order({30, 50}, {0.25, 0.75}, 11, 0, true);
  const std::vector<uint64_t> second = mixture_epoch_order({30, 50}, {0.25, 0.75}, 11, 1, true);
  expected.insert(expected.end(), second.begin(), second.end());
  EXPECT_EQ(walked, expected);
  const GlobalSampler one({80}, {1.0}, 7, 11, true);
  EXPECT_EQ(one.epoch_order(0), GlobalSampler(80, 7, 11, true).epoch_order(0));
}

}  // namespace
}  // namespace st
