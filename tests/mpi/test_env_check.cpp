// The startup consistency check across real ranks: string gathering, identical fingerprints,
// and an injected mismatch found and attributed to the right rank.
#include <gtest/gtest.h>

#include "distributed/env_check.h"
#include "distributed/string_gather.h"
#include "mpi_test_main.h"

namespace st {
namespace {

using st::testing::test_world;
using st::testing::world_communicator;

TEST(StringGather, VariableLengthsIncludingEmpty) {
  auto& comm = world_communicator();
  const std::string mine = comm.rank() == 1 ? "" : std::string(3 + comm.rank() * 5, 'a' + comm.rank());
  const auto all = all_gather_strings(comm, mine);
  ASSERT_EQ(static_cast<int>(all.size()), comm.size());
  for (int rank = 0; rank < comm.size(); ++rank) {
    const std::string expected = rank == 1 ? "" : std::string(3 + rank * 5, 'a' + rank);
    EXPECT_EQ(all[rank], expected);
  }
}

TEST(EnvCheck, SameBuildOnEveryRankMatches) {
  auto& comm = world_communicator();
  const auto all = gather_env_fingerprints(comm, local_env_fingerprint(test_world()));
  ASSERT_EQ(static_cast<int>(all.size()), comm.size());
  EXPECT_TRUE(find_env_mismatches(all).empty()) << describe_env_mismatches(find_env_mismatches(all));
  const std::string table = format_env_table(all);
  EXPECT_NE(table.find("identical on all " + std::to_string(comm.size()) + " ranks"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find(test_world().hostname()), std::string::npos);
  enforce_consistent_env(comm, local_env_fingerprint(test_world()));  // returns: no mismatch
}

TEST(EnvCheck, InjectedMismatchNamesTheRankAndValues) {
  auto& comm = world_communicator();
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks to differ";
  EnvFingerprint mine = local_env_fingerprint(test_world(), {{"model hash", "abc", true}});
  if (comm.rank() == comm.size() - 1) mine.back().value = "def";
  const auto mismatches = find_env_mismatches(gather_env_fingerprints(comm, mine));
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].key, "model hash");
  EXPECT_EQ(describe_env_mismatches(mismatches),
            "model hash differs: 'abc' on rank" + std::string(comm.size() > 2 ? "s " : " ") +
                format_rank_list([&] {
                  std::vector<int> ranks(static_cast<size_t>(comm.size() - 1));
                  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
                  return ranks;
                }()) +
                "; 'def' on rank " + std::to_string(comm.size() - 1));
}

}  // namespace
}  // namespace st
