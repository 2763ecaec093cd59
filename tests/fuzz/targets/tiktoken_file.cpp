// A tiktoken rank file (Llama 3's tokenizer.model): base64 tokens and their ranks; the tokenizer
// it gives then encodes and decodes a fixed text.
#include "fuzz_target.h"
#include "tokenizer/tokenizer.h"

ST_FUZZ_TARGET(tiktoken_file) {
  const std::string path = st::fuzz::scratch_file("fuzz.tiktoken", data, size);
  return st::fuzz::refusal([&] {
    const st::Tokenizer tokenizer = st::Tokenizer::from_file(path);
    const std::vector<int32_t> ids = tokenizer.encode("Hello world! <|eot_id|> 12 ünïcode\n\t");
    (void)tokenizer.decode(std::vector<int64_t>(ids.begin(), ids.end()), false);
  });
}
