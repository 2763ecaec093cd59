// A dataset named in a LlamaFactory `dataset_info.json` (`prep --dataset-info DIR --dataset
// NAME`): its local file, shape (formatting alpaca | sharegpt), preference flag (ranking) and
// column/tag renames, as the prep input.
#pragma once

#include <string>

#include "data/pair_table.h"
#include "prep/record_shapes.h"

namespace st {

struct DatasetInfoEntry {
  std::string file;  // DIR/file_name
  RecordFormat format = RecordFormat::alpaca;
  RecordSchema schema;
};

// Throws ConfigError naming DIR/dataset_info.json, the entry and the field for a missing entry,
// a hub-only entry, a file that is not there, an unknown formatting or column, and a `ranking`
// that does not match `kind` (ranking datasets are DPO, others SFT).
DatasetInfoEntry read_dataset_info(const std::string& directory, const std::string& name, PairKind kind);

}  // namespace st
