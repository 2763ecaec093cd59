// Moving tensors between the host and the device without stalling the GPU's queue more than
// needed. Host -> device copies go through pinned memory and do not block; every device ->
// host read of the training step goes through read_to_host, which counts them, so a test can
// hold a step to its one read (a read waits for all queued work).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace st {

// `host` on `device`: the tensor itself on the CPU, else copied from pinned memory without
// blocking the host.
at::Tensor to_device_async(const at::Tensor& host, const at::Device& device);

// `tensor` on the CPU (a device tensor waits for the work queued before it); counted.
at::Tensor read_to_host(const at::Tensor& tensor);
// Reads so far in this process.
int64_t host_reads();

}  // namespace st
