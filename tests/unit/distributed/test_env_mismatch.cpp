// The pure half of the startup consistency check: which ranks differ, and how it reads.
#include <gtest/gtest.h>

#include "distributed/env_check.h"

namespace st {
namespace {

EnvFingerprint fingerprint(const std::string& host, const std::string& torch,
                           const std::string& nccl) {
  return {{"host", host, false}, {"libtorch", torch, true}, {"NCCL", nccl, true}};
}

TEST(EnvMismatch, IdenticalVersionsOnDifferentHostsMatch) {
  const std::vector<EnvFingerprint> all = {fingerprint("a", "2.4.0", "2.21.5"),
                                           fingerprint("b", "2.4.0", "2.21.5")};
  EXPECT_TRUE(find_env_mismatches(all).empty());
}

TEST(EnvMismatch, NamesTheOddRanksAndTheirValues) {
  std::vector<EnvFingerprint> all;
  for (int rank = 0; rank < 6; ++rank) all.push_back(fingerprint("n", "2.4.0", "2.21.5"));
  all[3] = fingerprint("n", "2.3.1", "2.21.5");
  all[5] = fingerprint("n", "2.3.1", "2.20.0");
  const auto mismatches = find_env_mismatches(all);
  ASSERT_EQ(mismatches.size(), 2u);
  EXPECT_EQ(mismatches[0].key, "libtorch");
  EXPECT_EQ(mismatches[0].values[0].first, "2.4.0");  // the majority first
  EXPECT_EQ(mismatches[0].values[0].second, (std::vector<int>{0, 1, 2, 4}));
  EXPECT_EQ(describe_env_mismatches(mismatches),
            "libtorch differs: '2.4.0' on ranks 0-2,4; '2.3.1' on ranks 3,5\n"
            "NCCL differs: '2.21.5' on ranks 0-4; '2.20.0' on rank 5");
}

TEST(EnvMismatch, NamesTheHostsOfEachValue) {
  // Another install on one node of three: the message says which host to fix.
  std::vector<EnvFingerprint> all;
  for (const char* host : {"n1", "n1", "n2", "n2", "n3"}) all.push_back(fingerprint(host, "2.4.0", "2.21.5"));
  all[2] = all[3] = fingerprint("n2", "2.3.1", "2.21.5");
  EXPECT_EQ(describe_env_mismatches(find_env_mismatches(all), env_hosts(all)),
            "libtorch differs: '2.4.0' on ranks 0-1,4 (n1, n3); '2.3.1' on ranks 2-3 (n2)");
}

TEST(EnvMismatch, MissingFieldCountsAsDifferent) {
  std::vector<EnvFingerprint> all = {fingerprint("a", "1", "1"), fingerprint("a", "1", "1")};
  all[1].pop_back();
  const auto mismatches = find_env_mismatches(all);
  ASSERT_EQ(mismatches.size(), 1u);
  EXPECT_EQ(mismatches[0].values[1].first, "(missing)");
}

TEST(EnvMismatch, RankListsCompressRuns) {
  EXPECT_EQ(format_rank_list({0, 1, 2, 3}), "0-3");
  EXPECT_EQ(format_rank_list({1, 3, 4, 7, 8, 9}), "1,3-4,7-9");
  EXPECT_EQ(format_rank_list({5}), "5");
}

TEST(EnvTable, ShowsPerRankColumnsAndSharedVersions) {
  const std::vector<EnvFingerprint> all = {fingerprint("alpha", "2.4.0", "2.21.5"),
                                           fingerprint("beta", "2.4.0", "2.21.5")};
  const std::string table = format_env_table(all);
  EXPECT_NE(table.find("rank  host"), std::string::npos) << table;
  EXPECT_NE(table.find("0     alpha"), std::string::npos) << table;
  EXPECT_NE(table.find("1     beta"), std::string::npos) << table;
  EXPECT_NE(table.find("identical on all 2 ranks"), std::string::npos) << table;
  EXPECT_EQ(table.find("MISMATCH"), std::string::npos);
}

TEST(EnvTable, PutsMismatchedFieldsIntoTheRows) {
  const std::vector<EnvFingerprint> all = {fingerprint("alpha", "2.4.0", "2.21.5"),
                                           fingerprint("beta", "2.3.1", "2.21.5")};
  const std::string table = format_env_table(all);
  EXPECT_NE(table.find("rank  host   libtorch"), std::string::npos) << table;
  EXPECT_NE(table.find("MISMATCH\nlibtorch differs"), std::string::npos) << table;
}

}  // namespace
}  // namespace st
