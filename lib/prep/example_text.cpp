#include "prep/example_text.h"

#include "data/pair_shard.h"

namespace st {
namespace {

std::string visible(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

std::string cut(const std::string& text, size_t max_chars) {
  if (text.size() <= max_chars) return text;
  size_t head = max_chars / 2, tail = text.size() - max_chars / 2;
  while (head > 0 && (static_cast<unsigned char>(text[head]) & 0xC0) == 0x80) --head;  // whole UTF-8 characters
  while (tail < text.size() && (static_cast<unsigned char>(text[tail]) & 0xC0) == 0x80) ++tail;
  return text.substr(0, head) + " ... " + text.substr(tail);
}

std::string decoded(const std::vector<int32_t>& ids, size_t begin, size_t end, const Tokenizer& tokenizer) {
  return visible(tokenizer.decode(std::vector<int64_t>(ids.begin() + begin, ids.begin() + end), false));
}

// The completion with its trained runs between [[ and ]] (`mask` empty: all of it trains).
std::string completion_text(const std::vector<int32_t>& ids, const std::vector<uint8_t>& mask,
                            const Tokenizer& tokenizer) {
  if (mask.empty()) return "[[" + decoded(ids, 0, ids.size(), tokenizer) + "]]";
  std::string text;
  size_t start = 0;
  for (size_t i = 1; i <= ids.size(); ++i) {
    if (i < ids.size() && mask[i] == mask[start]) continue;
    const std::string part = decoded(ids, start, i, tokenizer);
    text += mask[start] ? "[[" + part + "]]" : part;
    start = i;
  }
  return text;
}

}  // namespace

std::vector<std::string> example_lines(const Pair& pair, PairKind kind, const Tokenizer& tokenizer, size_t max_chars) {
  std::vector<std::string> lines;
  lines.push_back("prompt: " + cut(decoded(pair.prompt, 0, pair.prompt.size(), tokenizer), max_chars));
  const std::vector<std::string> columns = shard_columns(kind);  // prompt, the completion, a stored second one
  if (!stores_completion(kind)) {
    lines.push_back(std::string(kRecordDataset) + ": " + cut(visible(pair.record), max_chars));
    return lines;
  }
  lines.push_back(columns.at(1) + ": " + cut(completion_text(pair.chosen, pair.loss_mask, tokenizer), max_chars) +
                  (pair.label ? (*pair.label ? " (desirable)" : " (undesirable)") : ""));
  if (!pair.rejected.empty() && columns.size() > 2) {
    lines.push_back(columns.at(2) + ": " + cut(completion_text(pair.rejected, {}, tokenizer), max_chars));
  }
  return lines;
}

}  // namespace st
