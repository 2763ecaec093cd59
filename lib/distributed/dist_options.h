// [dist] section: communication backend, sharding strategy, topology and the watchdog deadline.
#pragma once

#include <cstdint>

#include "util/enum_names.h"

namespace st {

// dist.backend: auto = nccl when every rank has a GPU and a CUDA build, else mpi.
enum class BackendChoice { automatic, mpi, nccl };
template <>
struct EnumNames<BackendChoice> {
  static constexpr NamedValue<BackendChoice> table[] = {
      {BackendChoice::automatic, "auto"}, {BackendChoice::mpi, "mpi"}, {BackendChoice::nccl, "nccl"}};
};

// dist.sharding (the groups each needs: fsdp/sharding.h).
enum class Sharding { full, grad_op, none, hybrid };
template <>
struct EnumNames<Sharding> {
  static constexpr NamedValue<Sharding> table[] = {
      {Sharding::full, "full"}, {Sharding::grad_op, "grad_op"}, {Sharding::none, "none"}, {Sharding::hybrid, "hybrid"}};
};

struct DistOptions {
  // The keys of [dist]: their help, unit and range are declared once, in train/train_config_schema.cpp.
  BackendChoice backend = BackendChoice::automatic;
  Sharding sharding = Sharding::full;
  int64_t ranks_per_node = 0;
  // Ranks that split each sequence between them (context parallelism, model/context_split.h);
  // the data-parallel size is the world's over this.
  int64_t context_parallel = 1;
  // Ranks that split each sparse layer's experts between them (expert parallelism, rank i of a
  // group holds experts [i E/P, (i + 1) E/P); tokens travel to them by all-to-all: fsdp/sharding.h).
  int64_t expert_parallel = 1;
  double timeout_s = 1800.0;
};

}  // namespace st
