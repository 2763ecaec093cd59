// Fingerprints travel as "must_match|key=value" lines through all_gather_strings.
#include "distributed/env_check.h"

#include <algorithm>
#include <iomanip>
#include <map>
#include <sstream>

#include "distributed/string_gather.h"
#include "util/abort.h"
#include "util/build_info.h"
#include "util/gpu_info.h"

namespace st {
namespace {

std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  return text;
}

std::string serialize(const EnvFingerprint& fingerprint) {
  std::string text;
  for (const auto& field : fingerprint) {
    text += (field.must_match ? "1|" : "0|") + one_line(field.key) + "=" + one_line(field.value) +
            "\n";
  }
  return text;
}

EnvFingerprint deserialize(const std::string& text) {
  EnvFingerprint fingerprint;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const auto equals = line.find('=');
    if (line.size() < 2 || equals == std::string::npos) continue;
    fingerprint.push_back({line.substr(2, equals - 2), line.substr(equals + 1), line[0] == '1'});
  }
  return fingerprint;
}

const std::string* find_value(const EnvFingerprint& fingerprint, const std::string& key) {
  for (const auto& field : fingerprint) {
    if (field.key == key) return &field.value;
  }
  return nullptr;
}

}  // namespace

EnvFingerprint local_env_fingerprint(const World& world, const EnvFingerprint& extra) {
  const Topology& topology = world.topology();
  const GpuInfo gpu = query_gpu_info();
  const int device = world.local_device();
  const std::string gpu_name =
      device < static_cast<int>(gpu.devices.size())
          ? "cuda:" + std::to_string(device) + " " + gpu.devices[static_cast<size_t>(device)]
          : "none";
  EnvFingerprint fingerprint = {
      {"host", world.hostname(), false},
      {"node", std::to_string(topology.node_index) + " local " +
                   std::to_string(topology.local_rank) + "/" + std::to_string(topology.local_size),
       false},
      {"GPU", gpu_name, false},
  };
  for (const LibraryVersion& library : library_versions()) {
    if (library.name == "GPUs") continue;  // the node's inventory; this rank's GPU is listed above
    fingerprint.push_back({library.name, library.value, library.same_on_every_rank});
  }
  fingerprint.insert(fingerprint.end(), extra.begin(), extra.end());
  return fingerprint;
}

std::vector<EnvFingerprint> gather_env_fingerprints(Communicator& communicator,
                                                    const EnvFingerprint& mine) {
  std::vector<EnvFingerprint> all;
  for (const auto& text : all_gather_strings(communicator, serialize(mine))) {
    all.push_back(deserialize(text));
  }
  return all;
}

std::vector<EnvMismatch> find_env_mismatches(const std::vector<EnvFingerprint>& fingerprints) {
  std::vector<std::string> keys;  // in the order the ranks report them
  for (const auto& fingerprint : fingerprints) {
    for (const auto& field : fingerprint) {
      if (field.must_match && std::find(keys.begin(), keys.end(), field.key) == keys.end()) {
        keys.push_back(field.key);
      }
    }
  }
  std::vector<EnvMismatch> mismatches;
  for (const auto& key : keys) {
    std::map<std::string, std::vector<int>> ranks_by_value;
    for (size_t rank = 0; rank < fingerprints.size(); ++rank) {
      const std::string* value = find_value(fingerprints[rank], key);
      ranks_by_value[value ? *value : "(missing)"].push_back(static_cast<int>(rank));
    }
    if (ranks_by_value.size() <= 1) continue;
    EnvMismatch mismatch{key, {ranks_by_value.begin(), ranks_by_value.end()}};
    // Most common value first; ties go to the value of the lowest rank.
    std::sort(mismatch.values.begin(), mismatch.values.end(), [](const auto& a, const auto& b) {
      if (a.second.size() != b.second.size()) return a.second.size() > b.second.size();
      return a.second.front() < b.second.front();
    });
    mismatches.push_back(std::move(mismatch));
  }
  return mismatches;
}

std::string format_rank_list(const std::vector<int>& ranks) {
  std::string text;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    text += (text.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) text += "-" + std::to_string(ranks[j]);
    i = j + 1;
  }
  return text;
}

std::vector<std::string> env_hosts(const std::vector<EnvFingerprint>& fingerprints) {
  std::vector<std::string> hosts;
  for (const auto& fingerprint : fingerprints) {
    const std::string* host = find_value(fingerprint, "host");
    hosts.push_back(host ? *host : "?");
  }
  return hosts;
}

std::string describe_env_mismatches(const std::vector<EnvMismatch>& mismatches,
                                    const std::vector<std::string>& hosts) {
  std::string text;
  for (const auto& mismatch : mismatches) {
    text += (text.empty() ? "" : "\n") + mismatch.key + " differs:";
    for (size_t i = 0; i < mismatch.values.size(); ++i) {
      const auto& [value, ranks] = mismatch.values[i];
      text += (i ? ";" : "") + std::string(" '") + value + "' on rank" +
              (ranks.size() > 1 ? "s " : " ") + format_rank_list(ranks);
      if (hosts.empty()) continue;
      std::vector<std::string> named;  // in rank order, once each
      for (int rank : ranks) {
        const std::string& host = hosts.at(static_cast<size_t>(rank));
        if (std::find(named.begin(), named.end(), host) == named.end()) named.push_back(host);
      }
      std::string list;
      for (const auto& host : named) list += (list.empty() ? "" : ", ") + host;
      text += " (" + list + ")";
    }
  }
  return text;
}

std::string format_env_table(const std::vector<EnvFingerprint>& fingerprints) {
  if (fingerprints.empty()) return "";
  const auto mismatches = find_env_mismatches(fingerprints);
  auto differs = [&](const std::string& key) {
    return std::any_of(mismatches.begin(), mismatches.end(),
                       [&](const EnvMismatch& m) { return m.key == key; });
  };
  // Per-rank columns: what may differ, plus what differs although it must not.
  std::vector<std::string> columns;
  for (const auto& field : fingerprints.front()) {
    if (!field.must_match || differs(field.key)) columns.push_back(field.key);
  }
  std::vector<size_t> widths = {4};
  for (const auto& key : columns) {
    size_t width = key.size();
    for (const auto& fingerprint : fingerprints) {
      const std::string* value = find_value(fingerprint, key);
      width = std::max(width, value ? value->size() : 9);
    }
    widths.push_back(width);
  }
  std::ostringstream out;
  out << std::left << std::setw(static_cast<int>(widths[0])) << "rank";
  for (size_t c = 0; c < columns.size(); ++c) {
    out << "  " << std::setw(static_cast<int>(widths[c + 1])) << columns[c];
  }
  out << "\n";
  for (size_t rank = 0; rank < fingerprints.size(); ++rank) {
    out << std::setw(static_cast<int>(widths[0])) << rank;
    for (size_t c = 0; c < columns.size(); ++c) {
      const std::string* value = find_value(fingerprints[rank], columns[c]);
      out << "  " << std::setw(static_cast<int>(widths[c + 1])) << (value ? *value : "(missing)");
    }
    out << "\n";
  }
  out << (mismatches.empty() ? "identical on all " : "identical on ") << fingerprints.size()
      << " ranks" << (mismatches.empty() ? ":" : " except as listed above:") << "\n";
  for (const auto& field : fingerprints.front()) {
    if (field.must_match && !differs(field.key)) {
      out << "  " << std::setw(14) << field.key << field.value << "\n";
    }
  }
  if (!mismatches.empty()) {
    out << "MISMATCH\n" << describe_env_mismatches(mismatches, env_hosts(fingerprints)) << "\n";
  }
  return out.str();
}

void enforce_consistent_env(Communicator& communicator, const EnvFingerprint& mine) {
  const auto fingerprints = gather_env_fingerprints(communicator, mine);
  const auto mismatches = find_env_mismatches(fingerprints);
  if (mismatches.empty()) return;
  abort_world("startup consistency check failed: ranks run different software.\n" +
              describe_env_mismatches(mismatches, env_hosts(fingerprints)) +
              "\nInstall the same shardtune build and libraries on every node (module load "
              "shardtune on each), then resubmit.");
}

}  // namespace st
