#include "prep/synth.h"

#include <algorithm>
#include <random>

#include "util/errors.h"

namespace st {
namespace {

std::vector<int32_t> respond(const std::vector<int32_t>& content, SynthTask task) {
  std::vector<int32_t> out = content;
  if (task == SynthTask::reverse) std::reverse(out.begin(), out.end());
  if (task == SynthTask::sort) std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

PairTable synthesize_pairs(const SynthOptions& o, uint64_t first, uint64_t count) {
  if (o.vocab_size < 8 || o.min_length < 1 || o.max_length < o.min_length || o.corrupt <= 0 ||
      o.corrupt > 1) {
    throw ConfigError("synth: need vocab >= 8, 1 <= min-len <= max-len, 0 < corrupt <= 1");
  }
  if (o.noise_band < 0 || o.noise_band > 0.5) throw ConfigError("synth: --noise-band must be in [0, 0.5]");
  const auto noise_first = o.vocab_size - static_cast<int64_t>(o.noise_band * o.vocab_size);
  PairTable table;
  table.kind = o.kind;
  for (uint64_t i = first; i < first + count; ++i) {
    std::mt19937_64 engine(o.seed * 0x9e3779b97f4a7c15ull + i * 0xd1b54a32d192ed03ull + 7);
    auto draw = [&](int64_t low, int64_t high) {  // inclusive; tiny bias is irrelevant here
      return low + static_cast<int64_t>(engine() % static_cast<uint64_t>(high - low + 1));
    };
    const int64_t length = draw(o.min_length, o.max_length);
    std::vector<int32_t> content(length);
    for (auto& token : content) token = static_cast<int32_t>(draw(3, noise_first - 1));
    Pair pair;
    pair.prompt = {kSynthBos};
    pair.prompt.insert(pair.prompt.end(), content.begin(), content.end());
    pair.chosen = respond(content, o.task);
    if (o.kind == PairKind::dpo) {
      pair.rejected = pair.chosen;
      const auto replaced = std::max<int64_t>(1, static_cast<int64_t>(o.corrupt * length + 0.5));
      for (int64_t k = 0; k < replaced; ++k) {
        auto& token = pair.rejected[draw(0, length - 1)];
        if (noise_first < o.vocab_size) {
          token = static_cast<int32_t>(draw(noise_first, o.vocab_size - 1));
        } else {  // any other token
          token = static_cast<int32_t>(3 + (token - 3 + draw(1, o.vocab_size - 4)) % (o.vocab_size - 3));
        }
      }
      pair.rejected.push_back(kSynthEos);
    }
    pair.chosen.push_back(kSynthEos);
    table.append(pair);
  }
  return table;
}

}  // namespace st
