// Checkpoint save, load and HF-export throughput of this world on a preset's full training
// state (fp32 masters + AdamW m and v), through the same code as `shardtune train` and
// `shardtune export`. Run under mpirun by bench/checkpoint_io.sh, which measures dd on the
// same filesystem beside it. Usage: bench_checkpoint PRESET DIR [drop_caches=0|1]
#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "ckpt/checkpoint_reader.h"
#include "ckpt/checkpoint_writer.h"
#include "ckpt/hf_export.h"
#include "distributed/mpi_communicator.h"
#include "distributed/value_gather.h"
#include "distributed/world.h"
#include "fsdp/shard_source.h"
#include "hf/presets.h"
#include "util/host_memory.h"
#include "util/timer.h"

namespace {

using namespace st;

// Empties the page cache so reads come from the device (root only; a no-op otherwise).
bool drop_caches(Communicator& world, bool wanted) {
  bool dropped = false;
  world.barrier();
  if (wanted && world.rank() == 0) {
    std::ofstream drop("/proc/sys/vm/drop_caches");
    drop << "3\n";
    dropped = static_cast<bool>(drop);
  }
  world.barrier();
  return dropped;
}

}  // namespace

int main(int argc, char** argv) {
  World world(argc, argv);
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_checkpoint PRESET DIR [drop_caches=0|1]\n");
    return 2;
  }
  const std::string preset = argv[1];
  const std::filesystem::path dir = argv[2];
  const bool cold = argc > 3 && std::string(argv[3]) == "1";
  MpiCommunicator comm(world.comm(), world.watchdog());
  const int rank = world.rank(), ranks = world.size();
  const ModelConfig config = preset_config(preset);
  ModelShards shards = init_model_shards(config, 1, ranks, rank);
  ShardState state;
  for (const at::Tensor& master : shards.masters) {
    state.of(StateKind::master).push_back(master);
    state.of(StateKind::exp_avg).push_back(master * 0.1);
    state.of(StateKind::exp_avg_sq).push_back(master.abs() * 1e-3);
  }
  if (rank == 0) std::filesystem::remove_all(dir);
  comm.barrier();

  CheckpointWriter writer((dir / "checkpoints").string(), CkptOptions{}, {to_hf_config_json(config), preset, shards.units, ""},
                          comm, {rank, ranks, true});
  comm.barrier();
  Timer timer;
  writer.save(TrainProgress{}, state, {});
  const double save_s = max_over_ranks(comm, timer.seconds());
  const std::string checkpoint = (dir / "checkpoints" / "step_00000000").string();
  uint64_t state_bytes = 0;
  for (const auto& file : read_checkpoint_manifest(checkpoint).files) state_bytes += file.bytes;

  // Into memory the process already holds, as a resume reads into the engine's own tensors.
  const ShardState loaded = host_shard_state(shards.units, /*with_moments=*/true);
  for (StateKind kind : kAllStateKinds) {
    for (const at::Tensor& tensor : loaded.of(kind)) tensor.zero_();
  }
  const bool dropped = drop_caches(comm, cold);
  timer.reset();
  load_checkpoint(checkpoint, shards.units, rank, comm, loaded);
  const double load_s = max_over_ranks(comm, timer.seconds());

  HfExportOptions options;
  reset_peak_resident();
  const double rss_before = max_over_ranks(comm, static_cast<double>(resident_bytes()));
  timer.reset();
  const HfExportResult exported = export_hf_model((dir / "export").string(), config, shards.units, loaded.of(StateKind::master),
                                                  {rank, ranks, true}, comm, options);
  const double export_s = max_over_ranks(comm, timer.seconds());
  const double export_peak = max_over_ranks(comm, static_cast<double>(peak_resident_bytes()));
  if (rank == 0) {
    const double gb = static_cast<double>(state_bytes) / 1e9, export_gb = static_cast<double>(exported.bytes) / 1e9;
    std::printf("%-5d %8.3f %8.2f %8.2f %8.2f %8.2f %9s %8.3f %8.2f %8.2f %11.0f %11.0f\n", ranks, gb, save_s,
                gb / save_s, load_s, gb / load_s, dropped ? "cold" : "warm", export_gb, export_s,
                export_gb / export_s, rss_before / 1e6, export_peak / 1e6);
  }
  comm.barrier();
  if (rank == 0) std::filesystem::remove_all(dir);
  return 0;
}
