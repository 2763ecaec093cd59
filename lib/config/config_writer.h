// Writes the resolved configuration (defaults + file + overrides) back as INI, so a run can be
// reproduced with --config <run>/config.resolved.ini.
#pragma once

#include <string>

#include "config/train_config.h"

namespace st {

std::string format_resolved_config(const TrainConfig& config);
// Writes atomically (temporary file + rename): a crash never leaves half a config behind.
void write_resolved_config(const TrainConfig& config, const std::string& path);

}  // namespace st
