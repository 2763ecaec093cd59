// Record shapes of `prep` (record_shapes.h): each shape read into the same conversation, the
// detection, the refusals naming the field; JSON arrays split into records with their lines;
// LlamaFactory dataset_info.json entries.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "prep/dataset_info.h"
#include "prep/json_array.h"
#include "prep/prep_jsonl.h"
#include "prep/record_shapes.h"
#include "scratch_dir.h"
#include "thrown_message.h"
#include "util/errors.h"

namespace st {
namespace {

using Json = nlohmann::json;

// "role:content" per message, then "=> chosen / rejected" for preference records.
std::string read_as(const std::string& record, RecordFormat format, PairKind kind, const RecordSchema& schema = {}) {
  const auto read = read_conversation(Json::parse(record), format, kind, schema);
  if (const auto* problem = std::get_if<LineProblem>(&read)) return "problem: " + problem->detail;
  const Conversation& conversation = std::get<Conversation>(read);
  std::string out;
  for (const ChatMessage& m : conversation.messages) out += std::string(enum_name(m.role)) + ":" + m.content + " ";
  if (kind == PairKind::dpo) out += "=> " + conversation.chosen + " / " + conversation.rejected;
  if (conversation.label) out += *conversation.label ? "(desirable)" : "(undesirable)";
  return out;
}

// The same two-turn SFT conversation in every text shape.
TEST(RecordShapes, EveryShapeReadsTheSameSftConversation) {
  const std::string expected = "system:S user:a assistant:b user:c assistant:d ";
  EXPECT_EQ(read_as(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
                        {"role": "assistant", "content": "d"}]})",
                    RecordFormat::messages, PairKind::sft),
            expected);
  EXPECT_EQ(read_as(R"({"system": "S", "conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"},
                        {"from": "human", "value": "c"}, {"from": "gpt", "value": "d"}]})",
                    RecordFormat::sharegpt, PairKind::sft),
            expected);
  EXPECT_EQ(read_as(R"({"system": "S", "instruction": "c", "output": "d", "history": [["a", "b"]]})",
                    RecordFormat::alpaca, PairKind::sft),
            expected);
  EXPECT_EQ(read_as(R"({"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
                        "completion": [{"role": "assistant", "content": "d"}]})",
                    RecordFormat::trl, PairKind::sft),
            expected);
  // Alpaca's input follows the instruction on a new line.
  EXPECT_EQ(read_as(R"({"instruction": "Sum", "input": "1 2", "output": "3"})", RecordFormat::alpaca, PairKind::sft),
            "user:Sum\n1 2 assistant:3 ");
}

// KTO: an SFT record of any shape plus its label - TRL's unpaired {prompt, completion, label},
// LlamaFactory's kto_tag (renamed by its dataset_info.json) - refused without one.
TEST(RecordShapes, KtoRecordsAreSftRecordsWithALabel) {
  EXPECT_EQ(read_as(R"({"prompt": [{"role": "user", "content": "a"}], "completion": [{"role": "assistant", "content": "b"}],
                        "label": false})",
                    RecordFormat::trl, PairKind::kto),
            "user:a assistant:b (undesirable)");
  EXPECT_EQ(read_as(R"({"prompt": "a", "completion": "b", "label": true})", RecordFormat::trl, PairKind::kto),
            "user:a assistant:b (desirable)");
  RecordSchema renamed;
  renamed.label = "kto";
  EXPECT_EQ(read_as(R"({"conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"}], "kto": true})",
                    RecordFormat::sharegpt, PairKind::kto, renamed),
            "user:a assistant:b (desirable)");
  EXPECT_EQ(read_as(R"({"prompt": "a", "completion": "b"})", RecordFormat::trl, PairKind::kto),
            "problem: field 'label' is missing");
  EXPECT_NE(read_as(R"({"prompt": "a", "completion": "b", "label": 1})", RecordFormat::trl, PairKind::kto)
                .find("field 'label' must be true (desirable) or false"),
            std::string::npos);
}

TEST(RecordShapes, EveryShapeReadsTheSamePreferenceWithHistory) {
  const std::string expected = "system:S user:a assistant:b user:c => good / bad";
  EXPECT_EQ(read_as(R"({"prompt": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
                        "chosen": [{"role": "assistant", "content": "good"}], "rejected": "bad"})",
                    RecordFormat::trl, PairKind::dpo),
            expected);
  // TRL's implicit prompt: whole conversations that share all but their last message.
  EXPECT_EQ(read_as(R"({"chosen": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
                        {"role": "assistant", "content": "good"}],
                        "rejected": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
                        {"role": "assistant", "content": "bad"}]})",
                    RecordFormat::trl, PairKind::dpo),
            expected);
  EXPECT_EQ(read_as(R"({"system": "S", "conversations": [{"from": "human", "value": "a"}, {"from": "gpt", "value": "b"},
                        {"from": "human", "value": "c"}], "chosen": {"from": "gpt", "value": "good"},
                        "rejected": {"from": "gpt", "value": "bad"}})",
                    RecordFormat::sharegpt, PairKind::dpo),
            expected);
  EXPECT_EQ(read_as(R"({"system": "S", "history": [["a", "b"]], "instruction": "c", "chosen": "good", "rejected": "bad"})",
                    RecordFormat::alpaca, PairKind::dpo),
            expected);
  EXPECT_EQ(read_as(R"({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}],
                        "chosen": "good", "rejected": "bad"})",
                    RecordFormat::messages, PairKind::dpo),
            expected);
  // A system-only prompt.
  EXPECT_EQ(read_as(R"({"prompt": [{"role": "system", "content": "Write a haiku."}], "chosen": "x", "rejected": "y"})",
                    RecordFormat::trl, PairKind::dpo),
            "system:Write a haiku. => x / y");
}

TEST(RecordShapes, RenamedColumnsAndTags) {
  RecordSchema schema;
  schema.conversations = "messages";
  schema.role_tag = "role";
  schema.content_tag = "content";
  schema.user_tag = "user";
  schema.assistant_tag = "assistant";
  EXPECT_EQ(read_as(R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]})",
                    RecordFormat::sharegpt, PairKind::sft, schema),
            "user:a assistant:b ");
  // ShareGPT's observation and function_call become tool roles, which the templates refuse by name.
  EXPECT_EQ(read_as(R"({"conversations": [{"from": "human", "value": "a"}, {"from": "function_call", "value": "f"},
                        {"from": "observation", "value": "o"}, {"from": "gpt", "value": "b"}]})",
                    RecordFormat::sharegpt, PairKind::sft),
            "user:a function:f tool:o assistant:b ");
}

TEST(RecordShapes, ProblemsNameTheField) {
  EXPECT_EQ(read_as(R"({"conversations": [{"from": "bot", "value": "a"}]})", RecordFormat::sharegpt, PairKind::sft),
            "problem: field 'conversations[0].from' is 'bot'; expected human, gpt, system, observation or function_call");
  EXPECT_EQ(read_as(R"({"conversations": [{"from": "human", "value": "a"}]})", RecordFormat::sharegpt, PairKind::sft),
            "problem: field 'conversations' must end with the assistant's message ('gpt', the completion)");
  EXPECT_EQ(read_as(R"({"conversations": [{"from": "human", "value": "a"}], "chosen": {"from": "human", "value": "x"},
                        "rejected": "y"})",
                    RecordFormat::sharegpt, PairKind::dpo),
            "problem: field 'chosen' must be the assistant's message ('gpt')");
  EXPECT_EQ(read_as(R"({"instruction": "a"})", RecordFormat::alpaca, PairKind::sft),
            "problem: field 'output' is missing");
  EXPECT_EQ(read_as(R"({"instruction": "a", "output": "b", "history": [["x"]]})", RecordFormat::alpaca, PairKind::sft),
            "problem: field 'history[0]' is not [\"instruction\", \"response\"]");
  EXPECT_EQ(read_as(R"({"messages": [{"role": "user", "content": "a"}]})", RecordFormat::messages, PairKind::sft),
            "problem: field 'messages' must end with the assistant's message (the completion)");
  EXPECT_EQ(read_as(R"({"messages": [{"role": "user"}]})", RecordFormat::messages, PairKind::sft),
            "problem: field 'messages' [0] is not {\"role\": \"...\", \"content\": \"...\"}");
  EXPECT_EQ(read_as(R"({"chosen": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x"}],
                        "rejected": [{"role": "user", "content": "b"}, {"role": "assistant", "content": "y"}]})",
                    RecordFormat::trl, PairKind::dpo)
                .rfind("problem: field 'rejected' differs from 'chosen' before the last message", 0),
            0u);
}

// LlamaFactory's newer records: content as typed parts (joined), loss_weight per message (an
// untrained assistant turn is marked '-'), chosen_messages / rejected_messages for preferences.
TEST(RecordShapes, LlamaFactoryV1PartsWeightsAndPreferences) {
  auto weighted = [](const std::string& record, PairKind kind) {
    const auto read = read_conversation(Json::parse(record), RecordFormat::messages, kind, {});
    if (const auto* problem = std::get_if<LineProblem>(&read)) return "problem: " + problem->detail;
    std::string out;
    for (const ChatMessage& m : std::get<Conversation>(read).messages) {
      out += enum_name(m.role) + std::string(m.role == ChatRole::assistant && !m.trained ? "-:" : ":") + m.content + " ";
    }
    if (kind == PairKind::dpo) out += "=> " + std::get<Conversation>(read).chosen + " / " + std::get<Conversation>(read).rejected;
    return out;
  };
  EXPECT_EQ(weighted(R"({"messages": [
      {"role": "user", "content": [{"type": "text", "value": "a"}, {"type": "text", "value": "b"}], "loss_weight": 0.0},
      {"role": "assistant", "content": [{"type": "text", "value": "c"}], "loss_weight": 0.0},
      {"role": "user", "content": [{"type": "text", "text": "d"}], "loss_weight": 0},
      {"role": "assistant", "content": "e", "loss_weight": 1}]})", PairKind::sft),
            "user:ab assistant-:c user:d assistant:e ");
  const std::string turn = R"({"role": "system", "content": [{"type": "text", "value": "S"}], "loss_weight": 0.0},
                              {"role": "user", "content": [{"type": "text", "value": "q"}], "loss_weight": 0.0})";
  EXPECT_EQ(weighted(R"({"chosen_messages": [)" + turn + R"(, {"role": "assistant", "content": [{"type": "text",
                         "value": "good"}], "loss_weight": 1.0}], "rejected_messages": [)" + turn +
                         R"(, {"role": "assistant", "content": [{"type": "text", "value": "bad"}]}]})",
                     PairKind::dpo),
            "system:S user:q => good / bad");
  // What cannot be honoured names the field and the fix.
  EXPECT_EQ(weighted(R"({"messages": [{"role": "user", "content": "a"},
                        {"role": "assistant", "content": "b", "loss_weight": 0.5}]})", PairKind::sft),
            "problem: field 'messages[1].loss_weight' is 0.5; shardtune trains a turn wholly or not at all, so only 0 "
            "and 1 are honoured: round it, or drop the record");
  EXPECT_EQ(weighted(R"({"messages": [{"role": "user", "content": "a", "loss_weight": 1},
                        {"role": "assistant", "content": "b"}]})", PairKind::sft),
            "problem: field 'messages[0].loss_weight' is 1 on a 'user' message; only assistant replies carry loss: set "
            "it to 0");
  EXPECT_EQ(weighted(R"({"messages": [{"role": "user", "content": [{"type": "image_url", "value": "x.png"}]},
                        {"role": "assistant", "content": "b"}]})", PairKind::sft),
            "problem: field 'messages[0].content[0].type' is 'image_url'; only text parts are read (tools, tool calls, "
            "reasoning and media are not): drop the record or turn the part into text");
  EXPECT_EQ(weighted(R"({"chosen_messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "x",
                        "loss_weight": 0}], "rejected_messages": [{"role": "user", "content": "a"},
                        {"role": "assistant", "content": "y"}]})", PairKind::dpo),
            "problem: field 'chosen_messages[1].loss_weight' is 0 on the final reply, which is what the preference "
            "loss compares: set it to 1");
  EXPECT_EQ(weighted(R"({"chosen_messages": [], "rejected_messages": []})", PairKind::sft),
            "problem: a preference record (chosen_messages / rejected_messages); prep it with --kind dpo");
}

// A preference record's "margin" (TRL's margin column) is kept; a margin that is no number is
// named; other kinds ignore the field.
TEST(RecordShapes, PreferenceMarginsAreReadAndChecked) {
  RecordReading reading;
  reading.vocab_size = 50;
  const std::string ids = R"("prompt_ids": [1, 4], "chosen_ids": [5, 2], "rejected_ids": [6, 2])";
  const auto with = parse_pair_record("{" + ids + R"(, "margin": 1.5})", reading);
  ASSERT_TRUE(std::holds_alternative<Pair>(with));
  EXPECT_EQ(std::get<Pair>(with).margin, 1.5f);
  EXPECT_FALSE(std::get<Pair>(parse_pair_record("{" + ids + "}", reading)).margin.has_value());
  const auto bad = parse_pair_record("{" + ids + R"(, "margin": "high"})", reading);
  ASSERT_TRUE(std::holds_alternative<LineProblem>(bad));
  EXPECT_NE(std::get<LineProblem>(bad).detail.find("field 'margin' must be a number"), std::string::npos)
      << std::get<LineProblem>(bad).detail;
  reading.kind = PairKind::sft;
  const auto sft = parse_pair_record(R"({"prompt_ids": [1], "completion_ids": [5, 2], "margin": 1})", reading);
  ASSERT_TRUE(std::holds_alternative<Pair>(sft));
  EXPECT_FALSE(std::get<Pair>(sft).margin.has_value());
}

TEST(RecordShapes, DetectionFromTheFields) {
  const RecordSchema schema;
  auto shape = [&](const char* record) { return detect_record_format(Json::parse(record), schema); };
  EXPECT_EQ(shape(R"({"prompt_ids": [1]})"), RecordFormat::ids);
  EXPECT_EQ(shape(R"({"messages": []})"), RecordFormat::messages);
  EXPECT_EQ(shape(R"({"chosen_messages": [], "rejected_messages": []})"), RecordFormat::messages);
  EXPECT_EQ(shape(R"({"prompt": "a", "chosen": "b", "rejected": "c"})"), RecordFormat::trl);
  EXPECT_EQ(shape(R"({"chosen": [], "rejected": []})"), RecordFormat::trl);
  EXPECT_EQ(shape(R"({"conversations": []})"), RecordFormat::sharegpt);
  EXPECT_EQ(shape(R"({"instruction": "a", "output": "b"})"), RecordFormat::alpaca);
  EXPECT_EQ(shape(R"({"text": "a"})"), std::nullopt);
}

TEST(JsonArray, RecordsWithTheirLines) {
  const std::string text = "[\n  {\"a\": \"x,]\\\"}\"},\n  {\"b\": [1, {\"c\": 2}]}\n,{}]\n";
  std::istringstream array_stream("\n " + text), object_stream(" {\"a\": 1}\n");
  ASSERT_TRUE(starts_json_array(array_stream));
  EXPECT_FALSE(starts_json_array(object_stream));
  const std::vector<TextRecord> records = json_array_records(text, "f.json");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].line, 2u);
  EXPECT_EQ(Json::parse(records[0].text)["a"], "x,]\"}");
  EXPECT_EQ(records[1].line, 3u);
  EXPECT_EQ(Json::parse(records[1].text)["b"][1]["c"], 2);
  EXPECT_EQ(records[2].text, "{}");
  EXPECT_TRUE(json_array_records("[]", "f.json").empty());
  auto error = [](const std::string& bad) {
    return st::testing::thrown_message<DataError>([&] { json_array_records(bad, "f.json"); });
  };
  EXPECT_NE(error("[{}, {}").find("f.json:1: the array is not closed"), std::string::npos);
  EXPECT_NE(error("[{}\n {}]").find("f.json:2: expected ',' or ']' between records"), std::string::npos);
  EXPECT_NE(error("[{}] x").find("text after the closing ']'"), std::string::npos);
}

class DatasetInfo : public st::testing::ScratchDirTest {
 protected:
  void write(const Json& info) {
    std::ofstream(dir_ / "dataset_info.json") << info.dump();
    std::ofstream(dir_ / "data.json") << "[]";
  }
  std::string error_of(const std::string& name, PairKind kind) {
    return st::testing::thrown_message<ConfigError>([&] { read_dataset_info(dir_.string(), name, kind); });
  }
};

TEST_F(DatasetInfo, EntriesMapToShapesAndColumns) {
  write({{"pref", {{"file_name", "data.json"}, {"formatting", "sharegpt"}, {"ranking", true},
                   {"columns", {{"messages", "messages"}, {"chosen", "good"}, {"rejected", "bad"}}},
                   {"tags", {{"role_tag", "role"}, {"content_tag", "content"}, {"user_tag", "user"},
                             {"assistant_tag", "assistant"}}}}},
         {"sft", {{"file_name", "data.json"}, {"columns", {{"prompt", "q"}, {"query", "ctx"}, {"response", "a"}}}}},
         {"hub", {{"hf_hub_url", "org/data"}}},
         {"kto", {{"file_name", "data.json"}, {"formatting", "sharegpt"}, {"columns", {{"kto_tag", "good"}}}}},
         {"gone", {{"file_name", "missing.json"}}},
         {"images", {{"file_name", "data.json"}, {"columns", {{"images", "images"}}}}},
         {"odd_ranking", {{"file_name", "data.json"}, {"ranking", {{"a", 1}}}}},
         {"odd_format", {{"file_name", "data.json"}, {"formatting", 3}}},
         {"long_name", {{"file_name", std::string(300, 'x') + ".json"}}}});
  const DatasetInfoEntry pref = read_dataset_info(dir_.string(), "pref", PairKind::dpo);
  EXPECT_EQ(pref.file, (dir_ / "data.json").string());
  EXPECT_EQ(pref.format, RecordFormat::sharegpt);
  EXPECT_EQ(pref.schema.conversations, "messages");
  EXPECT_EQ(pref.schema.chosen, "good");
  EXPECT_EQ(pref.schema.role_tag, "role");
  EXPECT_EQ(pref.schema.assistant_tag, "assistant");
  const DatasetInfoEntry sft = read_dataset_info(dir_.string(), "sft", PairKind::sft);
  EXPECT_EQ(sft.format, RecordFormat::alpaca);
  EXPECT_EQ(sft.schema.instruction, "q");
  EXPECT_EQ(sft.schema.input, "ctx");
  EXPECT_EQ(sft.schema.output, "a");
  EXPECT_NE(error_of("pref", PairKind::sft).find("is a ranking (preference) dataset; prep it with --kind dpo"),
            std::string::npos);
  EXPECT_NE(error_of("sft", PairKind::dpo)
                .find("is neither a ranking dataset (\"ranking\": true) nor a labelled one (a kto_tag column); prep it with --kind sft"),
            std::string::npos);
  // A kto_tag column makes a KTO dataset (LlamaFactory's kto_en_demo), its label renamed.
  const DatasetInfoEntry kto = read_dataset_info(dir_.string(), "kto", PairKind::kto);
  EXPECT_EQ(kto.schema.label, "good");
  EXPECT_NE(error_of("kto", PairKind::sft).find("is a kto dataset (a kto_tag column); prep it with --kind kto"),
            std::string::npos);
  EXPECT_NE(error_of("nope", PairKind::sft)
                .find("dataset 'nope' is not there; it has: gone, hub, images, kto, long_name, odd_format, odd_ranking, pref, sft"),
            std::string::npos);
  EXPECT_NE(error_of("hub", PairKind::sft).find("field 'file_name' is missing: shardtune reads local files only"),
            std::string::npos);
  EXPECT_NE(error_of("gone", PairKind::sft).find("missing.json is not a file"), std::string::npos);
  EXPECT_NE(error_of("images", PairKind::sft).find("field 'columns.images' is not supported"), std::string::npos);
  EXPECT_NE(error_of("odd_ranking", PairKind::sft).find("field 'ranking' is {\"a\":1}, not true or false"),
            std::string::npos);
  EXPECT_NE(error_of("odd_format", PairKind::sft).find("field 'formatting' is 3, not a string"), std::string::npos);
  EXPECT_NE(error_of("long_name", PairKind::sft).find(".json is not a file"), std::string::npos);

  // The listing (`prep --dataset-info DIR` alone): every entry in file order, read with the kind
  // its ranking says, or refused with the reason read_dataset_info gives.
  const std::vector<DatasetInfoListing> listing = list_dataset_info(dir_.string());
  std::string seen;
  for (const DatasetInfoListing& item : listing) {
    seen += item.name + (item.entry ? std::string("=") + enum_name(item.entry->kind) : " refused") + ", ";
  }
  EXPECT_EQ(seen, "gone refused, hub refused, images refused, kto=kto, long_name refused, odd_format refused, odd_ranking refused, "
                  "pref=dpo, sft=sft, ");
  EXPECT_EQ(listing[1].refusal.rfind("dataset 'hub' field 'file_name' is missing", 0), 0u) << listing[1].refusal;
}

}  // namespace
}  // namespace st
