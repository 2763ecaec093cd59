#include "ckpt/rank_file.h"

#include <ATen/ATen.h>

#include "util/dynamic_quant.h"
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
    case StateKind::exp_avg_code: return "exp_avg_code";
    case StateKind::exp_avg_absmax: return "exp_avg_absmax";
    case StateKind::exp_avg_sq_code: return "exp_avg_sq_code";
    case StateKind::exp_avg_sq_absmax: return "exp_avg_sq_absmax";
  }
  return "?";
}

at::ScalarType state_kind_dtype(StateKind kind) {
  return kind == StateKind::exp_avg_code || kind == StateKind::exp_avg_sq_code ? at::kByte : at::kFloat;
}

int64_t state_kind_stride(StateKind kind) {
  return kind == StateKind::exp_avg_absmax || kind == StateKind::exp_avg_sq_absmax ? kDynamicBlockSize : 1;
}

void write_rank_file(const std::string& path, const std::vector<UnitLayout>& units, const ShardState& state,
                     const RngState& rng, int shard, int shard_count) {
  try {
    const Hdf5Handle file = create_hdf5_file(path);
    write_attribute(file.get(), "format", kRankFileFormat);
    write_attribute(file.get(), "shard", static_cast<int64_t>(shard));
    write_attribute(file.get(), "shard_count", static_cast<int64_t>(shard_count));
    for (StateKind kind : kAllStateKinds) {
      const std::vector<at::Tensor>& tensors = state.of(kind);
      for (size_t u = 0; u < tensors.size(); ++u) {
        const at::Tensor& tensor = tensors[u];
        if (!tensor.is_cpu() || tensor.scalar_type() != state_kind_dtype(kind) || !tensor.is_contiguous()) {
          throw CheckpointError("checkpoint: " + std::string(state_kind_name(kind)) + " of " + units.at(u).name +
                                " must be a contiguous " + c10::toString(state_kind_dtype(kind)) + " host tensor");
        }
        const std::string name = dataset_name(kind, units.at(u).name);
        if (state_kind_dtype(kind) == at::kByte) {
          write_1d_dataset(file.get(), name, tensor.data_ptr<uint8_t>(), static_cast<uint64_t>(tensor.numel()), DatasetLayout{});
        } else {
          write_1d_dataset(file.get(), name, tensor.data_ptr<float>(), static_cast<uint64_t>(tensor.numel()), DatasetLayout{});
        }
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

void RankFileReader::read(StateKind kind, const std::string& unit, int64_t first, int64_t count, void* out) const {
  const std::string name = dataset_name(kind, unit);
  const bool bytes = state_kind_dtype(kind) == at::kByte;
  const auto shape = inspect_1d_dataset(file_.get(), name, bytes ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT);
  if (!shape || !shape->matches_type || static_cast<int64_t>(shape->length) < first + count) {
    throw CheckpointError(path_ + ": dataset '" + name + "' is missing, not " + (bytes ? "uint8" : "float32") +
                          ", or shorter than " + std::to_string(first + count) +
                          " values; the checkpoint does not match its manifest");
  }
  const Hdf5Handle dataset = open_dataset_for_reads(file_.get(), name, 0);
  if (bytes) {
    read_1d_dataset_into(dataset.get(), static_cast<uint64_t>(first), static_cast<uint64_t>(count), static_cast<uint8_t*>(out));
  } else {
    read_1d_dataset_into(dataset.get(), static_cast<uint64_t>(first), static_cast<uint64_t>(count), static_cast<float*>(out));
  }
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
