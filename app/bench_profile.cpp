#include "bench_profile.h"

#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "util/errors.h"
#include "util/torch_compat.h"

namespace st {
namespace {

using torch::profiler::impl::ActivityType;

bool profiled_cuda = false;

std::set<ActivityType> activities() {
  std::set<ActivityType> wanted{ActivityType::CPU};
  if (profiled_cuda) wanted.insert(ActivityType::CUDA);
  return wanted;
}

struct KernelTotal {
  double total_us = 0.0;
  int64_t calls = 0;
};

}  // namespace

void start_bench_profile(bool cuda) {
  profiled_cuda = cuda;
  const torch::profiler::impl::ProfilerConfig config(torch::profiler::impl::ProfilerState::KINETO);
  try {
    torch::autograd::profiler::prepareProfiler(config, activities());
    torch::autograd::profiler::enableProfiler(config, activities());
  } catch (const std::exception& error) {
    throw ConfigError(std::string("bench --profile: this libtorch cannot profile (") + error.what() + ")");
  }
}

std::string finish_bench_profile(const std::string& dir, size_t rows) {
  const auto result = torch::autograd::profiler::disableProfiler();
  std::filesystem::create_directories(dir);
  std::string trace = dir + "/trace.json";
  try {
    result->save(trace);
  } catch (const std::exception&) {  // a libtorch built without Kineto (Debian's 1.13) keeps events only
    trace = "no trace file: this libtorch has no Kineto";
  }
  const c10::DeviceType wanted = profiled_cuda ? c10::DeviceType::CUDA : c10::DeviceType::CPU;
  std::map<std::string, KernelTotal> totals;
  double all_us = 0.0;
  for (const auto& event : result->events()) {
    if (event.deviceType() != wanted) continue;
    KernelTotal& total = totals[event.name()];
    const double us = compat::profiler_event_us(event, 0);
    total.total_us += us;
    total.calls += 1;
    all_us += us;
  }
  std::vector<std::pair<std::string, KernelTotal>> sorted(totals.begin(), totals.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return a.second.total_us > b.second.total_us; });
  std::string text = std::string("  top ") + (profiled_cuda ? "GPU kernels" : "CPU operators (inclusive, nested)") +
                     " by total time (" + trace + "):\n";
  char line[256];
  for (size_t i = 0; i < std::min(rows, sorted.size()); ++i) {
    const auto& [name, total] = sorted[i];
    std::snprintf(line, sizeof(line), "    %6.1f%% %10.3f ms %6lld  %.120s\n", all_us > 0 ? 100.0 * total.total_us / all_us : 0.0,
                  total.total_us / 1000.0, static_cast<long long>(total.calls), name.c_str());
    text += line;
  }
  return text;
}

}  // namespace st
