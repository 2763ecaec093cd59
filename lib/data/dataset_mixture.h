// Weighted dataset mixtures (data.train = "a:0.7, b:0.3"): the list parsed, and the visiting
// order of an epoch. An epoch draws as many samples as the datasets hold together; dataset k
// gets round(weight share x that) of them, interleaved so that every prefix of the epoch is
// within one sample of the weights, and its draws walk a permutation of it that continues
// across epochs (a dataset over-weighted is repeated whole before any sample is seen twice).
// The order depends only on (sizes, weights, seed, epoch), never on the rank count, so resume
// and resharded resume continue it exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace st {

struct MixtureEntry {
  std::string directory;
  double weight = 1.0;
};

// "dir" or "dir_a:0.7, dir_b:0.3" (weights > 0, any scale; a missing one is 1). Throws
// ConfigError naming `key` for an empty entry, a bad or non-positive weight, or a repeat.
std::vector<MixtureEntry> parse_mixture(const std::string& text, const std::string& key);

// Samples of each dataset in an epoch of sum(sizes) samples: largest remainders of the shares.
std::vector<uint64_t> mixture_counts(const std::vector<uint64_t>& sizes, const std::vector<double>& weights);

// Epoch `epoch`'s order over the concatenated index space (dataset k's indices start at
// sizes[0] + ... + sizes[k - 1]).
std::vector<uint64_t> mixture_epoch_order(const std::vector<uint64_t>& sizes, const std::vector<double>& weights,
                                          uint64_t seed, uint64_t epoch, bool shuffle);

}  // namespace st
