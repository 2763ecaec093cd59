#include "tokenizer/tokenizer.h"

#include <algorithm>
#include <cctype>

#include "tokenizer/byte_level.h"
#include "tokenizer/unicode_nfc.h"
#include "util/errors.h"

namespace st {
namespace {

std::string replace_all(const std::string& text, const std::string& pattern, const std::string& content) {
  std::string out;
  size_t at = 0;
  for (size_t found; (found = text.find(pattern, at)) != std::string::npos; at = found + pattern.size()) {
    out.append(text, at, found - at).append(content);
  }
  return out.append(text, at, std::string::npos);
}

// "<0x0A>" -> the byte 0x0A: SentencePiece's byte fallback tokens.
bool byte_token(const std::string& token, char& byte) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return false;
  const auto hex = [](char c) { return std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 0x20) - 'a' + 10; };
  if (!std::isxdigit(static_cast<unsigned char>(token[3])) || !std::isxdigit(static_cast<unsigned char>(token[4]))) {
    return false;
  }
  byte = static_cast<char>(hex(token[3]) * 16 + hex(token[4]));
  return true;
}

}  // namespace

std::string lossy_utf8(const std::string& bytes) {
  std::string out;
  size_t at = 0;
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(bytes[i]); };
  while (at < bytes.size()) {
    const unsigned char lead = byte(at);
    size_t length = 0;
    unsigned char low = 0x80, high = 0xBF;  // the second byte's range
    if (lead < 0x80) {
      length = 1;
    } else if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    if (length == 0) {  // a byte no character starts with
      out += "\xEF\xBF\xBD";
      ++at;
      continue;
    }
    size_t taken = 1;  // the lead and the continuation bytes that fit
    while (taken < length && at + taken < bytes.size()) {
      const unsigned char next = byte(at + taken);
      const bool fits = taken == 1 ? next >= low && next <= high : (next & 0xC0) == 0x80;
      if (!fits) break;
      ++taken;
    }
    if (taken == length) {
      out.append(bytes, at, length);
    } else {
      out += "\xEF\xBF\xBD";
    }
    at += taken;
  }
  return out;
}

std::string Tokenizer::decode(const std::vector<int64_t>& ids, bool skip_special) const {
  // Runs of vocabulary tokens are decoded together (byte-level strings and byte tokens cut
  // characters); added tokens go in as their content.
  std::string out, run;
  bool first_run = true;
  const auto flush = [&] {
    if (run.empty()) return;
    std::string text = byte_level_ ? byte_level_decode(run) : run;
    for (const NormalizerStep& step : normalizer_) {  // the prefix the normalizer put before the text
      if (step.kind == NormalizerStep::Kind::prepend && first_run && text.compare(0, step.content.size(), step.content) == 0) {
        text.erase(0, step.content.size());
      }
    }
    for (auto step = normalizer_.rbegin(); step != normalizer_.rend(); ++step) {
      if (step->kind == NormalizerStep::Kind::replace) text = replace_all(text, step->content, step->pattern);
    }
    out += text;
    run.clear();
    first_run = false;
  };
  for (const int64_t id : ids) {
    // Ids without a token (a model's vocabulary padded past the tokenizer's) give no text, as
    // in transformers.
    if (id < 0 || id >= static_cast<int64_t>(token_text_.size())) continue;
    if (const AddedToken* added = added_by_id_[static_cast<size_t>(id)]) {
      flush();
      if (!(added->special && skip_special)) out += added->content;
      continue;
    }
    const std::string& token = token_text_[static_cast<size_t>(id)];
    if (token.empty()) continue;
    char byte;
    if (!byte_level_ && byte_token(token, byte)) {
      run += byte;
    } else {
      run += token;
    }
  }
  flush();
  return lossy_utf8(out);
}

size_t Tokenizer::find_added(std::string_view text, size_t from, const AddedToken*& token) const {
  for (size_t at = from; at < text.size(); ++at) {
    // Longest first: the first hit is the longest.
    for (const AddedToken* candidate : added_by_first_byte_[static_cast<unsigned char>(text[at])]) {
      if (text.compare(at, candidate->content.size(), candidate->content) == 0) {
        token = candidate;
        return at;
      }
    }
  }
  return std::string_view::npos;
}

void Tokenizer::index_added_tokens() {
  std::stable_sort(added_.begin(), added_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  for (auto& candidates : added_by_first_byte_) candidates.clear();
  for (const AddedToken& token : added_) {
    added_by_first_byte_[static_cast<unsigned char>(token.content.front())].push_back(&token);
  }
  int64_t smallest = 0, largest = -1;
  for (const auto& [text, id] : model_.vocab()) smallest = std::min<int64_t>(smallest, id), largest = std::max<int64_t>(largest, id);
  for (const AddedToken& token : added_) smallest = std::min<int64_t>(smallest, token.id), largest = std::max<int64_t>(largest, token.id);
  // Real vocabularies number their tokens densely from 0; a few unused ids are fine.
  const int64_t limit = 2 * static_cast<int64_t>(model_.vocab().size() + added_.size()) + 1024;
  if (smallest < 0 || largest >= limit) {
    throw TokenizerError(source_ + ": token id " + std::to_string(smallest < 0 ? smallest : largest) + " is outside [0, " +
                         std::to_string(limit) + "): ids must be below twice the number of tokens plus 1024 (the file is damaged)");
  }
  vocab_size_ = largest + 1;
  const auto count = static_cast<size_t>(vocab_size_);
  token_text_.assign(count, "");
  added_by_id_.assign(count, nullptr);
  for (const auto& [text, id] : model_.vocab()) token_text_[static_cast<size_t>(id)] = text;
  for (const AddedToken& token : added_) added_by_id_[static_cast<size_t>(token.id)] = &token;
}

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at <= text.size()) {
    const AddedToken* token = nullptr;
    const size_t found = added_.empty() ? std::string_view::npos : find_added(text, at, token);
    std::string_view plain = text.substr(at, found == std::string_view::npos ? std::string_view::npos : found - at);
    if (token && token->lstrip) {
      while (!plain.empty() && std::isspace(static_cast<unsigned char>(plain.back()))) plain.remove_suffix(1);
    }
    encode_plain(plain, ids);
    if (found == std::string_view::npos) break;
    ids.push_back(token->id);
    at = found + token->content.size();
    if (token->rstrip) {
      while (at < text.size() && std::isspace(static_cast<unsigned char>(text[at]))) ++at;
    }
  }
  return ids;
}

std::vector<int32_t> Tokenizer::encode_with_special_tokens(std::string_view text) const {
  if (!unread_post_processor_.empty()) {
    throw TokenizerError(source_ + ": " + unread_post_processor_ + " is not read, so the special tokens it adds " +
                         "around a text are unknown (read: TemplateProcessing, BertProcessing, RobertaProcessing, " +
                         "ByteLevel); give the prompt as messages or as prompt_ids");
  }
  std::vector<int32_t> ids = single_prefix_;
  const std::vector<int32_t> body = encode(text);
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), single_suffix_.begin(), single_suffix_.end());
  return ids;
}

void Tokenizer::encode_plain(std::string_view text, std::vector<int32_t>& out) const {
  if (text.empty()) return;
  std::string normalized, prefixed;
  if (!normalizer_.empty()) {
    normalized = text;
    for (const NormalizerStep& step : normalizer_) {
      switch (step.kind) {
        case NormalizerStep::Kind::nfc: normalized = to_nfc(normalized); break;
        case NormalizerStep::Kind::prepend: normalized.insert(0, step.content); break;
        case NormalizerStep::Kind::replace: normalized = replace_all(normalized, step.pattern, step.content); break;
      }
    }
    text = normalized;
  }
  if (add_prefix_space_ && text.front() != ' ') {
    prefixed = " " + std::string(text);
    text = prefixed;
  }
  std::vector<std::string_view> pieces{text}, next;
  for (const RegexSplitter& split : splits_) {
    next.clear();
    for (const std::string_view piece : pieces) split.split(piece, next);
    pieces.swap(next);
  }
  for (const std::string_view piece : pieces) {
    if (byte_level_) {
      model_.encode_word(byte_level_encode(piece), out);
    } else {
      model_.encode_word(piece, out);
    }
  }
}

std::optional<int32_t> Tokenizer::token_id(const std::string& token) const {
  for (const AddedToken& added : added_) {
    if (added.content == token) return added.id;
  }
  const auto found = model_.vocab().find(token);
  if (found == model_.vocab().end()) return std::nullopt;
  return found->second;
}

}  // namespace st
