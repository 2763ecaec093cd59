// One `prep` input record (a JSONL line or a JSON array element) in each record shape: ids,
// messages, trl, sharegpt, alpaca, rendered by a chat template and tokenized. Input: a mode byte
// (bit 0: sft, bits 1-3: the shape, 5 and up: detected from the record as prep does; bit 4:
// train on the last turn only; bits 5-7: the template), then the record. A record prep skips
// is refused with its reason.
#include "fuzz_target.h"
#include "prep/prep_jsonl.h"
#include "prep/record_shapes.h"
#include "tokenizer/chat_template.h"
#include "tokenizer/tokenizer.h"

#include <nlohmann/json.hpp>

ST_FUZZ_TARGET(prep_record) {
  static const st::Tokenizer tokenizer = st::Tokenizer::from_file(st::fuzz::fixture("tokenizer.json"));
  if (size < 1) return std::nullopt;
  const uint8_t mode = data[0];
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  const auto templates = st::enum_values<st::TemplateKind>();
  const auto formats = st::enum_values<st::RecordFormat>();
  return st::fuzz::refusal([&]() -> void {
    const st::ChatTemplate chat(templates[(mode >> 5) % templates.size()], tokenizer);
    st::RecordReading reading;
    reading.kind = (mode & 1) != 0 ? st::PairKind::sft : st::PairKind::dpo;
    reading.vocab_size = tokenizer.vocab_size();
    reading.train_on = (mode & 16) != 0 ? st::TrainOn::last : st::TrainOn::all;
    reading.chat = &chat;
    const size_t shape = (mode >> 1) & 7;
    if (shape < formats.size()) {
      reading.format = formats[shape];
    } else {
      const nlohmann::json record = nlohmann::json::parse(text, nullptr, false);
      const auto detected = st::detect_record_format(record, reading.schema);
      if (!detected) return;
      reading.format = *detected;
      reading.detected = true;
    }
    const auto parsed = st::parse_pair_record(text, reading);
    if (const auto* problem = std::get_if<st::LineProblem>(&parsed)) {
      throw st::DataError(std::string(st::enum_name(problem->reason)) + ": " + problem->detail);
    }
  });
}
