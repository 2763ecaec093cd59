#include "tokenizer/regex_splitter.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/errors.h"

namespace st {

struct RegexSplitter::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

RegexSplitter::RegexSplitter(const std::string& pattern, const std::string& where)
    : compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF | PCRE2_UCP,
                                  &error, &offset, nullptr);
  if (!compiled_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof(message));
    throw TokenizerError(where + ": regex does not compile at offset " + std::to_string(offset) + ": " +
                         reinterpret_cast<const char*>(message));
  }
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);  // the interpreter serves where JIT is missing
}

RegexSplitter::~RegexSplitter() = default;
RegexSplitter::RegexSplitter(RegexSplitter&&) noexcept = default;
RegexSplitter& RegexSplitter::operator=(RegexSplitter&&) noexcept = default;

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& pieces) const {
  // Match data per call: a splitter is shared by the threads of a prep run.
  std::unique_ptr<pcre2_match_data, decltype(&pcre2_match_data_free)> match(
      pcre2_match_data_create_from_pattern(compiled_->code, nullptr), &pcre2_match_data_free);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t at = 0, gap = 0;
  uint32_t options = 0;
  while (at <= text.size()) {
    const int rc = pcre2_match(compiled_->code, subject, text.size(), at, options, match.get(), nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) throw TokenizerError("pre-tokenizer regex failed on the input (PCRE2 error " + std::to_string(rc) + ")");
    options = PCRE2_NO_UTF_CHECK;  // checked by the first call
    const PCRE2_SIZE* span = pcre2_get_ovector_pointer(match.get());
    const size_t begin = span[0], end = span[1];
    if (begin > gap) pieces.push_back(text.substr(gap, begin - gap));
    if (end > begin) {
      pieces.push_back(text.substr(begin, end - begin));
      at = gap = end;
    } else {  // an empty match: step one character on
      at = begin + 1;
      while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
      gap = begin;
    }
  }
  if (gap < text.size()) pieces.push_back(text.substr(gap));
}

}  // namespace st
