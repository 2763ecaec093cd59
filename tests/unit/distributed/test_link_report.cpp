// The straggler report of `shardtune env --bench`: which host it names and how it reads.
#include <gtest/gtest.h>

#include "distributed/link_bench.h"

namespace st {
namespace {

LinkBenchReport three_hosts(double send_a, double send_b, double send_c) {
  LinkBenchReport report;
  report.bytes = 4 << 20;
  report.repeats = 3;
  report.hosts = {{"a", 2, 5.0, 4.0, send_a}, {"b", 2, 5.0, 4.0, send_b}, {"c", 1, 0.0, 0.0, send_c}};
  report.across_gather_gbs = 0.5;
  report.across_scatter_gbs = 0.4;
  return report;
}

TEST(LinkReport, NamesTheHostThatSendsSlowest) {
  EXPECT_EQ(slowest_host(three_hosts(1.0, 0.05, 0.9)), 1);
  EXPECT_EQ(slowest_host(three_hosts(0.01, 1.0, 0.9)), 0);
  const std::string text = format_link_report(three_hosts(1.0, 0.05, 0.9));
  EXPECT_NE(text.find("slowest host: b (sends at 0.050 GB/s, 20.0x below the fastest host's 1.000 GB/s)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("across 3 hosts (one rank each): all-gather 0.500, reduce-scatter 0.400"), std::string::npos)
      << text;
}

TEST(LinkReport, OneHostHasNoLinkToName) {
  LinkBenchReport report = three_hosts(0, 0, 0);
  report.hosts.resize(1);
  EXPECT_EQ(slowest_host(report), -1);
  const std::string text = format_link_report(report);
  EXPECT_NE(text.find("one host: nothing crosses a network link"), std::string::npos) << text;
  EXPECT_EQ(text.find("slowest host"), std::string::npos) << text;
}

}  // namespace
}  // namespace st
