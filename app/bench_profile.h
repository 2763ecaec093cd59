// `shardtune bench --profile DIR`: the libtorch (Kineto) profiler over the measured steps. Writes
// DIR/trace.json (chrome://tracing, Perfetto) and returns a table of the top kernels by total
// time (CPU operators when no GPU ran), the same table bench/peer_transformers.py --profile
// prints for the peer.
#pragma once

#include <cstddef>
#include <string>

namespace st {

// Starts the profiler (CPU activity, plus CUDA kernels when `cuda`). Throws ConfigError when
// this libtorch cannot profile.
void start_bench_profile(bool cuda);
// Stops it, writes DIR/trace.json, and returns the top `rows` as text.
std::string finish_bench_profile(const std::string& dir, size_t rows);

}  // namespace st
