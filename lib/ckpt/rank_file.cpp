#include "ckpt/rank_file.h"

#include <ATen/ATen.h>

#include "util/errors.h"
#include "util/hdf5_io.h"

namespace st {
namespace {

constexpr const char* kRankFileFormat = "shardtune.checkpoint.rank";

std::string dataset_name(StateKind kind, const std::string& unit) {
  return std::string(state_kind_name(kind)) + "." + unit;
}

}  // namespace

const char* state_kind_name(StateKind kind) {
  switch (kind) {
    case StateKind::master: return "master";
    case StateKind::exp_avg: return "exp_avg";
    case StateKind::exp_avg_sq: return "exp_avg_sq";
  }
  return "?";
}

const std::vector<at::Tensor>& ShardState::of(StateKind kind) const {
  return kind == StateKind::master ? master : kind == StateKind::exp_avg ? exp_avg : exp_avg_sq;
}
std::vector<at::Tensor>& ShardState::of(StateKind kind) {
  return kind == StateKind::master ? master : kind == StateKind::exp_avg ? exp_avg : exp_avg_sq;
}

void write_rank_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardState& state,
                     const RngState& rng, int shard, int shard_count) {
  try {
    const Hdf5Handle file = create_hdf5_file(path);
    write_attribute(file.get(), "format", kRankFileFormat);
    write_attribute(file.get(), "shard", static_cast<int64_t>(shard));
    write_attribute(file.get(), "shard_count", static_cast<int64_t>(shard_count));
    for (StateKind kind : kAllStateKinds) {
      for (size_t u = 0; u < units.size(); ++u) {
        const at::Tensor& tensor = state.of(kind).at(u);
        if (!tensor.is_cpu() || tensor.scalar_type() != at::kFloat || !tensor.is_contiguous()) {
          throw CheckpointError("checkpoint: " + std::string(state_kind_name(kind)) + " of " + units[u].name +
                                " must be a contiguous fp32 host tensor");
        }
        write_1d_dataset(file.get(), dataset_name(kind, units[u].name), tensor.data_ptr<float>(),
                         static_cast<uint64_t>(tensor.numel()), DatasetLayout{});
      }
    }
    write_1d_dataset(file.get(), "rng.cpu", rng.cpu, DatasetLayout{});
    write_1d_dataset(file.get(), "rng.cuda", rng.cuda, DatasetLayout{});
  } catch (const IoError& error) {
    throw IoError(path + ": writing the checkpoint failed (disk full or not writable? earlier checkpoints "
                         "are untouched): " + error.what());
  }
}

RankFileReader::RankFileReader(const std::string& path) : path_(path) {
  try {
    file_ = open_hdf5_file(path);
  } catch (const IoError& error) {
    throw CheckpointError(std::string(error.what()) + "; the checkpoint is incomplete, resume from another one");
  }
  if (read_string_attribute(file_.get(), "format").value_or("") != kRankFileFormat) {
    throw CheckpointError(path + ": attribute 'format' is not " + kRankFileFormat + "; not a checkpoint rank file");
  }
}

void RankFileReader::read(StateKind kind, const std::string& unit, int64_t first, int64_t count, float* out) const {
  const std::string name = dataset_name(kind, unit);
  const auto shape = inspect_1d_dataset(file_.get(), name, H5T_NATIVE_FLOAT);
  if (!shape || !shape->matches_type || static_cast<int64_t>(shape->length) < first + count) {
    throw CheckpointError(path_ + ": dataset '" + name + "' is missing, not float32, or shorter than " +
                          std::to_string(first + count) + " elements; the checkpoint does not match its manifest");
  }
  const Hdf5Handle dataset = open_dataset_for_reads(file_.get(), name, 0);
  read_1d_dataset_into(dataset.get(), static_cast<uint64_t>(first), static_cast<uint64_t>(count), out);
}

RngState RankFileReader::rng() const {
  RngState state;
  for (auto [name, bytes] : {std::pair{"rng.cpu", &state.cpu}, std::pair{"rng.cuda", &state.cuda}}) {
    const auto shape = inspect_1d_dataset(file_.get(), name, H5T_NATIVE_UINT8);
    if (!shape || !shape->matches_type) continue;
    const Hdf5Handle dataset = open_dataset_for_reads(file_.get(), name, 0);
    *bytes = read_1d_dataset<uint8_t>(dataset.get(), 0, shape->length);
  }
  return state;
}

}  // namespace st
