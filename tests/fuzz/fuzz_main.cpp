// libFuzzer's entry for a program built from one target file: refusals are the parser's
// answer, not findings, so the result is dropped (ST_FUZZ_PRINT=1 prints it, to write a
// regression input's .expect file).
#include <cstdio>
#include <cstdlib>

#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const st::fuzz::TargetFunction run = st::fuzz::targets().begin()->second;
  static const bool print = std::getenv("ST_FUZZ_PRINT") != nullptr;
  const st::fuzz::Refusal refusal = run(data, size);
  if (print) std::fprintf(stderr, "refusal: %s\n", refusal ? refusal->c_str() : "none (accepted)");
  return 0;
}
