// The startup consistency check: every rank reports its software versions; ranks that differ
// from the rest are named with their values, and `train` refuses to start. Mixed builds or
// libraries across nodes otherwise show up as hangs or wrong numbers hours into a run.
#pragma once

#include <string>
#include <vector>

#include "distributed/communicator.h"
#include "distributed/world.h"

namespace st {

struct EnvField {
  std::string key;    // "libtorch"
  std::string value;  // "1.13.0 (CPU)"
  bool must_match = true;  // versions must; host and GPU names need not
};
using EnvFingerprint = std::vector<EnvField>;

// This rank: host, node layout, GPU, shardtune (version + git sha), libtorch, MPI, HDF5, CUDA
// runtime and driver, NCCL. `extra` appends fields that must match (e.g. model/config hash).
EnvFingerprint local_env_fingerprint(const World& world, const EnvFingerprint& extra = {});

// Collective over `communicator`: element r is rank r's fingerprint.
std::vector<EnvFingerprint> gather_env_fingerprints(Communicator& communicator,
                                                    const EnvFingerprint& mine);

struct EnvMismatch {
  std::string key;
  // Each distinct value with the ranks reporting it, the most common value first.
  std::vector<std::pair<std::string, std::vector<int>>> values;
};
std::vector<EnvMismatch> find_env_mismatches(const std::vector<EnvFingerprint>& fingerprints);
// "libtorch differs: '1.13.0 (CPU)' on ranks 0-2; '2.1.0 (CUDA)' on rank 3"; with `hosts`
// (rank r's host at r) each rank list names its hosts: "... on rank 3 (node7)".
std::string describe_env_mismatches(const std::vector<EnvMismatch>& mismatches,
                                    const std::vector<std::string>& hosts = {});
// Each rank's "host" field.
std::vector<std::string> env_hosts(const std::vector<EnvFingerprint>& fingerprints);
// One row per rank, one column per field.
std::string format_env_table(const std::vector<EnvFingerprint>& fingerprints);
// "0-2,5"
std::string format_rank_list(const std::vector<int>& ranks);

// Collective: gathers, and on any mismatch every rank logs it and the world aborts.
void enforce_consistent_env(Communicator& communicator, const EnvFingerprint& mine);

}  // namespace st
