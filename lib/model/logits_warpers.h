// What sampling draws from: next-token logits warped as transformers' generate does with
// do_sample (GenerationMixin._get_logits_processor, in its order): divided by the temperature,
// then cut to the top_k, to the top_p nucleus, and to the tokens whose probability is at least
// min_p times the most likely one's; a cut token's logit is -inf, and the most likely token
// always stays. Shared by generate and the online objectives' rollouts.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace st {

struct SamplingOptions {
  double temperature = 0.0;  // 0: greedy (argmax); else logits / temperature are sampled
  int64_t top_k = 0;         // sample among the k most likely tokens; 0: all
  double top_p = 1.0;        // ... among the fewest whose probabilities reach top_p (nucleus)
  uint64_t seed = 0;
  // Last, so that {temperature, top_k, top_p, seed} still reads as it did before min_p.
  double min_p = 0.0;        // ... among those at least min_p x the most likely one's probability; 0: all
};

// logits [.., V] (fp32) -> the warped logits [.., V]; `sampling.temperature` must be > 0.
at::Tensor warped_logits(const at::Tensor& logits, const SamplingOptions& sampling);

}  // namespace st
