// A pre-tokenizer's Split: cuts text at the matches of a Unicode regex (PCRE2, UTF + UCP, JIT
// where available), keeping matches and the gaps between them as separate pieces (HF's
// "Isolated" behaviour).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace st {

class RegexSplitter {
 public:
  // Throws TokenizerError naming `where` when the pattern does not compile.
  RegexSplitter(const std::string& pattern, const std::string& where);
  ~RegexSplitter();
  RegexSplitter(RegexSplitter&&) noexcept;
  RegexSplitter& operator=(RegexSplitter&&) noexcept;

  // Appends the non-empty pieces of `text` (valid UTF-8) to `pieces`, in order.
  void split(std::string_view text, std::vector<std::string_view>& pieces) const;

 private:
  struct Compiled;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace st
