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

}  // namespace st
