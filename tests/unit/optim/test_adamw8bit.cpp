// 8-bit AdamW in the sharded optimizer: the same whole-unit gradients give the same masters,
// codes and absmax on any number of shards (blocks never span two ranks), equal to the host
// step of adamw8bit.h on the whole unit; padding stays zero; the state takes 2 bytes per
// element plus an absmax per block; coding fp32 moments and decoding them back round-trips
// within the map's resolution; the lookup table codes as the search does.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "fsdp/unit_layout.h"
#include "hf/presets.h"
#include "optim/adamw_host.h"
#include "optim/sharded_adamw.h"
#include "util/dynamic_quant.h"

namespace st {
namespace {

struct WholeUnits {
  std::vector<UnitLayout> units;  // group size 1
  std::vector<at::Tensor> start;  // [padded_numel] per unit, zero padding
  std::vector<std::vector<at::Tensor>> grads;  // per step, per unit, zero on the padding
};

// Seeded weights and `steps` gradients over the whole units, with zero room past each unit for
// the padding of up to 4 shards.
WholeUnits whole_units(int steps) {
  WholeUnits whole;
  whole.units = build_unit_layouts(preset_config("debug"), 1, 256);
  at::manual_seed(11);
  for (const UnitLayout& unit : whole.units) {
    const int64_t room = unit.numel + 4 * 256;  // covers the padding of up to 4 shards
    whole.start.push_back(at::cat({at::randn({unit.numel}), at::zeros({room - unit.numel})}));
  }
  for (int step = 0; step < steps; ++step) {
    std::vector<at::Tensor> grads;
    for (size_t u = 0; u < whole.units.size(); ++u) {
      const at::Tensor g = at::randn({whole.units[u].numel}) * (step % 3 == 0 ? 1e-3 : 1.0);
      grads.push_back(at::cat({g, at::zeros({whole.start[u].numel() - whole.units[u].numel})}));
    }
    whole.grads.push_back(grads);
  }
  return whole;
}

struct ShardedRun {
  std::vector<at::Tensor> masters;
  ShardedAdamW optimizer;
};

// Shard `rank` of `group` trained over the steps of `whole`.
ShardedRun run_shard(const WholeUnits& whole, const OptimOptions& options, int group, int rank) {
  const std::vector<UnitLayout> units = build_unit_layouts(preset_config("debug"), group, 256);
  std::vector<at::Tensor> masters;
  for (size_t u = 0; u < units.size(); ++u) {
    masters.push_back(whole.start[u].narrow(0, units[u].shard_offset(rank), units[u].shard_numel).clone());
  }
  ShardedRun run{masters, ShardedAdamW(weight_decay_ranges(units, rank), options, masters)};
  for (size_t step = 0; step < whole.grads.size(); ++step) {
    std::vector<at::Tensor> grads;
    for (size_t u = 0; u < units.size(); ++u) {
      grads.push_back(whole.grads[step][u].narrow(0, units[u].shard_offset(rank), units[u].shard_numel).contiguous());
    }
    const at::Tensor clip = at::full({1}, step == 1 ? 0.5 : 1.0);
    run.optimizer.step(run.masters, grads, 1e-3 * static_cast<double>(step + 1), clip);
  }
  return run;
}

OptimOptions eight_bit() {
  OptimOptions options;
  options.name = OptimizerName::adamw8bit;
  options.weight_decay = 0.1;
  return options;
}

TEST(AdamW8bit, AnyShardCountGivesTheWholeUnitsNumbersBitForBit) {
  const WholeUnits whole = whole_units(6);
  ShardedRun one = run_shard(whole, eight_bit(), 1, 0);
  for (int group = 2; group <= 4; ++group) {
    for (int rank = 0; rank < group; ++rank) {
      ShardedRun part = run_shard(whole, eight_bit(), group, rank);
      const std::vector<UnitLayout> units = build_unit_layouts(preset_config("debug"), group, 256);
      for (size_t u = 0; u < units.size(); ++u) {
        const int64_t first = units[u].shard_offset(rank), n = std::min(units[u].shard_numel, one.masters[u].numel() - first);
        if (n <= 0) continue;
        const Moments8bit& got = part.optimizer.moments8bit()[u];
        const Moments8bit& want = one.optimizer.moments8bit()[u];
        const std::string where = units[u].name + ", rank " + std::to_string(rank) + " of " + std::to_string(group);
        EXPECT_TRUE(at::equal(part.masters[u].narrow(0, 0, n), one.masters[u].narrow(0, first, n))) << where;
        EXPECT_TRUE(at::equal(got.m_codes.narrow(0, 0, n), want.m_codes.narrow(0, first, n))) << where;
        EXPECT_TRUE(at::equal(got.v_codes.narrow(0, 0, n), want.v_codes.narrow(0, first, n))) << where;
        EXPECT_TRUE(at::equal(got.m_absmax.narrow(0, 0, n / 256), want.m_absmax.narrow(0, first / 256, n / 256))) << where;
        EXPECT_TRUE(at::equal(got.v_absmax.narrow(0, 0, n / 256), want.v_absmax.narrow(0, first / 256, n / 256))) << where;
      }
    }
  }
}

TEST(AdamW8bit, EqualsTheHostStepAndKeepsThePaddingAtZero) {
  const WholeUnits whole = whole_units(3);
  ShardedRun run = run_shard(whole, eight_bit(), 1, 0);
  const std::vector<UnitLayout> units = build_unit_layouts(preset_config("debug"), 1, 256);
  const DecayedRanges decayed = weight_decay_ranges(units, 0);
  for (size_t u = 0; u < units.size(); ++u) {
    at::Tensor master = whole.start[u].narrow(0, 0, units[u].shard_numel).clone();
    Moments8bit moments = Moments8bit::zeros(master.numel());
    for (size_t step = 0; step < whole.grads.size(); ++step) {
      const StAdamWScalars scalars = adamw_scalars(eight_bit(), 1e-3 * static_cast<double>(step + 1), static_cast<int64_t>(step + 1));
      const at::Tensor grad = whole.grads[step][u].narrow(0, 0, master.numel()).contiguous();
      adamw8bit_host_step(master, moments, grad, step == 1 ? 0.5f : 1.0f, decayed[u], scalars);
    }
    EXPECT_TRUE(at::equal(master, run.masters[u])) << units[u].name;
    EXPECT_TRUE(at::equal(moments.m_codes, run.optimizer.moments8bit()[u].m_codes)) << units[u].name;
    const int64_t padding = units[u].padded_numel - units[u].numel;
    EXPECT_TRUE(at::equal(run.masters[u].narrow(0, units[u].numel, padding), at::zeros({padding}))) << units[u].name;
    EXPECT_TRUE((run.optimizer.moments8bit()[u].exp_avg().narrow(0, units[u].numel, padding) == 0).all().item<bool>());
  }
  int64_t elements = 0;
  for (const UnitLayout& unit : units) elements += unit.shard_numel;
  EXPECT_EQ(run.optimizer.state_bytes(), 2 * elements + 8 * (elements / 256));
  EXPECT_TRUE(run.optimizer.exp_avg().empty());
}

TEST(AdamW8bit, CodedMomentsDecodeWithinTheMapsResolution) {
  at::manual_seed(3);
  const at::Tensor m = at::randn({1000}) * 1e-3, v = at::rand({1000}) * 1e-5;
  const Moments8bit coded = Moments8bit::quantize(m, v);
  EXPECT_EQ(coded.m_absmax.numel(), 4);
  // The dynamic map's steps are at most ~10% of a value near the block's absmax, finer below.
  const at::Tensor m_error = (coded.exp_avg() - m).abs() / coded.m_absmax.repeat_interleave(256).narrow(0, 0, 1000);
  const at::Tensor v_error = (coded.exp_avg_sq() - v).abs() / coded.v_absmax.repeat_interleave(256).narrow(0, 0, 1000);
  EXPECT_LT(m_error.max().item<float>(), 0.05f);
  EXPECT_LT(v_error.max().item<float>(), 0.05f);
  EXPECT_TRUE(at::equal(coded.m_absmax, at::stack({m.narrow(0, 0, 256).abs().max(), m.narrow(0, 256, 256).abs().max(),
                                                   m.narrow(0, 512, 256).abs().max(), m.narrow(0, 768, 232).abs().max()})));
  const Moments8bit zero = Moments8bit::zeros(512);
  EXPECT_TRUE(at::equal(zero.exp_avg(), at::zeros({512})));
  for (DynamicMap map : {DynamicMap::signed_values, DynamicMap::unsigned_values}) {
    EXPECT_EQ(dynamic_map(map)[zero_code(map)].item<float>(), 0.0f);
    EXPECT_EQ(dynamic_code(dynamic_map(map).contiguous().data_ptr<float>(), 0.0f), zero_code(map));
  }
}

// The table that codes most floats by lookup gives the search's code everywhere: next to every
// map value and every midpoint between two (where codes change), on random values of a
// moment's range and on random bit patterns (other exponents, infinities, NaN).
TEST(DynamicCodes, TheTableEqualsTheSearch) {
  std::mt19937 random(5);
  for (DynamicMap kind : {DynamicMap::signed_values, DynamicMap::unsigned_values}) {
    const at::Tensor map_tensor = dynamic_map(kind).contiguous();
    const float* map = map_tensor.data_ptr<float>();
    std::vector<float> xs;
    for (int k = 0; k < 256; ++k) {
      for (const float center : {map[k], k < 255 ? (map[k] + map[k + 1]) * 0.5f : map[k]}) {
        float below = center, above = center;
        for (int step = 0; step < 4; ++step) {
          xs.insert(xs.end(), {below, above, -below, -above});
          below = std::nextafter(below, -2.0f);
          above = std::nextafter(above, 2.0f);
        }
      }
    }
    std::uniform_real_distribution<float> moment(-1.5f, 1.5f);
    for (int i = 0; i < 2'000'000; ++i) xs.push_back(moment(random));
    for (int i = 0; i < 2'000'000; ++i) {
      const uint32_t bits = static_cast<uint32_t>(random());
      float x;
      std::memcpy(&x, &bits, sizeof(x));
      xs.push_back(x);
    }
    int64_t differ = 0;
    for (const float x : xs) differ += dynamic_code(kind, x) != dynamic_code(map, x);
    EXPECT_EQ(differ, 0) << "of " << xs.size() << " values";
  }
}

TEST(AdamW8bit, RefusesShardsThatAreNotWholeBlocks) {
  const std::vector<at::Tensor> masters{at::zeros({1000})};
  EXPECT_THROW(ShardedAdamW(DecayedRanges(1), eight_bit(), masters), ConfigError);
  EXPECT_EQ(shard_multiple_of(OptimizerName::adamw8bit), 256);
  EXPECT_EQ(shard_multiple_of(OptimizerName::adamw), 1);
}

}  // namespace
}  // namespace st
