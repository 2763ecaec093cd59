// tokenizer.json: vocabulary, merges, normalizer, pre-tokenizer regexes, added tokens; the
// tokenizer it gives then encodes and decodes a fixed text.
#include "fuzz_target.h"
#include "tokenizer/tokenizer.h"

ST_FUZZ_TARGET(tokenizer_json) {
  const std::string path = st::fuzz::scratch_file("tokenizer.json", data, size);
  return st::fuzz::refusal([&] {
    const st::Tokenizer tokenizer = st::Tokenizer::from_file(path);
    const std::vector<int32_t> ids = tokenizer.encode("Hello world! <|end|> 12 ünïcode\n\t");
    (void)tokenizer.decode(std::vector<int64_t>(ids.begin(), ids.end()), false);
  });
}
