#include "eval/stop_strings.h"

#include <algorithm>

namespace st {

size_t first_stop(const std::string& text, const std::vector<std::string>& stops) {
  size_t position = std::string::npos;
  for (const std::string& stop : stops) position = std::min(position, text.find(stop));
  return position;
}

std::function<bool(size_t, const std::vector<int64_t>&)> stop_string_predicate(const Tokenizer& tokenizer,
                                                                              const std::vector<std::string>& stops) {
  size_t longest = 0;
  for (const std::string& stop : stops) longest = std::max(longest, stop.size());
  return [&tokenizer, &stops, longest](size_t, const std::vector<int64_t>& ids) {
    const size_t tail = std::min(ids.size(), longest + 1);
    return first_stop(tokenizer.decode({ids.end() - static_cast<std::ptrdiff_t>(tail), ids.end()}), stops) !=
           std::string::npos;
  };
}

}  // namespace st
