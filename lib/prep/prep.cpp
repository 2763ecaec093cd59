#include "prep/prep.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <nlohmann/json.hpp>
#include <variant>

#include "data/sampler.h"
#include "distributed/string_gather.h"
#include "prep/json_array.h"
#include "prep/prep_jsonl.h"
#include "util/check.h"
#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ParsedLine {
  uint64_t line;           // 0-based: within this rank's byte range (JSONL), or in the file (array)
  std::variant<Pair, LineProblem> content;
};

struct RankRecords {
  std::vector<ParsedLine> parsed;
  uint64_t lines = 0;           // JSONL lines of this rank's range, or records of its slice
  bool absolute_lines = false;  // `line` counts from the file's start
};

// An array file's records, read once (shape detection and the split use them); nullopt for
// JSONL, which each rank reads only in its byte range.
std::optional<std::vector<TextRecord>> array_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw DataError(path + ": cannot open the prep input");
  if (!starts_json_array(in)) return std::nullopt;
  in.clear();
  in.seekg(0);
  return json_array_records({std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()}, path);
}

// The shape of the file: --format, or that of the first record that is a JSON object.
RecordReading file_reading(const PrepOptions& o, const std::vector<TextRecord>* array) {
  RecordReading reading{o.kind, o.vocab_size, RecordFormat::ids, false, o.schema, o.train_on, o.chat};
  if (o.format) {
    reading.format = *o.format;
  } else {
    std::vector<TextRecord> first_line;
    if (!array) {
      std::ifstream in(o.input, std::ios::binary);
      std::string text;
      for (uint64_t line = 1; first_line.empty() && std::getline(in, text); ++line) {
        if (text.find_first_not_of(" \t\r") != std::string::npos) first_line.push_back({line, text});
      }
    }
    for (const TextRecord& record : array ? *array : first_line) {
      const nlohmann::json parsed = nlohmann::json::parse(record.text, nullptr, false);
      if (!parsed.is_object()) continue;  // malformed: counted when parsed for real
      const auto shape = detect_record_format(parsed, o.schema);
      if (!shape) {
        std::string keys;
        for (const auto& [key, value] : parsed.items()) keys += (keys.empty() ? "" : ", ") + key;
        throw DataError(o.input + ":" + std::to_string(record.line) + ": a record of no known shape (fields: " + keys +
                        "); expected prompt_ids (ids), messages, prompt/chosen/rejected (trl), conversations "
                        "(sharegpt) or instruction (alpaca); name it with --format or map the columns with "
                        "--dataset-info");
      }
      reading.format = *shape;
      reading.detected = true;
      break;
    }
  }
  if (reading.format != RecordFormat::ids && !o.chat) {
    throw ConfigError("prep: " + o.input + " holds " + enum_name(reading.format) +
                      " text records; tokenize them with --tokenizer MODEL_DIR (and --template NAME)");
  }
  return reading;
}

// Array files: record slice [n * rank / ranks, n * (rank + 1) / ranks).
RankRecords parse_my_array_records(const std::vector<TextRecord>& records, const RecordReading& reading, int rank,
                                   int ranks) {
  const size_t begin = records.size() * rank / ranks;
  const size_t end = records.size() * (rank + 1) / ranks;
  RankRecords out{{}, end - begin, true};
  for (size_t i = begin; i < end; ++i) {
    out.parsed.push_back({records[i].line - 1, parse_pair_record(records[i].text, reading)});
  }
  return out;
}

// JSONL: lines whose first byte lies in [size * rank / ranks, size * (rank + 1) / ranks).
RankRecords parse_my_lines(const PrepOptions& o, const RecordReading& reading, int rank, int ranks) {
  std::ifstream in(o.input, std::ios::binary);
  if (!in) throw DataError(o.input + ": cannot open the prep input");
  const auto size = static_cast<uint64_t>(fs::file_size(o.input));
  const uint64_t begin = size * rank / ranks;
  const uint64_t end = size * (rank + 1) / ranks;
  uint64_t position = begin;
  std::string text;
  if (begin > 0) {  // a line that started before `begin` belongs to the previous rank
    in.seekg(static_cast<std::streamoff>(begin - 1));
    std::getline(in, text);
    position = begin - 1 + text.size() + 1;
  }
  RankRecords out;
  while (position < end && std::getline(in, text)) {
    position += text.size() + 1;
    if (text.find_first_not_of(" \t\r") != std::string::npos) {
      out.parsed.push_back({out.lines, parse_pair_record(text, reading)});
    }
    ++out.lines;
  }
  return out;
}

uint64_t exclusive_prefix(uint64_t value, MPI_Comm comm, int rank) {
  uint64_t before = 0;
  ST_CHECK_MPI(MPI_Exscan(&value, &before, 1, MPI_UINT64_T, MPI_SUM, comm));
  return rank == 0 ? 0 : before;
}

uint64_t global_sum(uint64_t value, MPI_Comm comm) {
  ST_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_UINT64_T, MPI_SUM, comm));
  return value;
}

// Removes the staging directory unless released (rank 0 only): a failed prep leaves nothing.
class StagingGuard {
 public:
  StagingGuard(std::string path, bool owner) : path_(std::move(path)), owner_(owner) {}
  ~StagingGuard() {
    std::error_code ignored;
    if (owner_) fs::remove_all(path_, ignored);
  }
  void release() { owner_ = false; }

 private:
  std::string path_;
  bool owner_;
};

json entries_json(const std::vector<ShardEntry>& entries) {
  json out = json::array();
  for (const auto& e : entries) out.push_back({e.file, e.pairs, e.tokens, e.crc32});
  return out;
}

// Why no record gave a pair: the counts per reason and the first problem, with the fix.
std::string no_usable_pairs(const PrepOptions& o, const PrepReport& report) {
  std::string text = o.input + ": no usable pairs from " + std::to_string(report.lines) + " records:";
  for (const auto& [reason, count] : report.malformed) text += " " + std::to_string(count) + " " + reason + ",";
  text += " " + std::to_string(report.dropped_too_long) + " dropped as longer than --cutoff-len " +
          std::to_string(o.cutoff_len);
  if (!report.examples.empty()) text += "; the first: " + report.examples.front();
  if (report.dropped_too_long > 0) text += "; raise --cutoff-len (data.cutoff_len, cutoff_len) to keep the long ones";
  return text;
}

}  // namespace

PrepReport run_prep(const PrepOptions& o, MpiCommunicator& comm) {
  const MPI_Comm mpi = comm.comm();
  const int rank = comm.rank();
  const int ranks = comm.size();
  if (o.cutoff_len < 2) throw ConfigError("prep: --cutoff-len must be >= 2");
  if (o.val_size < 0 || o.val_size >= 1) throw ConfigError("prep: --val-size must be in [0, 1)");
  if (!o.overwrite && fs::exists(o.output)) {
    throw ConfigError("prep: output " + o.output + " exists; pass --overwrite or choose another path");
  }
  const std::string staging = o.output + ".tmp";
  if (rank == 0) {
    fs::remove_all(staging);
    fs::create_directories(staging + "/train");
    if (o.val_size > 0) fs::create_directories(staging + "/val");
  }
  comm.barrier();
  StagingGuard guard(staging, rank == 0);

  PrepReport report;
  const std::optional<std::vector<TextRecord>> array = array_records(o.input);
  const RecordReading reading = file_reading(o, array ? &*array : nullptr);
  report.format = reading.format;
  report.format_detected = reading.detected;
  RankRecords mine =
      array ? parse_my_array_records(*array, reading, rank, ranks) : parse_my_lines(o, reading, rank, ranks);
  const uint64_t line_base = exclusive_prefix(mine.lines, mpi, rank);
  report.lines = global_sum(mine.lines, mpi);
  std::vector<ParsedLine>& parsed = mine.parsed;
  if (o.max_records > 0) {  // the file's first records, whichever rank read them
    const uint64_t record_base = exclusive_prefix(parsed.size(), mpi, rank);
    const uint64_t mine_kept =
        record_base >= o.max_records ? 0 : std::min<uint64_t>(parsed.size(), o.max_records - record_base);
    parsed.erase(parsed.begin() + static_cast<std::ptrdiff_t>(mine_kept), parsed.end());
  }

  // Truncate / drop, collect problems with global line numbers.
  std::vector<Pair> kept;
  std::string first_problem;
  for (auto& line : parsed) {
    if (auto* problem = std::get_if<LineProblem>(&line.content)) {
      report.malformed[enum_name(problem->reason)]++;
      if (report.examples.size() < 5) {
        const uint64_t line_number = (mine.absolute_lines ? 0 : line_base) + line.line + 1;
        report.examples.push_back(o.input + ":" + std::to_string(line_number) +
                                  ": " + problem->detail);
      }
      continue;
    }
    Pair& pair = std::get<Pair>(line.content);
    const FitResult fit = fit_to_cutoff(pair, o.cutoff_len, o.truncation);
    if (fit == FitResult::dropped) {
      report.dropped_too_long++;
      continue;
    }
    if (fit == FitResult::truncated) report.truncated++;
    kept.push_back(std::move(pair));
  }
  // Problems of all ranks, in rank (= file) order.
  const auto all_examples = all_gather_strings(comm, json(report.examples).dump());
  json counts = report.malformed;
  const auto all_counts = all_gather_strings(comm, counts.dump());
  report.examples.clear();
  report.malformed.clear();
  for (int r = 0; r < ranks; ++r) {
    for (const auto& example : json::parse(all_examples[r])) {
      if (report.examples.size() < 5) report.examples.push_back(example.get<std::string>());
    }
    const json counts_of_rank = json::parse(all_counts[r]);  // items() must not outlive it
    for (const auto& [reason, count] : counts_of_rank.items()) {
      report.malformed[reason] += count.get<uint64_t>();
    }
  }
  report.truncated = global_sum(report.truncated, mpi);
  report.dropped_too_long = global_sum(report.dropped_too_long, mpi);
  if (o.strict && !report.malformed.empty()) {
    throw DataError("prep --strict: " + report.examples.front() + " (and " +
                    std::to_string(report.malformed.size()) + " kind(s) of problems in total)");
  }

  if (rank == 0 && !kept.empty()) report.first = kept.front();
  // Exact, seeded validation split over the global order of kept pairs.
  const uint64_t pair_base = exclusive_prefix(kept.size(), mpi, rank);
  const uint64_t total = global_sum(kept.size(), mpi);
  if (total == 0) throw DataError(no_usable_pairs(o, report));
  const auto val_count = static_cast<uint64_t>(static_cast<double>(total) * o.val_size + 0.5);
  std::vector<bool> in_val(total, false);
  if (val_count > 0) {
    const GlobalSampler permutation(total, 1, o.seed);
    const auto& order = permutation.epoch_order(0);
    for (uint64_t k = 0; k < val_count; ++k) in_val[order[k]] = true;
  }
  PairTable train, val;
  train.kind = val.kind = o.kind;
  for (size_t i = 0; i < kept.size(); ++i) (in_val[pair_base + i] ? val : train).append(kept[i]);

  ShardInfo info = o.info;
  info.kind = o.kind;
  info.vocab_size = o.vocab_size;
  info.source = o.input;
  const std::string part = "part-r" + std::to_string(rank);
  const auto train_entries = write_shards(staging + "/train", part, train, info, o.sharding);
  const auto val_entries = write_shards(staging + "/val", part, val, info, o.sharding);
  const auto all_train = all_gather_strings(comm, entries_json(train_entries).dump());
  const auto all_val = all_gather_strings(comm, entries_json(val_entries).dump());
  report.train_pairs = total - val_count;
  report.val_pairs = val_count;

  if (rank == 0) {
    for (const auto& [split, gathered] : {std::pair{"train", &all_train}, std::pair{"val", &all_val}}) {
      if (std::string(split) == "val" && val_count == 0) continue;
      Manifest manifest{o.kind, o.vocab_size, split, o.input, {}, std::nullopt, o.cutoff_len};
      for (const auto& text : *gathered) {
        for (const auto& e : json::parse(text)) {
          manifest.shards.push_back({e[0], e[1], e[2], e[3]});
        }
      }
      write_manifest(staging + "/" + split, manifest);
    }
    if (fs::exists(o.output)) fs::remove_all(o.output);  // only reached with --overwrite
    fs::rename(staging, o.output);
    guard.release();
  }
  comm.barrier();
  return report;
}

}  // namespace st
