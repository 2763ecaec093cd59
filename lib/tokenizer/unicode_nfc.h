// Unicode NFC normalization (ICU), the "NFC" normalizer of tokenizer.json (Qwen2).
#pragma once

#include <string>
#include <string_view>

namespace st {

// `utf8` in NFC. Throws TokenizerError when ICU cannot read it (invalid UTF-8).
std::string to_nfc(std::string_view utf8);

}  // namespace st
