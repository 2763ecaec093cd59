// prep on N ranks writes the same dataset, in the same order, as on one rank; the loader's
// ranks together read each pair of an epoch exactly once.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "data/pair_dataset.h"
#include "data/pair_loader.h"
#include "distributed/string_gather.h"
#include "mpi_test_main.h"
#include "prep/prep.h"
#include "prep/synth.h"
#include "util/check.h"

namespace st {
namespace {

namespace fs = std::filesystem;
using st::testing::test_world;
using st::testing::world_communicator;

// A path shared by all ranks (rank 0's pid).
std::string shared_dir(const std::string& name) {
  int pid = ::getpid();
  ST_CHECK_MPI(MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD));
  return (fs::temp_directory_path() / ("st_mpi_data_" + std::to_string(pid) + "_" + name)).string();
}

std::vector<Pair> all_pairs(const std::string& directory) {
  const PairDataset dataset(directory);
  std::vector<Pair> pairs;
  for (uint64_t i = 0; i < dataset.size(); ++i) pairs.push_back(dataset.get(i));
  return pairs;
}

TEST(Prep, AnyRankCountWritesTheSameDatasetAsOneRank) {
  const std::string base = shared_dir("prep");
  const std::string input = base + ".jsonl";
  MpiCommunicator& comm = world_communicator();
  if (comm.rank() == 0) {
    SynthOptions synth;
    synth.max_length = 40;
    const PairTable table = synthesize_pairs(synth, 0, 301);
    std::ofstream out(input);
    for (size_t i = 0; i < table.size(); ++i) {
      const Pair p = table.at(i);
      nlohmann::json line = {{"prompt_ids", p.prompt}, {"chosen_ids", p.chosen}, {"rejected_ids", p.rejected}};
      out << line.dump() << "\n";
      if (i % 50 == 7) out << "{\"prompt_ids\": [1], \"chosen_ids\": [9999], \"rejected_ids\": [3]}\n";
    }
  }
  comm.barrier();
  PrepOptions options;
  options.input = input;
  options.vocab_size = 512;
  options.cutoff_len = 32;
  options.val_size = 0.1;
  options.seed = 3;
  options.sharding.pairs_per_shard = 40;
  options.output = base + "_np" + std::to_string(comm.size());
  const PrepReport report = run_prep(options, comm);
  EXPECT_EQ(report.train_pairs + report.val_pairs, 301u);
  EXPECT_EQ(report.val_pairs, 30u);
  EXPECT_EQ(report.malformed.at("id out of vocab"), 6u);  // i = 7, 57, ..., 257
  if (comm.rank() == 0) {
    MpiCommunicator self(MPI_COMM_SELF, test_world().watchdog());
    options.output = base + "_reference";
    const PrepReport single = run_prep(options, self);
    EXPECT_EQ(single.truncated, report.truncated);
    for (const char* split : {"/train", "/val"}) {
      const auto expected = all_pairs(options.output + split);
      const auto got = all_pairs(base + "_np" + std::to_string(comm.size()) + split);
      ASSERT_EQ(got.size(), expected.size()) << split;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].prompt, expected[i].prompt) << split << " " << i;
        EXPECT_EQ(got[i].rejected, expected[i].rejected) << split << " " << i;
      }
    }
    fs::remove_all(options.output);
    fs::remove_all(base + "_np" + std::to_string(comm.size()));
    fs::remove(input);
  }
  comm.barrier();
}

TEST(Loader, RanksTogetherReadEveryPairOnceAndAgreeOnCursors) {
  MpiCommunicator& comm = world_communicator();
  const std::string dir = shared_dir("loader");
  if (comm.rank() == 0) {
    SynthOptions synth;
    const PairTable table = synthesize_pairs(synth, 0, 77);
    fs::create_directories(dir);
    Manifest manifest{PairKind::dpo, 512, "train", "test", {}, std::nullopt};
    manifest.shards = write_shards(dir, "part", table, {PairKind::dpo, 512, 1, 2, 0, "", ""}, {20, {}});
    write_manifest(dir, manifest);
  }
  comm.barrier();
  auto dataset = std::make_shared<const PairDataset>(dir);
  LoaderOptions options;
  options.global_batch = 12;
  options.seed = 8;
  options.collate.micro_batch = 2;
  PairLoader loader(dataset, options, comm.rank(), comm.size());
  std::string mine;
  for (int step = 0; step < 7; ++step) {  // ceil(77 / 12) = 7 steps = one epoch
    const StepBatch batch = loader.next();
    for (uint64_t index : rank_slice(batch.global.indices, comm.rank(), comm.size())) {
      mine += std::to_string(index) + " ";
    }
    int64_t pairs = 0;
    for (const auto& micro : batch.micro_batches) pairs += micro.pairs;
    EXPECT_EQ(pairs, static_cast<int64_t>(rank_slice(batch.global.indices, comm.rank(), comm.size()).size()));
    if (step == 6) {
      EXPECT_EQ(batch.global.next, (SamplerCursor{1, 0}));
    }
  }
  std::set<uint64_t> seen;
  size_t count = 0;
  for (const std::string& text : all_gather_strings(comm, mine)) {
    std::istringstream in(text);
    for (uint64_t index; in >> index; ++count) seen.insert(index);
  }
  EXPECT_EQ(count, 77u);
  EXPECT_EQ(seen.size(), 77u);
  comm.barrier();
  if (comm.rank() == 0) fs::remove_all(dir);
}

}  // namespace
}  // namespace st
