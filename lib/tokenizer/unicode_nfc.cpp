#include "tokenizer/unicode_nfc.h"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include "util/errors.h"

namespace st {

std::string to_nfc(std::string_view utf8) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfc = icu::Normalizer2::getNFCInstance(status);
  const icu::StringPiece piece(utf8.data(), static_cast<int32_t>(utf8.size()));
  if (U_SUCCESS(status) && nfc->isNormalizedUTF8(piece, status) && U_SUCCESS(status)) return std::string(utf8);
  status = U_ZERO_ERROR;
  const icu::UnicodeString normalized = nfc->normalize(icu::UnicodeString::fromUTF8(piece), status);
  if (U_FAILURE(status)) throw TokenizerError(std::string("NFC normalization failed: ") + u_errorName(status));
  std::string out;
  normalized.toUTF8String(out);
  return out;
}

}  // namespace st
