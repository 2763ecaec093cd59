// Every timing is the median of `repeats` runs after one warm-up, each run's time the slowest
// member's (all_reduce max), so a fast sender cannot report its buffered send as done.
#include "distributed/link_bench.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <iomanip>
#include <sstream>

#include "distributed/mpi_communicator.h"
#include "distributed/process_groups.h"

namespace st {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Median over `repeats` of the slowest member's time of `op` on `group`.
double median_time(Communicator& group, int repeats, const std::function<void()>& op) {
  op();  // warm-up: connections, buffers
  std::vector<double> times;
  for (int run = 0; run < repeats; ++run) {
    group.barrier();
    const auto start = std::chrono::steady_clock::now();
    op();
    at::Tensor slowest = at::full({1}, seconds_since(start), at::kDouble);
    group.all_reduce(slowest, ReduceOp::max);
    times.push_back(slowest.item<double>());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// [gather GB/s, scatter GB/s] of a buffer of `bytes` over `group`.
std::pair<double, double> gather_and_scatter(Communicator& group, int64_t bytes, int repeats) {
  const int64_t shard = std::max<int64_t>(1, bytes / 4 / group.size());
  const at::Tensor full = at::ones({shard * group.size()}, at::kFloat);
  const at::Tensor part = at::ones({shard}, at::kFloat);
  const double moved = static_cast<double>(full.numel() * 4) / 1e9;
  const double gather = median_time(group, repeats, [&] { group.all_gather_into(full, part); });
  const double scatter = median_time(group, repeats, [&] { group.reduce_scatter(part, full, ReduceOp::sum); });
  return {moved / gather, moved / scatter};
}

}  // namespace

LinkBenchReport bench_links(World& world, const LinkBenchOptions& options) {
  const Topology& topology = world.topology();
  const ProcessGroups split = make_process_groups(world.comm(), topology);
  MpiCommunicator all(world.comm(), world.watchdog());
  MpiCommunicator host(split.shard.get(), world.watchdog());
  MpiCommunicator across(split.replica.get(), world.watchdog());
  LinkBenchReport report;
  report.bytes = options.bytes;
  report.repeats = options.repeats;

  // Inside every host at once (hosts do not share links), then across: one rank per host.
  std::pair<double, double> inside{0, 0};
  if (host.size() > 1) inside = gather_and_scatter(host, options.bytes, options.repeats);
  std::vector<double> sends(static_cast<size_t>(topology.node_count), 0.0);
  std::pair<double, double> between{0, 0};
  all.barrier();
  if (topology.local_rank == 0 && across.size() > 1) {
    between = gather_and_scatter(across, options.bytes, options.repeats);
    const at::Tensor buffer = at::ones({std::max<int64_t>(1, options.bytes / 4)}, at::kFloat);
    for (int root = 0; root < across.size(); ++root) {
      const double time = median_time(across, options.repeats, [&] { across.broadcast(buffer, root); });
      sends[static_cast<size_t>(root)] = static_cast<double>(buffer.numel() * 4) / 1e9 / time;
    }
  }
  all.barrier();

  // Rank 0 of each host reports: node index, ranks, inside gather/scatter, its sends.
  at::Tensor mine = at::zeros({5}, at::kDouble);
  if (topology.local_rank == 0) {
    mine[0] = topology.node_index;
    mine[1] = topology.local_size;
    mine[2] = inside.first;
    mine[3] = inside.second;
    mine[4] = sends[static_cast<size_t>(topology.node_index)];
  } else {
    mine[0] = -1;
  }
  at::Tensor table = at::zeros({5 * all.size()}, at::kDouble);
  all.all_gather_into(table, mine);
  at::Tensor gathered_between = at::tensor({between.first, between.second}, at::kDouble);
  all.all_reduce(gathered_between, ReduceOp::max);
  report.across_gather_gbs = gathered_between[0].item<double>();
  report.across_scatter_gbs = gathered_between[1].item<double>();
  report.hosts.resize(static_cast<size_t>(topology.node_count));
  for (int rank = 0; rank < all.size(); ++rank) {
    const auto row = table.slice(0, 5 * rank, 5 * rank + 5);
    const int node = static_cast<int>(row[0].item<double>());
    if (node < 0) continue;
    HostLinks& links = report.hosts[static_cast<size_t>(node)];
    links.host = world.hostnames()[static_cast<size_t>(rank)];
    links.ranks = static_cast<int>(row[1].item<double>());
    links.gather_gbs = row[2].item<double>();
    links.scatter_gbs = row[3].item<double>();
    links.send_gbs = row[4].item<double>();
  }
  return report;
}

int slowest_host(const LinkBenchReport& report) {
  if (report.hosts.size() < 2) return -1;
  const auto slowest = std::min_element(report.hosts.begin(), report.hosts.end(),
                                        [](const HostLinks& a, const HostLinks& b) { return a.send_gbs < b.send_gbs; });
  return static_cast<int>(slowest - report.hosts.begin());
}

std::string format_link_report(const LinkBenchReport& report) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(3);
  out << "link bench: all-gather and reduce-scatter of " << static_cast<double>(report.bytes) / (1 << 20)
      << " MiB, median of " << report.repeats << " [GB/s = buffer bytes / time]\n";
  out << "  host            ranks  inside: all-gather  reduce-scatter  sends to the other hosts\n";
  for (const HostLinks& host : report.hosts) {
    out << "  " << std::left << std::setw(16) << host.host << std::right << std::setw(5) << host.ranks
        << std::setw(20) << host.gather_gbs << std::setw(16) << host.scatter_gbs << std::setw(26)
        << host.send_gbs << "\n";
  }
  const int slowest = slowest_host(report);
  if (slowest < 0) {
    out << "one host: nothing crosses a network link\n";
    return out.str();
  }
  out << "  across " << report.hosts.size() << " hosts (one rank each): all-gather " << report.across_gather_gbs
      << ", reduce-scatter " << report.across_scatter_gbs << "\n";
  double fastest = 0;
  for (const HostLinks& host : report.hosts) fastest = std::max(fastest, host.send_gbs);
  const HostLinks& slow = report.hosts[static_cast<size_t>(slowest)];
  out << "slowest host: " << slow.host << " (sends at " << slow.send_gbs << " GB/s, "
      << std::setprecision(1) << (slow.send_gbs > 0 ? fastest / slow.send_gbs : 0.0)
      << "x below the fastest host's " << std::setprecision(3) << fastest << " GB/s)\n";
  return out.str();
}

}  // namespace st
