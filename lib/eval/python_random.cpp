#include "eval/python_random.h"

#include <cmath>
#include <stdexcept>
#include <unordered_set>

namespace st {
namespace {

constexpr size_t kN = 624, kM = 397;

}  // namespace

// CPython's random_seed: the seed's 32-bit words, least significant first ([0] for 0), through
// MT19937's init_by_array.
PythonRandom::PythonRandom(uint64_t seed) {
  std::vector<uint32_t> key;
  for (uint64_t rest = seed; rest != 0; rest >>= 32) key.push_back(static_cast<uint32_t>(rest));
  if (key.empty()) key.push_back(0);

  state_[0] = 19650218u;
  for (size_t i = 1; i < kN; ++i) {
    state_[i] = 1812433253u * (state_[i - 1] ^ (state_[i - 1] >> 30)) + static_cast<uint32_t>(i);
  }
  size_t i = 1, j = 0;
  for (size_t k = std::max(kN, key.size()); k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    if (++i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
    if (++j >= key.size()) j = 0;
  }
  for (size_t k = kN - 1; k > 0; --k) {
    state_[i] = (state_[i] ^ ((state_[i - 1] ^ (state_[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    if (++i >= kN) {
      state_[0] = state_[kN - 1];
      i = 1;
    }
  }
  state_[0] = 0x80000000u;
  index_ = kN;
}

uint32_t PythonRandom::next_word() {
  if (index_ >= kN) {
    for (size_t k = 0; k < kN; ++k) {
      const uint32_t y = (state_[k] & 0x80000000u) | (state_[(k + 1) % kN] & 0x7fffffffu);
      state_[k] = state_[(k + kM) % kN] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0u);
    }
    index_ = 0;
  }
  uint32_t y = state_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

uint32_t PythonRandom::random_bits(int bits) { return bits == 0 ? 0 : next_word() >> (32 - bits); }

size_t PythonRandom::random_below(size_t bound) {
  if (bound == 0 || bound > 0xffffffffu) throw std::invalid_argument("PythonRandom: bound outside [1, 2^32]");
  int bits = 0;
  while ((size_t{1} << bits) <= bound) ++bits;  // bound.bit_length()
  size_t r = random_bits(bits);
  while (r >= bound) r = random_bits(bits);
  return r;
}

// CPython's Random.sample: a shrinking pool for small populations, rejection from a set else.
std::vector<size_t> PythonRandom::sample(size_t population, size_t count) {
  if (count > population) throw std::invalid_argument("PythonRandom::sample: count larger than the population");
  std::vector<size_t> result(count);
  size_t set_size = 21;
  if (count > 5) set_size += static_cast<size_t>(std::pow(4.0, std::ceil(std::log(static_cast<double>(count * 3)) / std::log(4.0))));
  if (population <= set_size) {
    std::vector<size_t> pool(population);
    for (size_t i = 0; i < population; ++i) pool[i] = i;
    for (size_t i = 0; i < count; ++i) {
      const size_t j = random_below(population - i);
      result[i] = pool[j];
      pool[j] = pool[population - i - 1];
    }
  } else {
    std::unordered_set<size_t> selected;
    for (size_t i = 0; i < count; ++i) {
      size_t j = random_below(population);
      while (selected.count(j)) j = random_below(population);
      selected.insert(j);
      result[i] = j;
    }
  }
  return result;
}

}  // namespace st
