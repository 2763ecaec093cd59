// Parsing one record of `shardtune prep` input (a JSONL line or an element of a JSON array) in
// its file's shape (record_shapes.h): token ids checked against the vocabulary, or a text
// record rendered by the chat template and tokenized. A bad record gives a short reason (counted
// and, with --strict, fatal) instead of a pair.
#pragma once

#include <string>
#include <variant>

#include "data/pair_table.h"
#include "prep/line_problem.h"
#include "prep/record_shapes.h"

namespace st {

class ChatTemplate;

// How the records of one input file are read.
struct RecordReading {
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 0;
  RecordFormat format = RecordFormat::ids;  // named (--format), or detected from the first record
  bool detected = false;                    // `format` came from the first record
  RecordSchema schema;
  TrainOn train_on = TrainOn::all;
  const ChatTemplate* chat = nullptr;       // null: text records are refused
};

std::variant<Pair, LineProblem> parse_pair_record(const std::string& text, const RecordReading& reading);

}  // namespace st
