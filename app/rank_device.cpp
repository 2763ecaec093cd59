#include "rank_device.h"

#include "util/cpu_threads.h"

namespace st {

c10::Device select_rank_device(DeviceChoice choice, const World& world) {
  const c10::Device device = select_device(choice, world.local_device());
  if (!device.is_cuda()) use_rank_share_of_cores(world.topology().local_size);
  return device;
}

}  // namespace st
