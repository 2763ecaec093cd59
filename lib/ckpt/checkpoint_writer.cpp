#include "ckpt/checkpoint_writer.h"

#include <ATen/ATen.h>
#include <hdf5.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>

#include "ckpt/checkpoint_directory.h"
#include "distributed/value_gather.h"
#include "util/build_info.h"
#include "util/check.h"
#include "util/errors.h"
#include "util/fault_injection.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/timer.h"

namespace st {
namespace {

namespace fs = std::filesystem;

// Host contiguous copies in `kind`'s dtype (`copy` forces one even for host tensors, for async writes).
std::vector<at::Tensor> to_host(const std::vector<at::Tensor>& tensors, StateKind kind, bool copy) {
  std::vector<at::Tensor> host;
  for (const at::Tensor& tensor : tensors) {
    at::Tensor moved = tensor.to(at::kCPU, state_kind_dtype(kind), /*non_blocking=*/false, copy).contiguous();
    host.push_back(moved);
  }
  return host;
}

}  // namespace

struct CheckpointWriter::Pending {
  TrainProgress progress;
  ShardState state;
  RngState rng;
  std::string temporary;  // step_X.tmp
  std::string file;       // this rank's file in it
  uint32_t crc32 = 0;
  uint64_t bytes = 0;
  Timer timer;
  std::thread thread;
  std::atomic<bool> done{false};
  std::exception_ptr error;

  void write(const std::vector<UnitLayout>& units, const ShardPlace& place) {
    try {
      write_rank_file(file, units, state, rng, place.shard, place.shard_count);
      fault_kill_in_save(progress.step, place.shard == place.shard_count - 1);
      sync_file(file);
      crc32 = file_crc32(file);
      bytes = fs::file_size(file);
      state = {};  // the snapshot's memory goes back before the commit
    } catch (...) {
      error = std::current_exception();
    }
    done = true;
  }
};

CheckpointWriter::CheckpointWriter(std::string directory, const CkptOptions& options, CheckpointIdentity identity,
                                   Communicator& world, ShardPlace place)
    : directory_(std::move(directory)), options_(options), identity_(std::move(identity)), world_(world),
      place_(place) {
  hbool_t threadsafe = 0;
  ST_CHECK_HDF5(H5is_library_threadsafe(&threadsafe));
  if (options_.async && !threadsafe) {  // the data loader reads HDF5 on its own thread meanwhile
    throw ConfigError("ckpt.async = true needs an HDF5 library built thread-safe, and this one is not "
                      "(Spack: hdf5+threadsafe); set ckpt.async = false");
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (pending_ && pending_->thread.joinable()) pending_->thread.join();
}

void CheckpointWriter::save(const TrainProgress& progress, const ShardState& state, const RngState& rng) {
  finish();
  pending_ = std::make_unique<Pending>();
  Pending& job = *pending_;
  job.progress = progress;
  job.rng = rng;
  job.temporary = (fs::path(directory_) / (step_directory_name(progress.step) + ".tmp")).string();
  job.file = (fs::path(job.temporary) / rank_file_name(place_.shard)).string();
  if (world_.rank() == 0) {
    try {
      fs::create_directories(directory_);
      fs::remove_all(job.temporary);
      fs::create_directory(job.temporary);
    } catch (const fs::filesystem_error& error) {
      throw IoError("ckpt.dir = " + directory_ + ": cannot create " + job.temporary + " (" + error.what() +
                    "); earlier checkpoints are untouched");
    }
  }
  world_.barrier();
  if (!place_.writes) {
    job.done = true;
  } else if (options_.async) {
    for (StateKind kind : kAllStateKinds) job.state.of(kind) = to_host(state.of(kind), kind, /*copy=*/true);
    job.thread = std::thread([this, &job] { job.write(identity_.units, place_); });
  } else {
    for (StateKind kind : kAllStateKinds) job.state.of(kind) = to_host(state.of(kind), kind, /*copy=*/false);
    job.write(identity_.units, place_);
  }
  if (!options_.async) finish();
}

void CheckpointWriter::poll() {
  if (!pending_) return;
  if (pending_->done && pending_->error) std::rethrow_exception(pending_->error);
  if (max_over_ranks(world_, pending_->done ? 0.0 : 1.0) > 0.0) return;  // a rank is still writing
  commit();
}

void CheckpointWriter::finish() {
  if (pending_) commit();  // commit() waits for the write and rethrows its error
}

void CheckpointWriter::commit() {
  Pending& job = *pending_;
  if (job.thread.joinable()) job.thread.join();
  if (job.error) std::rethrow_exception(job.error);
  const std::vector<double> written = all_gather_values(
      world_, {place_.writes ? 1.0 : 0.0, static_cast<double>(place_.shard), static_cast<double>(job.crc32),
               static_cast<double>(job.bytes)});
  if (world_.rank() == 0) {
    CheckpointManifest manifest;
    manifest.progress = job.progress;
    manifest.world_size = world_.size();
    manifest.optimizer = identity_.optimizer;
    for (const UnitLayout& unit : identity_.units) manifest.units.push_back({unit.name, unit.numel});
    manifest.model_config = identity_.model_config;
    manifest.model_source = identity_.model_source;
    manifest.config = identity_.config;
    manifest.adapter = identity_.adapter;
    manifest.git_sha = git_sha();
    manifest.files.resize(static_cast<size_t>(place_.shard_count));
    for (size_t rank = 0; rank < written.size() / 4; ++rank) {
      if (written[4 * rank] == 0.0) continue;
      const auto shard = static_cast<int>(written[4 * rank + 1]);
      manifest.files[static_cast<size_t>(shard)] = {rank_file_name(shard), static_cast<uint64_t>(written[4 * rank + 3]),
                                                    static_cast<uint32_t>(written[4 * rank + 2])};
    }
    const fs::path temporary = job.temporary;
    write_file_atomically((temporary / kCheckpointManifestName).string(), format_checkpoint_manifest(manifest));
    write_file_atomically((temporary / kCompleteMarker).string(), "step " + std::to_string(job.progress.step) + "\n");
    sync_directory(temporary.string());
    const std::string name = step_directory_name(job.progress.step);
    const fs::path final_path = fs::path(directory_) / name;
    fs::remove_all(final_path);  // a checkpoint of the same step from a run resumed before it
    fs::rename(temporary, final_path);
    point_latest_at(directory_, name);
    sync_directory(directory_);
    apply_retention(directory_, options_.keep_last, name);
    uint64_t bytes = 0;
    for (const CheckpointFile& file : manifest.files) bytes += file.bytes;
    log0("checkpoint: step ", job.progress.step, " saved to ", final_path.string(), " (",
         static_cast<double>(bytes) / 1e9, " GB in ", job.timer.seconds(), " s", options_.async ? ", async" : "", ")");
  }
  world_.barrier();  // on return the checkpoint is complete for every rank
  last_committed_ = job.progress.step;
  pending_.reset();
}

}  // namespace st
