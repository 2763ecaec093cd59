// The engine's choices that a run's config sets: activation recomputation (train.recompute;
// what each policy keeps: recompute.h).
#pragma once

#include "util/enum_names.h"

namespace st {

enum class Recompute { full, selective, none, automatic };
template <>
struct EnumNames<Recompute> {
  static constexpr NamedValue<Recompute> table[] = {{Recompute::full, "full"},
                                                    {Recompute::selective, "selective"},
                                                    {Recompute::none, "none"},
                                                    {Recompute::automatic, "auto"}};
};

// train.compute_copy: the compute-dtype (bf16) copy of each unit's master shard. kept = made
// once per step by the optimizer, gathered as is (fastest); per_gather = cast from the fp32
// master at each gather and freed with the gathered unit: the copy's 2 bytes per parameter of
// the shard are not held between units, at one cast per unit per pass. Masters held on the
// host (optim.offload) always keep the device copy.
enum class ComputeCopy { kept, per_gather };
template <>
struct EnumNames<ComputeCopy> {
  static constexpr NamedValue<ComputeCopy> table[] = {{ComputeCopy::kept, "kept"},
                                                      {ComputeCopy::per_gather, "per_gather"}};
};

}  // namespace st
