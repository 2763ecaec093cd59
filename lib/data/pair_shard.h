// One HDF5 shard of tokenized pairs (docs/data-format.md): per column a flat int32 token
// dataset and its uint64 offsets (N+1); optional float32 reference log-probs; an optional
// uint8 loss mask over SFT completions (completion's offsets); attributes for
// kind, format version, vocabulary, special ids and provenance. The reader validates everything
// at open and names file, dataset and index in its errors.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "data/pair_table.h"
#include "util/hdf5_handle.h"
#include "util/hdf5_io.h"

namespace st {

inline constexpr const char* kPairFormatName = "shardtune.pairs";
// Version 2 adds the optional `completion_loss_mask`, version 3 the prompt kind and its `record`
// (each written only where used, so other files stay version 1 and readable by older builds).
inline constexpr int64_t kPairFormatVersion = 3;
inline constexpr const char* kLossMaskDataset = "completion_loss_mask";
// A labelled kind's shards: uint8 per example, 1 = the completion is desirable (TRL's `label`).
inline constexpr const char* kLabelDataset = "label";
// Optional in a paired kind's shards: float32 per pair, TRL's `margin` (PairTable::margins).
inline constexpr const char* kMarginDataset = "margin";
// A prompt shard's source records: uint8 JSON text per example and its uint64 `record_offsets`.
inline constexpr const char* kRecordDataset = "record";

struct ShardInfo {
  PairKind kind = PairKind::dpo;
  int64_t vocab_size = 0;
  int64_t bos_id = -1, eos_id = -1, pad_id = 0;  // -1: none
  std::string tokenizer;                         // e.g. the HF tokenizer name; may be empty
  std::string source;                            // provenance: input file, generator, command
  std::string chat_template{};                   // prep --template the text was rendered with; "" for ids
};

// Column names in the file, in order: prompt, then the kind's completion column and any stored
// second one (ExampleSchema); a labelled kind's labels are kLabelDataset.
std::vector<std::string> shard_columns(PairKind kind);
// Every kind with what one example holds, its shard columns and label, for --help:
// "dpo (prompt, chosen, rejected) | sft (prompt, completion) | ...".
std::string example_kinds_text();

void write_pair_shard(const std::string& path, const PairTable& pairs, const ShardInfo& info,
                      const DatasetLayout& layout = {});

class PairShardReader {
 public:
  // Throws DataError naming the path (and dataset/index) for anything not in the format.
  explicit PairShardReader(const std::string& path);

  const std::string& path() const { return path_; }
  const ShardInfo& info() const { return info_; }
  size_t size() const { return pairs_; }
  int64_t max_token_id() const { return max_token_id_; }
  bool has_ref_logps() const { return has_ref_; }
  bool has_loss_mask() const { return loss_mask_.get() >= 0; }
  bool has_margins() const { return !margins_.empty(); }
  bool compressed() const { return compressed_; }  // token datasets carry a filter (deflate)
  // From the offsets alone (no token read): prompt + the longest response, the row length
  // after collation.
  int64_t row_length(size_t index) const;
  Pair read(size_t index) const;
  // The example's source record (kinds that keep one): JSON text.
  std::string read_record(size_t index) const;
  // Only the example's (first) completion: what a KTO example reads of its mismatched partner.
  std::vector<int32_t> read_completion(size_t index) const;
  PairTable read_all() const;

 private:
  void check_index(size_t index) const;  // throws DataError past the last pair
  struct Column {
    Hdf5Handle tokens;  // or the record's bytes
    std::vector<uint64_t> offsets;
  };
  // A ragged dataset `name` of `type` (`bytes` each) and its `<name>_offsets`, checked.
  Column open_ragged(const std::string& name, hid_t type, int bytes, const char* what);
  void read_column(const Column& column, size_t index, std::vector<int32_t>& out) const;

  std::string path_;
  Hdf5Handle file_;
  ShardInfo info_;
  size_t pairs_ = 0;
  int64_t max_token_id_ = -1;
  bool has_ref_ = false;
  bool compressed_ = false;
  std::vector<Column> columns_;
  std::optional<Column> records_;  // kinds that keep their source record
  std::vector<float> ref_chosen_, ref_rejected_;
  std::vector<uint8_t> labels_;  // kto
  std::vector<float> margins_;   // empty: the shard has none
  Hdf5Handle loss_mask_;  // invalid when the shard has none
};

}  // namespace st
