// A text tokenizer read from a Hugging Face tokenizer.json: added (special) tokens matched in
// the raw text, the normalizer (NFC, Prepend, Replace), the pre-tokenizer (Split regexes,
// ByteLevel), and a BPE model - the byte-level BPE of GPT-2, Llama 3 and Qwen2, and the
// SentencePiece-style BPE with byte fallback of Llama 2. Components it does not implement are refused by name at load
// time, never approximated.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizer/bpe_model.h"
#include "tokenizer/regex_splitter.h"

namespace st {

struct AddedToken {
  std::string content;
  int32_t id = 0;
  bool special = false;
  bool lstrip = false, rstrip = false;  // swallow the whitespace before / after a match
};

// One step of the normalizer, applied in order: NFC, Prepend(content), Replace(pattern -> content).
struct NormalizerStep {
  enum class Kind { nfc, prepend, replace } kind;
  std::string pattern, content;
};

// Whether `directory` holds a tokenizer from_file reads (tokenizer.json or tokenizer.model).
bool holds_tokenizer(const std::string& directory);

class Tokenizer {
 public:
  // `path`: a tokenizer.json or tiktoken rank file, or a model directory holding tokenizer.json
  // (else a tiktoken tokenizer.model). Throws TokenizerError naming the file and the field
  // (unsupported type, malformed entry) and what to do.
  static Tokenizer from_file(const std::string& path);

  // The ids of `text`, added tokens included where they occur; no BOS/EOS (chat templates add
  // them). Throws TokenizerError on invalid UTF-8.
  std::vector<int32_t> encode(std::string_view text) const;
  // encode, with the special tokens tokenizer.json's post_processor puts around one sequence (a
  // TemplateProcessing's, BertProcessing's or RobertaProcessing's; ByteLevel's and none add
  // nothing): transformers' tokenizer(text) with add_special_tokens, as TRL tokenizes a text
  // prompt. Throws TokenizerError naming a post_processor type it does not read.
  std::vector<int32_t> encode_with_special_tokens(std::string_view text) const;
  // The text of `ids` as transformers' decode gives it: byte-level and <0xXX> byte tokens back
  // to bytes, the normalizer's replacements undone and its prepended prefix dropped; added
  // tokens as their content, special ones left out when `skip_special`. As in transformers,
  // bytes that are no valid UTF-8 become U+FFFD, and ids without a token (a model's vocabulary
  // padded past the tokenizer's) give no text.
  std::string decode(const std::vector<int64_t>& ids, bool skip_special = true) const;
  // The id of a token string (an added token or a vocabulary entry), if it has one.
  std::optional<int32_t> token_id(const std::string& token) const;
  // One more than the largest id.
  int64_t vocab_size() const { return vocab_size_; }
  const std::string& source() const { return source_; }
  // The model's bos_token / eos_token from tokenizer_config.json beside tokenizer.json; "" if none.
  const std::string& bos_token() const { return bos_token_; }
  const std::string& eos_token() const { return eos_token_; }
  // tokenizer_config.json's named special tokens (bos_token, eos_token, unk_token, pad_token,
  // sep_token, cls_token, mask_token: those it sets), as transformers' special_tokens_map hands
  // them to a chat template.
  const std::vector<std::pair<std::string, std::string>>& special_tokens() const { return special_tokens_; }
  // The model's own Jinja chat template (tokenizer_config.json or chat_template.jinja); "" if none.
  const std::string& chat_template() const { return chat_template_; }
  // The file chat_template() was read from (for messages).
  const std::string& chat_template_file() const { return chat_template_file_; }

 private:
  Tokenizer(std::string source, BpeModel model) : source_(std::move(source)), model_(std::move(model)) {}
  static Tokenizer from_json(const std::string& file);      // tokenizer_json.cpp
  static Tokenizer from_tiktoken(const std::string& file);  // tiktoken_file.cpp: Llama 3's
  // Sorts added_ longest first, fills added_by_first_byte_ and the by-id tables, and sets
  // vocab_size_ (one more than the largest id of the vocabulary and the added tokens). Throws
  // TokenizerError for a negative id or ids spread far past the number of tokens (the tables
  // are by id: such a file would make a reader allocate for ids no vocabulary has).
  void index_added_tokens();
  void encode_plain(std::string_view text, std::vector<int32_t>& out) const;
  // The earliest added token in text[from, ...), longest first at a position; npos if none.
  size_t find_added(std::string_view text, size_t from, const AddedToken*& token) const;

  std::string source_;
  BpeModel model_;
  std::vector<RegexSplitter> splits_;  // applied in order; each piece of one is split by the next
  std::vector<NormalizerStep> normalizer_;
  bool byte_level_ = false, add_prefix_space_ = false;
  std::vector<AddedToken> added_;      // longest content first
  std::vector<std::string> token_text_;          // by id: the vocabulary's strings (decode)
  std::vector<const AddedToken*> added_by_id_;   // by id: into added_, or null
  std::array<std::vector<const AddedToken*>, 256> added_by_first_byte_;  // into added_, same order
  int64_t vocab_size_ = 0;
  std::vector<int32_t> single_prefix_, single_suffix_;  // the post_processor's, around one sequence
  std::string unread_post_processor_;                  // "post_processor: 'Type'" of a type not read
  std::string bos_token_, eos_token_;
  std::string chat_template_, chat_template_file_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
};

// `bytes` with each maximal part that is no valid UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF) replaced by one U+FFFD, as Python's errors="replace" and
// Rust's from_utf8_lossy (Hugging Face tokenizers) decode: what decode returns.
std::string lossy_utf8(const std::string& bytes);

}  // namespace st
