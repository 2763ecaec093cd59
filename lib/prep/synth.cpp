#include "prep/synth.h"

#include <algorithm>
#include <cmath>
#include <random>

#include <nlohmann/json.hpp>

#include "util/errors.h"

namespace st {
namespace {

std::vector<int32_t> respond(const std::vector<int32_t>& content, SynthTask task) {
  std::vector<int32_t> out = content;
  if (task == SynthTask::reverse) std::reverse(out.begin(), out.end());
  if (task == SynthTask::sort) std::sort(out.begin(), out.end());
  return out;
}

// `sequence` repeated (or cut) to `length` tokens.
std::vector<int32_t> repeat_to(const std::vector<int32_t>& sequence, int64_t length) {
  std::vector<int32_t> out(static_cast<size_t>(length));
  for (size_t t = 0; t < out.size(); ++t) out[t] = sequence[t % sequence.size()];
  return out;
}

}  // namespace

LengthProfile length_profile(SynthLengths lengths) {
  switch (lengths) {
    case SynthLengths::ultrafeedback: return {{130.0, 0.8, 8, 1024}, {300.0, 0.6, 16, 1024}};
    case SynthLengths::long_prompt: return {{1500.0, 0.25, 512, 3072}, {200.0, 0.4, 32, 768}};
    case SynthLengths::uniform: break;
  }
  throw ConfigError("synth: lengths = uniform has no length profile (it uses --min-len / --max-len)");
}

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
    // Box-Muller from the pair's own engine: the same lengths on every platform.
    auto draw_length = [&](const LengthDistribution& d) {
      const double u1 = (static_cast<double>(engine() >> 11) + 1.0) / 9007199254740993.0;  // (0, 1]
      const double u2 = static_cast<double>(engine() >> 11) / 9007199254740992.0;
      const double normal = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      const auto length = static_cast<int64_t>(std::llround(d.median * std::exp(d.sigma * normal)));
      return std::clamp(length, d.least, d.most);
    };
    const bool uniform = o.lengths == SynthLengths::uniform;
    const LengthProfile profile = uniform ? LengthProfile{} : length_profile(o.lengths);
    const int64_t length = uniform ? draw(o.min_length, o.max_length) : draw_length(profile.prompt) - 1;
    std::vector<int32_t> content(length);
    for (auto& token : content) token = static_cast<int32_t>(draw(3, noise_first - 1));
    Pair pair;
    pair.prompt = {kSynthBos};
    pair.prompt.insert(pair.prompt.end(), content.begin(), content.end());
    const std::vector<int32_t> response = respond(content, o.task);
    pair.chosen = uniform ? response : repeat_to(response, draw_length(profile.response) - 1);
    if (o.kind != PairKind::sft) {
      pair.rejected = uniform ? pair.chosen : repeat_to(response, draw_length(profile.response) - 1);
      const auto rejected_length = static_cast<int64_t>(pair.rejected.size());
      const auto replaced = std::max<int64_t>(1, static_cast<int64_t>(o.corrupt * rejected_length + 0.5));
      for (int64_t k = 0; k < replaced; ++k) {
        auto& token = pair.rejected[draw(0, rejected_length - 1)];
        if (noise_first < o.vocab_size) {
          token = static_cast<int32_t>(draw(noise_first, o.vocab_size - 1));
        } else {  // any other token
          token = static_cast<int32_t>(3 + (token - 3 + draw(1, o.vocab_size - 4)) % (o.vocab_size - 3));
        }
      }
      pair.rejected.push_back(kSynthEos);
    }
    pair.chosen.push_back(kSynthEos);
    if (schema_of(o.kind).labelled) {  // unpaired: a third of the examples keep the corrupted response
      pair.label = draw(0, 2) != 0;
      if (!*pair.label) pair.chosen = pair.rejected;
      pair.rejected.clear();
    }
    if (!stores_completion(o.kind)) {  // a prompt alone; the chosen response is its record's answer
      pair.record = nlohmann::json{{"prompt_ids", pair.prompt}, {"answer_ids", pair.chosen}}.dump();
      pair.chosen.clear();
      pair.rejected.clear();
    }
    table.append(pair);
  }
  return table;
}

}  // namespace st
