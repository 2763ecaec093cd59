// The tokenizer on small handmade tokenizer.json files: merge order, ignore_merges, added
// tokens, the Split + ByteLevel pre-tokenizer, byte fallback, and the refusals that name the
// file and field. Real vocabularies are checked against Hugging Face tokenizers (tests/tokenizer/tokenizer_parity.sh).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "process_temp.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"
#include "util/errors.h"

namespace st {
namespace {

using Json = nlohmann::json;

// Byte-level: a space is "Ġ". Merges build "hello" and "Ġworld".
Json tiny(bool ignore_merges = false) {
  Json vocab = {{"h", 0},   {"e", 1},    {"l", 2},     {"o", 3},     {"Ġ", 4},      {"w", 5},     {"r", 6},
                {"d", 7},   {"he", 8},   {"ll", 9},    {"hell", 10}, {"hello", 11}, {"Ġw", 12},   {"or", 13},
                {"Ġwor", 14}, {"Ġworl", 15}, {"Ġworld", 16}, {"lo", 17}, {"!", 18}};
  Json merges = {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "Ġwor l", "Ġworl d"};
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}, {"ignore_merges", ignore_merges}}},
          {"normalizer", nullptr},
          {"pre_tokenizer",
           {{"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", R"( ?\p{L}+|\s+|[^\s\p{L}]+)"}}}, {"behavior", "Isolated"},
               {"invert", false}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}}},
          {"added_tokens", {{{"id", 100}, {"content", "<|end|>"}, {"special", true}}}}};
}

std::string write(const Json& json) {
  static int count = 0;
  const std::string path = testing::process_temp_path("tok_" + std::to_string(count++) + ".json");
  std::ofstream(path) << json.dump();
  return path;
}

std::vector<int32_t> encode(const Json& json, const std::string& text) {
  return Tokenizer::from_file(write(json)).encode(text);
}

void expect_refusal(const Json& json, const std::string& needle) {
  try {
    Tokenizer::from_file(write(json));
    FAIL() << "accepted; expected an error with '" << needle << "'";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(".json"), std::string::npos) << "names the file: " << e.what();
  }
}

TEST(Tokenizer, MergesApplyInRankOrder) {
  EXPECT_EQ(encode(tiny(), "hello"), (std::vector<int32_t>{11}));
  EXPECT_EQ(encode(tiny(), "hell"), (std::vector<int32_t>{10}));
  EXPECT_EQ(encode(tiny(), "hlo"), (std::vector<int32_t>{0, 2, 3}));  // "lo" is in the vocab, no merge makes it
  EXPECT_EQ(encode(tiny(), "hello world!"), (std::vector<int32_t>{11, 16, 18}));
}

TEST(Tokenizer, IgnoreMergesTakesWholeVocabularyWords) {
  EXPECT_EQ(encode(tiny(false), "lo"), (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(encode(tiny(true), "lo"), (std::vector<int32_t>{17}));
}

TEST(Tokenizer, AddedTokensMatchInTheRawText) {
  EXPECT_EQ(encode(tiny(), "hello<|end|> world"), (std::vector<int32_t>{11, 100, 16}));
  EXPECT_EQ(encode(tiny(), "<|end|><|end|>"), (std::vector<int32_t>{100, 100}));
  const Tokenizer tokenizer = Tokenizer::from_file(write(tiny()));
  EXPECT_EQ(tokenizer.token_id("<|end|>"), 100);
  EXPECT_EQ(tokenizer.token_id("Ġworld"), 16);
  EXPECT_FALSE(tokenizer.token_id("nope").has_value());
  EXPECT_EQ(tokenizer.vocab_size(), 101);
}

TEST(Tokenizer, UnknownSymbolsFallBackToBytesOrAreRefused) {
  Json json = tiny();
  EXPECT_THROW(encode(json, "hz"), TokenizerError);  // "z" has no token, no fallback
  json["model"]["byte_fallback"] = true;
  json["model"]["vocab"]["<0x7A>"] = 50;
  json["pre_tokenizer"] = nullptr;  // SentencePiece-style: symbols are the text's own characters
  EXPECT_EQ(encode(json, "hz"), (std::vector<int32_t>{0, 50}));
  json = tiny();
  json["model"]["unk_token"] = "!";  // id 18
  json["pre_tokenizer"] = nullptr;
  EXPECT_EQ(encode(json, "hzzqh"), (std::vector<int32_t>{0, 18, 18, 18, 0}));
  json["model"]["fuse_unk"] = true;
  EXPECT_EQ(encode(json, "hzzqh"), (std::vector<int32_t>{0, 18, 0}));
}

// decode inverts encode: byte-level strings back to bytes, added tokens (special ones skipped
// unless asked for), SentencePiece's "▁" and <0xXX> bytes, the normalizer's prefix dropped.
TEST(Tokenizer, DecodeInvertsEncode) {
  const Tokenizer byte_level = Tokenizer::from_file(write(tiny()));
  for (const std::string text : {"hello world!", "hell lo", "world!hello"}) {
    const std::vector<int32_t> ids = byte_level.encode(text);
    EXPECT_EQ(byte_level.decode({ids.begin(), ids.end()}), text);
  }
  EXPECT_EQ(byte_level.decode({11, 100, 16}), "hello world");
  EXPECT_EQ(byte_level.decode({11, 100, 16}, /*skip_special=*/false), "hello<|end|> world");
  EXPECT_EQ(byte_level.decode({11, 5000, -1}), "hello");  // ids past the tokenizer's vocabulary: no text

  Json piece = tiny();  // SentencePiece style: Prepend("▁") and " " -> "▁", byte fallback
  piece["pre_tokenizer"] = nullptr;
  piece["normalizer"] = {{"type", "Sequence"},
                         {"normalizers",
                          {{{"type", "Prepend"}, {"prepend", "\u2581"}}, {{"type", "Replace"}, {"pattern", {{"String", " "}}},
                                                                           {"content", "\u2581"}}}}};
  piece["model"]["byte_fallback"] = true;
  piece["model"]["vocab"]["\u2581"] = 60;
  piece["model"]["vocab"]["<0x0A>"] = 61;
  piece["model"]["vocab"]["<0xC3>"] = 62;
  piece["model"]["vocab"]["<0xA9>"] = 63;
  const Tokenizer sentencepiece = Tokenizer::from_file(write(piece));
  const std::vector<int32_t> ids = sentencepiece.encode("he\nhe\xC3\xA9 hello");
  EXPECT_EQ(sentencepiece.decode({ids.begin(), ids.end()}), "he\nhe\xC3\xA9 hello");
  EXPECT_EQ(sentencepiece.decode({62}), "\xEF\xBF\xBD");  // half a character: U+FFFD, as transformers
}

// tokenizer.json's post_processor, as transformers' tokenizer(text) applies it (add_special_tokens):
// TemplateProcessing's single template (Llama 2's "<s> $A", here with a suffix too), inside a
// Sequence; Bert/RobertaProcessing's cls ... sep; ByteLevel's none. encode never adds them.
TEST(Tokenizer, PostProcessorSpecialTokensAroundOneText) {
  Json template_processing = tiny();
  template_processing["post_processor"] = Json::parse(R"({"type": "Sequence", "processors": [
      {"type": "ByteLevel"},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|end|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "!", "type_id": 0}}],
       "special_tokens": {"<|end|>": {"id": "<|end|>", "ids": [100]}, "!": {"id": "!", "ids": [18]}}}]})");
  const Tokenizer templated = Tokenizer::from_file(write(template_processing));
  EXPECT_EQ(templated.encode_with_special_tokens("hello"), (std::vector<int32_t>{100, 11, 18}));
  EXPECT_EQ(templated.encode("hello"), (std::vector<int32_t>{11}));
  Json bert = tiny();
  bert["post_processor"] = Json::parse(R"({"type": "RobertaProcessing", "cls": ["<|end|>", 100], "sep": ["!", 18]})");
  EXPECT_EQ(Tokenizer::from_file(write(bert)).encode_with_special_tokens("hello"), (std::vector<int32_t>{100, 11, 18}));
  Json byte_level = tiny();
  byte_level["post_processor"] = {{"type", "ByteLevel"}};
  EXPECT_EQ(Tokenizer::from_file(write(byte_level)).encode_with_special_tokens("hello"), (std::vector<int32_t>{11}));
  EXPECT_EQ(Tokenizer::from_file(write(tiny())).encode_with_special_tokens("hello"), (std::vector<int32_t>{11}));
  Json unknown = tiny();
  unknown["post_processor"] = {{"type", "Fancy"}};
  const Tokenizer unread = Tokenizer::from_file(write(unknown));  // plain encoding does not need it
  EXPECT_EQ(unread.encode("hello"), (std::vector<int32_t>{11}));
  try {
    unread.encode_with_special_tokens("hello");
    FAIL() << "an unread post_processor was applied as none";
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("post_processor: 'Fancy'"), std::string::npos) << e.what();
  }
}

TEST(Tokenizer, InvalidUtf8IsRefused) { EXPECT_THROW(encode(tiny(), std::string("he\xff")), TokenizerError); }

TEST(Tokenizer, UnsupportedComponentsAreNamed) {
  Json json = tiny();
  json["normalizer"] = {{"type", "NFKC"}};
  expect_refusal(json, "normalizer.type: 'NFKC' is not supported");
  json = tiny();
  json["model"]["type"] = "WordPiece";
  expect_refusal(json, "model.type: 'WordPiece' is not supported");
  json = tiny();
  json["pre_tokenizer"]["pretokenizers"][0]["type"] = "Metaspace";
  expect_refusal(json, "pre_tokenizer.pretokenizers[0].type: 'Metaspace' is not supported");
  json = tiny();
  json["model"]["merges"][0] = "h q";
  expect_refusal(json, "model.merges[0]");
  json = tiny();
  json["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  expect_refusal(json, "regex does not compile");
}

TEST(Tokenizer, MissingOrMalformedFileIsNamed) {
  try {
    Tokenizer::from_file(::testing::TempDir() + "/no_such_dir");
    FAIL();
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dir: cannot open; a tokenizer is read from a model directory holding "
                                         "tokenizer.json (or tokenizer.model), or from the file: prep --tokenizer, "
                                         "prep.tokenizer or model.path"),
              std::string::npos) << e.what();
  }
  // A hub id, as LlamaFactory's and TRL's examples write model paths: the command that fetches it.
  try {
    Tokenizer::from_file("meta-llama/Llama-3.1-8B-Instruct");
    FAIL();
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("meta-llama/Llama-3.1-8B-Instruct: a Hugging Face hub id, not a local directory; "
                                         "shardtune downloads nothing: fetch it with `hf download "
                                         "meta-llama/Llama-3.1-8B-Instruct --local-dir models/Llama-3.1-8B-Instruct` and "
                                         "name models/Llama-3.1-8B-Instruct as the tokenizer"),
              std::string::npos) << e.what();
  }
  const std::string path = testing::process_temp_path("broken.json");
  std::ofstream(path) << "{\"model\": ";
  EXPECT_THROW(Tokenizer::from_file(path), TokenizerError);
}

std::string write_text(const std::string& name, const std::string& text) {
  const std::string path = testing::process_temp_path(name);
  std::ofstream(path) << text;
  return path;
}

TEST(Tiktoken, RanksMergeAndLlama3SpecialsFollowTheLastRank) {
  // "h" 0, "i" 1, "hi" 2, " " 3 (base64 of the raw bytes).
  const Tokenizer tokenizer = Tokenizer::from_file(write_text("tiny.tiktoken", "aA== 0\naQ== 1\naGk= 2\nIA== 3\n"));
  EXPECT_EQ(tokenizer.encode("hi"), (std::vector<int32_t>{2}));
  EXPECT_EQ(tokenizer.encode("ih hi"), (std::vector<int32_t>{1, 0, 3, 2}));
  EXPECT_EQ(tokenizer.encode("<|begin_of_text|>hi<|eot_id|>"), (std::vector<int32_t>{4, 2, 4 + 9}));
  EXPECT_EQ(tokenizer.vocab_size(), 4 + 256);
  EXPECT_EQ(tokenizer.eos_token(), "<|end_of_text|>");
}

TEST(Tiktoken, ImpliesTheLlama3TemplateWhereOthersImplyNone) {
  const Tokenizer tiktoken = Tokenizer::from_file(write_text("detect.tiktoken", "aA== 0\n"));
  EXPECT_EQ(detect_template(tiktoken), TemplateKind::llama3);
  EXPECT_FALSE(detect_template(Tokenizer::from_file(write(tiny()))).has_value());
}

TEST(Tiktoken, MalformedLinesAreNamed) {
  try {
    Tokenizer::from_file(write_text("bad.tiktoken", "aA== 0\nnot base64!\n"));
    FAIL();
  } catch (const TokenizerError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.tiktoken:2: expected '<base64 token> <rank>'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace st

namespace st {
namespace {

// Python's bytes.decode("utf-8", "replace") on each input (measured), which Hugging Face
// tokenizers' from_utf8_lossy agrees with: one U+FFFD per maximal invalid part.
TEST(LossyUtf8, ReplacesAsPythonDoes) {
  const std::string r = "\xEF\xBF\xBD";
  EXPECT_EQ(lossy_utf8("\xE0\x84\x80" "a"), r + r + r + "a") << "overlong";
  EXPECT_EQ(lossy_utf8("\xE2\x82"), r) << "a cut character is one";
  EXPECT_EQ(lossy_utf8("\xE2\x82" "a"), r + "a");
  EXPECT_EQ(lossy_utf8("\xED\xA0\x80"), r + r + r) << "a surrogate";
  EXPECT_EQ(lossy_utf8("\xF0\x9F\x98"), r);
  EXPECT_EQ(lossy_utf8("\xF4\x90\x80\x80"), r + r + r + r) << "past U+10FFFF";
  EXPECT_EQ(lossy_utf8("\xC0\xAF"), r + r);
  EXPECT_EQ(lossy_utf8("ok\xFF"), "ok" + r);
  EXPECT_EQ(lossy_utf8("\xF0\x9F\x98\x80 \xC3\xA9"), "\xF0\x9F\x98\x80 \xC3\xA9") << "valid text is kept";
}

}  // namespace
}  // namespace st
