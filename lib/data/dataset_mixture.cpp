#include "data/dataset_mixture.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

#include "data/sampler.h"
#include "util/errors.h"
#include "util/text.h"

namespace st {
namespace {

// A list's items lose spaces and tabs only.
std::string item_text(const std::string& text) { return trimmed(text, " \t"); }

// Dataset k's permutation for its `cycle`-th pass: a stream of its own per (seed, k).
std::vector<uint64_t> pass_order(uint64_t size, uint64_t seed, size_t k, uint64_t cycle, bool shuffle) {
  if (!shuffle) {
    std::vector<uint64_t> order(size);
    std::iota(order.begin(), order.end(), 0);
    return order;
  }
  const GlobalSampler sampler(size, 1, seed * 0x100000001b3ull + k + 1, true);
  return sampler.epoch_order(cycle);
}

}  // namespace

std::vector<MixtureEntry> parse_mixture(const std::string& text, const std::string& key) {
  std::vector<MixtureEntry> entries;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string item = item_text(text.substr(start, comma - start));
    start = comma + 1;
    if (item.empty()) throw ConfigError(key + " = '" + text + "' has an empty entry; write dir or dir_a:0.7, dir_b:0.3");
    MixtureEntry entry{item, 1.0};
    const size_t colon = item.rfind(':');
    if (colon != std::string::npos) {
      const std::string weight = item_text(item.substr(colon + 1));
      char* end = nullptr;
      const double value = std::strtod(weight.c_str(), &end);
      if (weight.empty() || *end != '\0' || !std::isfinite(value) || value <= 0.0) {
        throw ConfigError(key + ": weight '" + weight + "' of '" + item + "' must be a number > 0");
      }
      entry = {item_text(item.substr(0, colon)), value};
    }
    if (!seen.insert(entry.directory).second) {
      throw ConfigError(key + ": " + entry.directory + " is listed twice; give it one weight");
    }
    entries.push_back(entry);
  }
  return entries;
}

std::vector<uint64_t> mixture_counts(const std::vector<uint64_t>& sizes, const std::vector<double>& weights) {
  const uint64_t total = std::accumulate(sizes.begin(), sizes.end(), uint64_t{0});
  const double weight_sum = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<uint64_t> counts(sizes.size());
  std::vector<std::pair<double, size_t>> remainders;
  uint64_t given = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const double share = static_cast<double>(total) * weights[k] / weight_sum;
    counts[k] = static_cast<uint64_t>(std::floor(share));
    given += counts[k];
    remainders.push_back({share - std::floor(share), k});
  }
  std::stable_sort(remainders.begin(), remainders.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < total; ++i, ++given) counts[remainders[i % remainders.size()].second] += 1;
  return counts;
}

std::vector<uint64_t> mixture_epoch_order(const std::vector<uint64_t>& sizes, const std::vector<double>& weights,
                                          uint64_t seed, uint64_t epoch, bool shuffle) {
  const std::vector<uint64_t> counts = mixture_counts(sizes, weights);
  const uint64_t total = std::accumulate(counts.begin(), counts.end(), uint64_t{0});
  std::vector<uint64_t> base(sizes.size(), 0);
  for (size_t k = 1; k < sizes.size(); ++k) base[k] = base[k - 1] + sizes[k - 1];
  // Dataset k's draws of this epoch: positions [epoch x counts[k], (epoch + 1) x counts[k]) of
  // its endless stream of passes.
  std::vector<std::vector<uint64_t>> draws(sizes.size());
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (sizes[k] == 0) continue;
    uint64_t position = epoch * counts[k];
    uint64_t cached_cycle = UINT64_MAX;
    std::vector<uint64_t> pass;
    for (uint64_t d = 0; d < counts[k]; ++d, ++position) {
      const uint64_t cycle = position / sizes[k];
      if (cycle != cached_cycle) {
        pass = pass_order(sizes[k], seed, k, cycle, shuffle);
        cached_cycle = cycle;
      }
      draws[k].push_back(base[k] + pass[position % sizes[k]]);
    }
  }
  // Interleave: position j goes to the dataset furthest behind its share of j + 1.
  std::vector<uint64_t> order;
  order.reserve(total);
  std::vector<uint64_t> taken(sizes.size(), 0);
  for (uint64_t j = 0; j < total; ++j) {
    size_t best = 0;
    double best_deficit = -1e300;
    for (size_t k = 0; k < sizes.size(); ++k) {
      if (taken[k] == counts[k]) continue;
      const double deficit = static_cast<double>(counts[k]) * static_cast<double>(j + 1) / static_cast<double>(total) -
                             static_cast<double>(taken[k]);
      if (deficit > best_deficit) {
        best_deficit = deficit;
        best = k;
      }
    }
    order.push_back(draws[best][taken[best]++]);
  }
  return order;
}

}  // namespace st
