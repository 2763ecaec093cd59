// The device a command's rank computes on, with its CPU threads sized for it.
#pragma once

#include <c10/core/Device.h>

#include "distributed/world.h"
#include "util/device.h"

namespace st {

// select_device for this rank; on the CPU, libtorch and OpenBLAS then use the rank's share of
// the node's cores (use_rank_share_of_cores), so ranks sharing a node do not each start a thread
// per core. Throws ConfigError as select_device does.
c10::Device select_rank_device(DeviceChoice choice, const World& world);

}  // namespace st
