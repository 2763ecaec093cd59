// The trainer's loop as a run uses it (debug preset, synthetic data, online DPO reference,
// accumulation over micro-batches): nothing is read back from the device inside a step; each
// logged window reads its metric sums and the grad norm once (util/host_sync.h), which on a
// GPU are the only points where the host waits for the device.
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "mpi_test_main.h"
#include "prep/synth_dataset.h"
#include "train/train_config.h"
#include "train/trainer.h"
#include "util/check.h"
#include "util/host_sync.h"

namespace st {
namespace {

using namespace st::testing;

TEST(Trainer, ALoggedWindowIsTheOnlyHostRead) {
  // The same directory on every rank: rank 0's pid, broadcast.
  int pid = static_cast<int>(::getpid());
  ST_CHECK_MPI(MPI_Bcast(&pid, 1, MPI_INT, 0, test_world().comm()));
  const std::string dir = std::filesystem::temp_directory_path() / ("st_trainer_syncs_" + std::to_string(pid));
  if (test_world().rank() == 0) {
    std::filesystem::remove_all(dir);
    write_synthetic_dataset(dir + "/data", SynthOptions{}, 96, 0.0, ShardingOptions{});
  }
  ST_CHECK_MPI(MPI_Barrier(test_world().comm()));

  TrainConfig config;
  config.model.preset = "debug";
  config.data.train = dir + "/data/train";
  config.train.output_dir = dir + "/run";
  config.train.micro_batch = 2;
  config.train.grad_accum = 2;
  config.train.max_steps = 6;
  config.train.log_every = 3;
  config.ckpt.every = 0;
  RunOptions run;
  run.save_at_end = false;
  Trainer trainer(config, test_world(), run);
  int64_t windows = 0;
  TrainObserver observer;
  observer.record = [&](const nlohmann::ordered_json&) { ++windows; };
  const int64_t before = host_reads();
  const TrainResult result = trainer.run(observer);
  EXPECT_EQ(result.steps, 6);
  EXPECT_EQ(windows, 2);
  EXPECT_EQ(host_reads() - before, 2 * windows) << "reads in 6 steps of 2 micro-batches, logged every 3";

  ST_CHECK_MPI(MPI_Barrier(test_world().comm()));
  if (test_world().rank() == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace st
