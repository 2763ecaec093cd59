// Python's random.Random(seed) for the one call the harness makes of it, sample(): the same
// Mersenne Twister, seeded as CPython seeds it from an integer, and the same draws, so few-shot
// examples are the ones lm-evaluation-harness picks for the same seed and documents.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace st {

class PythonRandom {
 public:
  explicit PythonRandom(uint64_t seed);

  // random.sample(range(population), count): `count` distinct indices in Python's order.
  std::vector<size_t> sample(size_t population, size_t count);

 private:
  uint32_t next_word();                   // genrand_uint32
  uint32_t random_bits(int bits);         // getrandbits(bits), bits <= 32
  size_t random_below(size_t bound);      // _randbelow_with_getrandbits, bound < 2^32

  std::array<uint32_t, 624> state_{};
  size_t index_ = 625;
};

}  // namespace st
