#include "data/pair_shard.h"

#include <algorithm>
#include <tuple>

#include "util/check.h"
#include "util/errors.h"

namespace st {
namespace {

// Per compressed token dataset: a whole 100k-pair shard column of ~40 MB decompressed stays
// cached, so shuffled reads decompress each chunk once instead of once per pair.
constexpr size_t kTokenChunkCacheBytes = 64u << 20;

int32_t max_token(const PairTable& pairs) {
  int32_t found = -1;
  for (const TokenColumn* column : {&pairs.prompt, &pairs.chosen, &pairs.rejected}) {
    for (int32_t token : column->tokens) found = std::max(found, token);
  }
  return found;
}

DataError shard_error(const std::string& path, const std::string& what) {
  return DataError(path + ": " + what + "; regenerate it with `shardtune prep` or `shardtune synth`");
}

std::string unstored(const std::string& dataset, const DatasetShape& shape) {
  return "dataset '" + dataset + "' claims " + std::to_string(shape.length) + " entries but stores " +
         std::to_string(shape.stored_bytes) + " bytes (the file is truncated or damaged)";
}

}  // namespace

std::vector<std::string> shard_columns(PairKind kind) {
  const ExampleSchema& schema = schema_of(kind);
  if (schema.completion_column == nullptr) return {"prompt"};
  if (schema.second == SecondSequence::stored) return {"prompt", schema.completion_column, schema.second_column};
  return {"prompt", schema.completion_column};
}

std::string example_kinds_text() {
  std::string text;
  for (const ExampleSchema& schema : kExampleSchemas) {
    std::vector<std::string> columns = shard_columns(schema.kind);
    if (schema.labelled) columns.emplace_back(kLabelDataset);
    if (schema.keeps_record) columns.emplace_back(kRecordDataset);
    std::string held;
    for (const std::string& column : columns) held += (held.empty() ? "" : ", ") + column;
    text += (text.empty() ? "" : " | ") + std::string(enum_name(schema.kind)) + " (" + held + ")";
  }
  return text;
}

void write_pair_shard(const std::string& path, const PairTable& pairs, const ShardInfo& info,
                      const DatasetLayout& layout) {
  const Hdf5Handle file = create_hdf5_file(path);
  const hid_t root = file.get();
  write_attribute(root, "format", std::string(kPairFormatName));
  const bool keeps_record = schema_of(info.kind).keeps_record;
  write_attribute(root, "format_version", keeps_record ? int64_t{3} : pairs.has_loss_mask() ? int64_t{2} : int64_t{1});
  write_attribute(root, "kind", std::string(enum_name(info.kind)));
  write_attribute(root, "vocab_size", info.vocab_size);
  write_attribute(root, "bos_id", info.bos_id);
  write_attribute(root, "eos_id", info.eos_id);
  write_attribute(root, "pad_id", info.pad_id);
  write_attribute(root, "tokenizer", info.tokenizer);
  write_attribute(root, "source", info.source);
  write_attribute(root, "chat_template", info.chat_template);
  write_attribute(root, "num_pairs", static_cast<int64_t>(pairs.size()));
  write_attribute(root, "max_token_id", static_cast<int64_t>(max_token(pairs)));
  const TokenColumn* columns[] = {&pairs.prompt, &pairs.chosen, &pairs.rejected};
  const auto names = shard_columns(info.kind);
  for (size_t i = 0; i < names.size(); ++i) {
    write_1d_dataset(root, names[i], columns[i]->tokens, layout);
    write_1d_dataset(root, names[i] + "_offsets", columns[i]->offsets, layout);
  }
  if (pairs.has_loss_mask()) {
    if (!schema_of(info.kind).maskable) throw DataError(path + ": a loss mask is for SFT completions only");
    write_1d_dataset(root, kLossMaskDataset, pairs.loss_mask, layout);
  }
  if (schema_of(info.kind).labelled) write_1d_dataset(root, kLabelDataset, pairs.labels, layout);
  if (keeps_record) {
    if (pairs.records.size() != pairs.size()) throw DataError(path + ": a prompt example without its source record");
    write_1d_dataset(root, kRecordDataset, pairs.records.bytes, layout);
    write_1d_dataset(root, std::string(kRecordDataset) + "_offsets", pairs.records.offsets, layout);
  }
  if (pairs.has_margins()) write_1d_dataset(root, kMarginDataset, pairs.margins, layout);
  if (pairs.has_ref_logps()) {
    write_1d_dataset(root, "ref_chosen_logp", pairs.ref_chosen_logp, layout);
    write_1d_dataset(root, "ref_rejected_logp", pairs.ref_rejected_logp, layout);
  }
  ST_CHECK_HDF5(H5Fflush(root, H5F_SCOPE_LOCAL));
}

// HDF5's own failures on a damaged file name the call; the path is added here.
PairShardReader::PairShardReader(const std::string& path) try : path_(path) {
  try {
    file_ = open_hdf5_file(path);
  } catch (const IoError& error) {
    throw DataError(error.what());
  }
  const hid_t root = file_.get();
  auto fail = [&](const std::string& what) { return shard_error(path, what); };
  const auto format = read_string_attribute(root, "format");
  if (format != std::string(kPairFormatName)) {
    throw fail("attribute 'format' is " + (format ? "'" + *format + "'" : std::string("missing")) +
               ", not '" + kPairFormatName + "' (not a shardtune pair shard)");
  }
  const auto version = read_int_attribute(root, "format_version");
  if (!version || *version < 1 || *version > kPairFormatVersion) {
    throw fail("attribute 'format_version' is " + (version ? std::to_string(*version) : "missing") +
               "; this build reads versions 1.." + std::to_string(kPairFormatVersion));
  }
  if (!find_enum(read_string_attribute(root, "kind").value_or(""), info_.kind)) {
    throw fail("attribute 'kind' must be one of " + enum_choices<PairKind>());
  }
  const auto vocab = read_int_attribute(root, "vocab_size");
  const auto max_id = read_int_attribute(root, "max_token_id");
  const auto pairs = read_int_attribute(root, "num_pairs");
  if (!vocab || *vocab <= 0 || !max_id || !pairs || *pairs < 0) {
    throw fail("attributes 'vocab_size', 'max_token_id' and 'num_pairs' are required");
  }
  info_.vocab_size = *vocab;
  max_token_id_ = *max_id;
  pairs_ = static_cast<size_t>(*pairs);
  if (max_token_id_ >= info_.vocab_size) {
    throw fail("token id " + std::to_string(max_token_id_) + " is outside its vocab_size " +
               std::to_string(info_.vocab_size));
  }
  info_.bos_id = read_int_attribute(root, "bos_id").value_or(-1);
  info_.eos_id = read_int_attribute(root, "eos_id").value_or(-1);
  info_.pad_id = read_int_attribute(root, "pad_id").value_or(0);
  info_.tokenizer = read_string_attribute(root, "tokenizer").value_or("");
  info_.source = read_string_attribute(root, "source").value_or("");
  info_.chat_template = read_string_attribute(root, "chat_template").value_or("");

  for (const std::string& name : shard_columns(info_.kind)) {
    columns_.push_back(open_ragged(name, H5T_NATIVE_INT32, 4, "token"));
    const Hdf5Handle create_list = hdf5_plist(ST_CHECK_HDF5(H5Dget_create_plist(columns_.back().tokens.get())));
    compressed_ = compressed_ || ST_CHECK_HDF5(H5Pget_nfilters(create_list.get())) > 0;
  }
  if (schema_of(info_.kind).keeps_record) records_ = open_ragged(kRecordDataset, H5T_NATIVE_UINT8, 1, "byte");
  if (const auto mask = inspect_1d_dataset(root, kLossMaskDataset, H5T_NATIVE_UINT8)) {
    const uint64_t completion_tokens = stores_completion(info_.kind) ? columns_[1].offsets.back() : 0;
    if (!schema_of(info_.kind).maskable || !mask->matches_type || mask->length != completion_tokens) {
      throw fail(std::string("dataset '") + kLossMaskDataset + "' must be 1-D uint8 with one entry per completion token (" +
                 std::to_string(completion_tokens) + "), in an sft shard");
    }
    if (!mask->storage_holds(1)) throw fail(unstored(kLossMaskDataset, *mask));
    loss_mask_ = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, kLossMaskDataset, H5P_DEFAULT)));
  }
  if (schema_of(info_.kind).labelled) {
    const auto labels = inspect_1d_dataset(root, kLabelDataset, H5T_NATIVE_UINT8);
    if (!labels || !labels->matches_type || labels->length != pairs_) {
      throw fail(std::string("dataset '") + kLabelDataset + "' (1-D uint8, one desirable/undesirable label per example: " +
                 std::to_string(pairs_) + ") is missing or mistyped in a " + enum_name(info_.kind) + " shard");
    }
    if (!labels->storage_holds(1)) throw fail(unstored(kLabelDataset, *labels));
    const Hdf5Handle set = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, kLabelDataset, H5P_DEFAULT)));
    labels_ = read_1d_dataset<uint8_t>(set.get(), 0, pairs_);
  }
  if (const auto margins = inspect_1d_dataset(root, kMarginDataset, H5T_NATIVE_FLOAT)) {
    if (!margins->matches_type || margins->length != pairs_ || !stores_rejected(info_.kind)) {
      throw fail(std::string("dataset '") + kMarginDataset + "' must be float32 with num_pairs entries, in a "
                 "preference pairs' shard; re-run shardtune prep");
    }
    if (!margins->storage_holds(4)) throw fail(unstored(kMarginDataset, *margins));
    const Hdf5Handle set = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, kMarginDataset, H5P_DEFAULT)));
    margins_ = read_1d_dataset<float>(set.get(), 0, pairs_);
  }
  const auto ref_chosen = inspect_1d_dataset(root, "ref_chosen_logp", H5T_NATIVE_FLOAT);
  const auto ref_rejected = inspect_1d_dataset(root, "ref_rejected_logp", H5T_NATIVE_FLOAT);
  if (ref_chosen.has_value() != ref_rejected.has_value()) {
    throw fail("has only one of 'ref_chosen_logp' and 'ref_rejected_logp'");
  }
  if (ref_chosen) {
    for (const auto* shape : {&*ref_chosen, &*ref_rejected}) {
      if (!shape->matches_type || shape->length != pairs_) {
        throw fail("reference log-prob datasets must be float32 with num_pairs entries");
      }
      if (!shape->storage_holds(4)) throw fail(unstored("ref_chosen_logp / ref_rejected_logp", *shape));
    }
    const Hdf5Handle chosen = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, "ref_chosen_logp", H5P_DEFAULT)));
    const Hdf5Handle rejected = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, "ref_rejected_logp", H5P_DEFAULT)));
    ref_chosen_ = read_1d_dataset<float>(chosen.get(), 0, pairs_);
    ref_rejected_ = read_1d_dataset<float>(rejected.get(), 0, pairs_);
    has_ref_ = true;
  }
} catch (const IoError& error) {
  throw DataError(path + ": " + error.what());
}

PairShardReader::Column PairShardReader::open_ragged(const std::string& name, hid_t type, int bytes, const char* what) {
  const hid_t root = file_.get();
  auto fail = [&](const std::string& problem) { return shard_error(path_, problem); };
  const std::string offsets_name = name + "_offsets";
  const auto values = inspect_1d_dataset(root, name, type);
  const auto offsets = inspect_1d_dataset(root, offsets_name, H5T_NATIVE_UINT64);
  if (!values || !values->matches_type) {
    throw fail("dataset '" + name + "' (1-D " + (bytes == 4 ? "int32" : "uint8") + ") is missing or mistyped");
  }
  if (!offsets || !offsets->matches_type || offsets->length != pairs_ + 1) {
    throw fail("dataset '" + offsets_name + "' must be 1-D uint64 of num_pairs + 1 = " + std::to_string(pairs_ + 1) +
               " entries");
  }
  for (const auto& [dataset, shape, size] : {std::tuple{name, *values, bytes}, {offsets_name, *offsets, 8}}) {
    if (!shape.storage_holds(size)) throw fail(unstored(dataset, shape));
  }
  Column column;
  column.tokens = open_dataset_for_reads(root, name, kTokenChunkCacheBytes);
  const Hdf5Handle offset_set = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(root, offsets_name.c_str(), H5P_DEFAULT)));
  column.offsets = read_1d_dataset<uint64_t>(offset_set.get(), 0, pairs_ + 1);
  if (column.offsets.front() != 0 || column.offsets.back() != values->length) {
    throw fail("dataset '" + offsets_name + "' must start at 0 and end at the " + what + " count " +
               std::to_string(values->length));
  }
  for (size_t i = 0; i < pairs_; ++i) {
    if (column.offsets[i + 1] < column.offsets[i]) {
      throw fail("dataset '" + offsets_name + "' decreases at index " + std::to_string(i));
    }
  }
  return column;
}

int64_t PairShardReader::row_length(size_t index) const {
  int64_t longest = 0;
  for (size_t c = 1; c < columns_.size(); ++c) {
    longest = std::max<int64_t>(longest, columns_[c].offsets[index + 1] - columns_[c].offsets[index]);
  }
  return static_cast<int64_t>(columns_[0].offsets[index + 1] - columns_[0].offsets[index]) + longest;
}

void PairShardReader::read_column(const Column& column, size_t index, std::vector<int32_t>& out) const {
  const uint64_t first = column.offsets[index];
  read_1d_dataset_into(column.tokens.get(), first, column.offsets[index + 1] - first, out);
  for (int32_t token : out) {
    if (token < 0 || token >= info_.vocab_size) {
      throw DataError(path_ + ": pair " + std::to_string(index) + " holds token id " +
                      std::to_string(token) + " outside vocab_size " +
                      std::to_string(info_.vocab_size) + " (the file is damaged)");
    }
  }
}

void PairShardReader::check_index(size_t index) const {
  if (index >= pairs_) {
    throw DataError(path_ + ": pair index " + std::to_string(index) + " >= " + std::to_string(pairs_));
  }
}

std::string PairShardReader::read_record(size_t index) const {
  check_index(index);
  if (!records_) throw DataError(path_ + ": a " + std::string(enum_name(info_.kind)) + " shard keeps no source records");
  std::vector<uint8_t> bytes;
  const uint64_t first = records_->offsets[index];
  read_1d_dataset_into(records_->tokens.get(), first, records_->offsets[index + 1] - first, bytes);
  return {bytes.begin(), bytes.end()};
}

std::vector<int32_t> PairShardReader::read_completion(size_t index) const {
  check_index(index);
  std::vector<int32_t> completion;
  read_column(columns_[1], index, completion);
  return completion;
}

Pair PairShardReader::read(size_t index) const {
  check_index(index);
  Pair pair;
  read_column(columns_[0], index, pair.prompt);
  if (stores_completion(info_.kind)) read_column(columns_[1], index, pair.chosen);
  if (records_) pair.record = read_record(index);
  if (stores_rejected(info_.kind)) read_column(columns_[2], index, pair.rejected);
  if (schema_of(info_.kind).labelled) pair.label = labels_[index] != 0;
  if (has_loss_mask()) {
    const uint64_t first = columns_[1].offsets[index];
    read_1d_dataset_into(loss_mask_.get(), first, columns_[1].offsets[index + 1] - first, pair.loss_mask);
  }
  if (has_ref_) {
    pair.ref_chosen_logp = ref_chosen_[index];
    pair.ref_rejected_logp = ref_rejected_[index];
  }
  if (!margins_.empty()) pair.margin = margins_[index];
  return pair;
}

PairTable PairShardReader::read_all() const {
  PairTable table;
  table.kind = info_.kind;
  for (size_t i = 0; i < pairs_; ++i) table.append(read(i));
  return table;
}

}  // namespace st
