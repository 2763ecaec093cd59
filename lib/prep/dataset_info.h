// A dataset named in a LlamaFactory `dataset_info.json` (`prep --dataset-info DIR --dataset
// NAME`): its local file, shape (formatting alpaca | sharegpt), preference flag (ranking) and
// column/tag renames, as the prep input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "data/pair_table.h"
#include "prep/record_shapes.h"

namespace st {

struct DatasetInfoEntry {
  std::string file;  // DIR/file_name
  RecordFormat format = RecordFormat::alpaca;
  RecordSchema schema;
  PairKind kind = PairKind::sft;  // `ranking: true` is dpo, a `kto_tag` column kto
};

// Throws ConfigError naming DIR/dataset_info.json, the entry and the field for a missing entry,
// a hub-only entry, a file that is not there, an unknown formatting or column, and a `ranking`
// that does not match `kind` (ranking datasets are DPO, others SFT).
DatasetInfoEntry read_dataset_info(const std::string& directory, const std::string& name, PairKind kind);

// Every entry of DIR/dataset_info.json in file order, as read_dataset_info reads it (with the
// kind its `ranking` says), or why it cannot be (`prep --dataset-info DIR` alone prints this).
struct DatasetInfoListing {
  std::string name;
  std::optional<DatasetInfoEntry> entry;
  std::string refusal;  // when there is no entry: "dataset 'NAME' field '...' ..."
};
std::vector<DatasetInfoListing> list_dataset_info(const std::string& directory);

}  // namespace st
