// A fuzz target: one parser entry point run on arbitrary bytes. It returns the message of the
// typed error (st::Error) that refuses the input, or nullopt when the input is accepted; any
// other exception, a sanitizer report, a hang or an oversized allocation is a finding. The same
// targets run under libFuzzer (fuzz_main.cpp, -DST_BUILD_FUZZERS=ON with clang) and, on the
// regression inputs of earlier findings, in the unit tier (test_fuzz_regressions.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "util/errors.h"

namespace st::fuzz {

using Refusal = std::optional<std::string>;
using TargetFunction = Refusal (*)(const uint8_t* data, size_t size);

// Every target linked into this program, by name.
std::map<std::string, TargetFunction>& targets();

struct Registration {
  Registration(const char* name, TargetFunction run) { targets()[name] = run; }
};

// The message of the typed error `parse` throws, or nullopt when it returns.
template <typename Parse>
Refusal refusal(Parse&& parse) {
  try {
    parse();
  } catch (const Error& error) {
    return std::string(error.what());
  }
  return std::nullopt;
}

// `data` written to <this process's scratch directory>/<name> (created on first use, removed at
// exit); returns the path. Targets whose parser reads a file or directory go through it.
std::string scratch_file(const std::string& name, const uint8_t* data, size_t size);
std::string scratch_directory();

// tests/fuzz/fixtures/<name> (a tokenizer with every chat template's special tokens, ...).
std::string fixture(const std::string& name);

}  // namespace st::fuzz

// ST_FUZZ_TARGET(name) { ... return refusal([&] { ... }); }
#define ST_FUZZ_TARGET(name)                                                              \
  static ::st::fuzz::Refusal fuzz_target_##name(const uint8_t* data, size_t size);         \
  static const ::st::fuzz::Registration fuzz_registration_##name(#name, fuzz_target_##name); \
  static ::st::fuzz::Refusal fuzz_target_##name(const uint8_t* data, size_t size)
