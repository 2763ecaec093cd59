// Arbitrary text through a fixed tokenizer (fixtures/tokenizer.json): added tokens, the Split
// regex, byte-level BPE, then decode.
#include "fuzz_target.h"
#include "tokenizer/tokenizer.h"

ST_FUZZ_TARGET(tokenizer_encode) {
  static const st::Tokenizer tokenizer = st::Tokenizer::from_file(st::fuzz::fixture("tokenizer.json"));
  return st::fuzz::refusal([&] {
    const std::vector<int32_t> ids = tokenizer.encode(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)tokenizer.decode(std::vector<int64_t>(ids.begin(), ids.end()), false);
  });
}
