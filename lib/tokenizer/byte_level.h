// GPT-2's byte-level alphabet: every byte maps to one printable Unicode character, so byte-level
// BPE vocabularies (GPT-2, Llama 3, Qwen2) spell any byte string with 256 base symbols.
#pragma once

#include <string>
#include <string_view>

namespace st {

// `bytes` with each byte replaced by the UTF-8 of its byte-level character.
std::string byte_level_encode(std::string_view bytes);
// The inverse: the bytes a byte-level string spells; characters outside the alphabet are kept
// as they are (added tokens written into the text).
std::string byte_level_decode(std::string_view text);

}  // namespace st
