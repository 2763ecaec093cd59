#include "train/rollout_geometry.h"

#include <algorithm>
#include <string>

#include "util/errors.h"

namespace st {

RolloutGeometry rollout_geometry(const RolloutOptions& g, int64_t micro_batch, int64_t grad_accum, int data_ranks,
                                 int data_rank) {
  RolloutGeometry geometry;
  geometry.micro_batch = micro_batch;
  geometry.grad_accum = grad_accum;
  geometry.steps_per_generation = g.steps_per_generation > 0 ? g.steps_per_generation : grad_accum;
  geometry.iterations = g.num_iterations;
  geometry.group_size = g.num_generations;
  geometry.ranks = data_ranks;
  geometry.rank = data_rank;
  if (geometry.completions() % geometry.group_size != 0) {
    throw ConfigError(std::string(g.section) + ": a generation holds train.micro_batch x " +
                      g.key("steps_per_generation") + " x ranks = " +
                      std::to_string(geometry.micro_batch) + " x " + std::to_string(geometry.steps_per_generation) +
                      " x " + std::to_string(data_ranks) + " = " + std::to_string(geometry.completions()) +
                      " completions, not a multiple of " + g.key("num_generations") + " = " + std::to_string(g.num_generations) +
                      " (every prompt's group must be whole); change one of them");
  }
  return geometry;
}

int64_t rollout_steps_per_epoch(const RolloutGeometry& geometry, uint64_t prompts) {
  const auto generations = static_cast<int64_t>(prompts / static_cast<uint64_t>(geometry.prompts()));
  return std::max<int64_t>(1, generations * geometry.generate_every() / geometry.grad_accum);
}

}  // namespace st
