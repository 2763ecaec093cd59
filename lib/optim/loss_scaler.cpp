#include "optim/loss_scaler.h"

#include <algorithm>

namespace st {

DynamicLossScaler::DynamicLossScaler(const LossScalerOptions& options)
    : options_(options), scale_(options.initial_scale), hysteresis_left_(options.hysteresis) {}

void DynamicLossScaler::update(bool overflow) {
  if (overflow) {
    ++skipped_;
    clean_steps_ = 0;
    if (hysteresis_left_ > 1) {
      --hysteresis_left_;
    } else {
      scale_ = std::max(scale_ / 2.0, options_.min_scale);
    }
    return;
  }
  if (++clean_steps_ == options_.growth_window) {
    scale_ *= 2.0;
    clean_steps_ = 0;
    hysteresis_left_ = options_.hysteresis;
  }
}

void DynamicLossScaler::restore(const LossScalerState& state) {
  scale_ = state.scale;
  hysteresis_left_ = state.hysteresis_left;
  clean_steps_ = state.clean_steps;
  skipped_ = state.skipped;
}

}  // namespace st
