// Dynamic loss scaling for fp16 compute (DeepSpeed's DynamicLossScaler semantics): the loss is
// multiplied by `scale` before backward; a step whose gradients hold inf/nan is skipped. An
// overflow first spends the hysteresis (steps tolerated before backing off); when none is left,
// the scale halves (not below the minimum). After `growth_window` overflow-free steps in a row
// the scale doubles and the hysteresis is restored.
#pragma once

#include <cstdint>

namespace st {

struct LossScalerOptions {
  double initial_scale = 65536.0;  // 2^16
  int64_t growth_window = 1000;
  int64_t hysteresis = 2;
  double min_scale = 1.0;
};

// Everything a checkpoint needs to continue the scaling exactly.
struct LossScalerState {
  double scale = 65536.0;
  int64_t hysteresis_left = 2;
  int64_t clean_steps = 0;
  int64_t skipped = 0;
};

class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const LossScalerOptions& options = {});

  double scale() const { return scale_; }
  int64_t skipped_steps() const { return skipped_; }
  // After each step's backward: whether its gradients overflowed (then the step is skipped).
  void update(bool overflow);

  LossScalerState state() const { return {scale_, hysteresis_left_, clean_steps_, skipped_}; }
  void restore(const LossScalerState& state);

 private:
  LossScalerOptions options_;
  double scale_;
  int64_t hysteresis_left_;
  int64_t clean_steps_ = 0;  // overflow-free steps since the last overflow or growth
  int64_t skipped_ = 0;
};

}  // namespace st
