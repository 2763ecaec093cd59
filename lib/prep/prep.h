// `shardtune prep`: JSONL (or a JSON array) of records -> a train (and val) pair dataset in HDF5
// shards. Records are token ids or text in one of the shapes of record_shapes.h, one shape per
// file (named, or detected from its first record). On N ranks a JSONL input is split by byte
// ranges on line boundaries, an array by records; the output is the same dataset in the same
// global order whatever N is. Everything is written under <output>.tmp and renamed
// at the end, so a failed prep never leaves a dataset that looks complete.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/truncation.h"
#include "distributed/mpi_communicator.h"
#include "prep/dataset_writer.h"
#include "prep/record_shapes.h"

namespace st {

class ChatTemplate;

struct PrepOptions {
  std::string input, output;
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 0;
  int64_t cutoff_len = 1024;
  TruncationPolicy truncation = TruncationPolicy::truncate;
  double val_size = 0.0;   // fraction held out, exact count round(N x val_size), seeded
  uint64_t seed = 0;
  ShardingOptions sharding;
  ShardInfo info;          // kind/vocab filled from the fields above
  bool strict = false;     // any malformed line is fatal
  bool overwrite = false;
  const ChatTemplate* chat = nullptr;  // tokenizes text records; null: token ids only
  std::optional<RecordFormat> format;  // empty: detected from the file's first record
  RecordSchema schema;                 // field names of the text shapes (dataset_info.json)
  TrainOn train_on = TrainOn::all;     // SFT conversations: which assistant turns carry loss
  uint64_t max_records = 0;            // > 0: only the file's first records (LlamaFactory max_samples)
};

struct PrepReport {
  uint64_t lines = 0, train_pairs = 0, val_pairs = 0, truncated = 0, dropped_too_long = 0;
  std::map<std::string, uint64_t> malformed;  // LineReason name -> count
  std::vector<std::string> examples;          // first malformed lines, "file:line: detail"
  std::optional<Pair> first;                  // the dataset's first pair (as kept: truncated), rank 0 only
  RecordFormat format = RecordFormat::ids;    // the records' shape
  bool format_detected = false;               // from the first record (no --format)
};

// Collective over `comm`. Throws DataError / ConfigError with the same message on every rank.
PrepReport run_prep(const PrepOptions& options, MpiCommunicator& comm);

}  // namespace st
