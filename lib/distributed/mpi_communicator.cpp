// MPI backend: non-blocking MPI collectives; blocking forms are these plus wait().
#include "distributed/mpi_communicator.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <initializer_list>
#include <memory>
#include <stdexcept>
#include <thread>

#include "util/check.h"

namespace st {
namespace {

bool is_16bit_float(at::ScalarType type) {
  return type == at::kBFloat16 || type == at::kHalf;
}

bool is_floating(at::ScalarType type) { return at::isFloatingType(type); }

// The MPI type that moves the elements; 16-bit floats move as raw 16-bit words.
MPI_Datatype mpi_type(const char* operation, at::ScalarType type) {
  switch (type) {
    case at::kFloat: return MPI_FLOAT;
    case at::kDouble: return MPI_DOUBLE;
    case at::kInt: return MPI_INT32_T;
    case at::kLong: return MPI_INT64_T;
    case at::kByte: return MPI_UINT8_T;
    case at::kChar: return MPI_INT8_T;
    case at::kBFloat16:
    case at::kHalf: return MPI_UINT16_T;
    default:
      throw std::invalid_argument(std::string(operation) + ": dtype " + c10::toString(type) +
                                  " is not supported by the MPI backend");
  }
}

MPI_Op mpi_op(const char* operation, ReduceOp op, at::ScalarType type) {
  if (op == ReduceOp::avg && !is_floating(type)) {
    throw std::invalid_argument(std::string(operation) + ": avg needs a floating-point tensor, got " +
                                c10::toString(type));
  }
  return op == ReduceOp::max ? MPI_MAX : MPI_SUM;
}

int checked_count(const char* operation, int64_t count) {
  if (count > INT_MAX) {
    throw std::invalid_argument(std::string(operation) + ": " + std::to_string(count) +
                                " elements exceed MPI's int count limit; split the tensor");
  }
  return static_cast<int>(count);
}

void check_cpu(const char* operation, const at::Tensor& tensor) {
  if (!tensor.device().is_cpu()) {
    throw std::invalid_argument(std::string(operation) + ": the MPI backend works on CPU and CUDA tensors, not " +
                                tensor.device().str());
  }
  if (!tensor.is_contiguous()) {
    throw std::invalid_argument(std::string(operation) + ": tensor must be contiguous");
  }
}

bool overlaps(const at::Tensor& a, const at::Tensor& b) {
  const auto* a_begin = static_cast<const char*>(a.data_ptr());
  const auto* b_begin = static_cast<const char*>(b.data_ptr());
  return a.nbytes() > 0 && b.nbytes() > 0 && a_begin < b_begin + b.nbytes() &&
         b_begin < a_begin + a.nbytes();
}

at::Tensor on_host(const at::Tensor& tensor) { return tensor.is_cuda() ? tensor.to(at::kCPU) : tensor; }

bool staged(std::initializer_list<at::Tensor> tensors) {
  for (const at::Tensor& tensor : tensors) {
    if (tensor.is_cuda()) return true;
  }
  return false;
}

// MPI_Wait, giving the core back while the peers are late: polls for kSpinFor (a collective whose
// peers are ready ends within it), then sleeps between polls, the nap doubling from kFirstNap to
// kLongestNap (a late collective ends at most ~1 ms later; a waiting rank uses ~2% of a core).
// MPI_Wait polls without end, so a rank waiting for a peer that is slower, descheduled (more
// ranks than cores) or lost (until the watchdog fires) held a core: of a 2-host node-loss test's
// 49 s of CPU, about half was ranks waiting (24 s with this wait).
constexpr std::chrono::microseconds kSpinFor{2000};
constexpr std::chrono::microseconds kFirstNap{50};
constexpr std::chrono::microseconds kLongestNap{1000};
void wait_politely(MPI_Request& request) {
  const auto spin_until = std::chrono::steady_clock::now() + kSpinFor;
  std::chrono::microseconds nap = kFirstNap;
  for (int done = 0;;) {
    ST_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (std::chrono::steady_clock::now() > spin_until) {
      std::this_thread::sleep_for(nap);
      nap = std::min(2 * nap, kLongestNap);
    }
  }
}

// Work that finishes `host_work`, then copies `host` back into the CUDA tensor `device`.
Work copy_back_after(Work host_work, const at::Tensor& device, const at::Tensor& host) {
  auto pending = std::make_shared<Work>(std::move(host_work));
  return Work([pending, device, host] {
    pending->wait();
    device.copy_(host);
  });
}

}  // namespace

MpiCommunicator::MpiCommunicator(MPI_Comm comm, Watchdog& watchdog)
    : comm_(MpiComm::duplicate(comm)), watchdog_(watchdog) {
  rank_ = comm_.rank();
  size_ = comm_.size();
}

Work MpiCommunicator::track(MPI_Request request, const std::string& description,
                            std::function<void()> after) {
  const Watchdog::Ticket ticket = watchdog_.arm(description);
  return Work([this, request, ticket, after = std::move(after)]() mutable {
    wait_politely(request);
    watchdog_.disarm(ticket);
    after();
  });
}

Work MpiCommunicator::all_gather_into_async(const at::Tensor& full, const at::Tensor& shard) {
  if (!staged({full, shard})) return all_gather_host(full, shard);
  const at::Tensor host_full = at::empty(full.sizes(), full.options().device(at::kCPU));
  return copy_back_after(all_gather_host(host_full, shard.to(at::kCPU)), full, host_full);
}

Work MpiCommunicator::reduce_scatter_async(const at::Tensor& shard, const at::Tensor& full, ReduceOp op) {
  if (!staged({full, shard})) return reduce_scatter_host(shard, full, op);
  const at::Tensor host_shard = at::empty(shard.sizes(), shard.options().device(at::kCPU));
  return copy_back_after(reduce_scatter_host(host_shard, on_host(full), op), shard, host_shard);
}

Work MpiCommunicator::all_reduce_async(const at::Tensor& tensor, ReduceOp op) {
  if (!tensor.is_cuda()) return all_reduce_host(tensor, op);
  const at::Tensor host = tensor.to(at::kCPU);
  return copy_back_after(all_reduce_host(host, op), tensor, host);
}

Work MpiCommunicator::broadcast_async(const at::Tensor& tensor, int root) {
  if (!tensor.is_cuda()) return broadcast_host(tensor, root);
  const at::Tensor host = tensor.to(at::kCPU);
  return copy_back_after(broadcast_host(host, root), tensor, host);
}

Work MpiCommunicator::all_to_all_async(const at::Tensor& output, const at::Tensor& input,
                                      const std::vector<int64_t>& output_rows, const std::vector<int64_t>& input_rows) {
  if (!staged({output, input})) return all_to_all_host(output, input, output_rows, input_rows);
  const at::Tensor host_output = at::empty(output.sizes(), output.options().device(at::kCPU));
  return copy_back_after(all_to_all_host(host_output, on_host(input), output_rows, input_rows), output, host_output);
}

Work MpiCommunicator::all_gather_host(const at::Tensor& full, const at::Tensor& shard) {
  const char* name = "all_gather_into";
  check_cpu(name, full);
  check_cpu(name, shard);
  check_gather_shapes(name, full, shard, size_);
  const MPI_Datatype type = mpi_type(name, full.scalar_type());
  const int count = checked_count(name, shard.numel());
  const bool in_place = static_cast<const char*>(shard.data_ptr()) ==
                        static_cast<const char*>(full.data_ptr()) + rank_ * shard.nbytes();
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Iallgather(in_place ? MPI_IN_PLACE : shard.data_ptr(), count, type,
                              full.data_ptr(), count, type, comm_.get(), &request));
  return track(request, describe_collective(name, full), [full, shard] {});
}

Work MpiCommunicator::reduce_scatter_host(const at::Tensor& shard, const at::Tensor& full, ReduceOp op) {
  const char* name = "reduce_scatter";
  check_cpu(name, full);
  check_cpu(name, shard);
  check_gather_shapes(name, full, shard, size_);
  if (overlaps(shard, full)) {
    throw std::invalid_argument("reduce_scatter: shard must not alias full");
  }
  const MPI_Op reduction = mpi_op(name, op, full.scalar_type());
  const int count = checked_count(name, shard.numel());
  const bool widen = is_16bit_float(full.scalar_type());
  at::Tensor send = widen ? full.to(at::kFloat) : full;
  at::Tensor receive = widen ? at::empty({shard.numel()}, full.options().dtype(at::kFloat)) : shard;
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Ireduce_scatter_block(send.data_ptr(), receive.data_ptr(), count,
                                         mpi_type(name, send.scalar_type()), reduction,
                                         comm_.get(), &request));
  const int ranks = size_;
  return track(request, describe_collective(name, full, reduce_op_name(op)),
               [shard, send, receive, op, ranks, widen] {
                 if (op == ReduceOp::avg) receive.div_(ranks);
                 if (widen) shard.view({-1}).copy_(receive);
               });
}

Work MpiCommunicator::all_reduce_host(const at::Tensor& tensor, ReduceOp op) {
  const char* name = "all_reduce";
  check_cpu(name, tensor);
  const MPI_Op reduction = mpi_op(name, op, tensor.scalar_type());
  const int count = checked_count(name, tensor.numel());
  const bool widen = is_16bit_float(tensor.scalar_type());
  at::Tensor buffer = widen ? tensor.to(at::kFloat) : tensor;
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, buffer.data_ptr(), count,
                              mpi_type(name, buffer.scalar_type()), reduction, comm_.get(),
                              &request));
  const int ranks = size_;
  return track(request, describe_collective(name, tensor, reduce_op_name(op)),
               [tensor, buffer, op, ranks, widen] {
                 if (op == ReduceOp::avg) buffer.div_(ranks);
                 if (widen) tensor.copy_(buffer);
               });
}

Work MpiCommunicator::all_to_all_host(const at::Tensor& output, const at::Tensor& input,
                                     const std::vector<int64_t>& output_rows, const std::vector<int64_t>& input_rows) {
  const char* name = "all_to_all";
  check_cpu(name, output);
  check_cpu(name, input);
  const int64_t row = check_all_to_all_shapes(output, input, output_rows, input_rows, size_);
  if (overlaps(output, input)) throw std::invalid_argument("all_to_all: output must not alias input");
  // Counts and offsets in rows of one derived type, so MPI's int counts bound rows, not elements.
  // They must outlive the request, as the buffers do.
  struct Layout {
    std::vector<int> send_counts, send_offsets, receive_counts, receive_offsets;
  };
  auto layout = std::make_shared<Layout>();
  int64_t sent = 0, received = 0;
  for (int peer = 0; peer < size_; ++peer) {
    layout->send_counts.push_back(checked_count(name, input_rows[static_cast<size_t>(peer)]));
    layout->send_offsets.push_back(checked_count(name, sent));
    layout->receive_counts.push_back(checked_count(name, output_rows[static_cast<size_t>(peer)]));
    layout->receive_offsets.push_back(checked_count(name, received));
    sent += input_rows[static_cast<size_t>(peer)];
    received += output_rows[static_cast<size_t>(peer)];
  }
  MPI_Datatype row_type = MPI_DATATYPE_NULL;
  ST_CHECK_MPI(MPI_Type_contiguous(checked_count(name, row), mpi_type(name, input.scalar_type()),
                                   &row_type));
  ST_CHECK_MPI(MPI_Type_commit(&row_type));
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Ialltoallv(input.data_ptr(), layout->send_counts.data(), layout->send_offsets.data(), row_type,
                              output.data_ptr(), layout->receive_counts.data(), layout->receive_offsets.data(),
                              row_type, comm_.get(), &request));
  ST_CHECK_MPI(MPI_Type_free(&row_type));  // freed once the pending exchange is done with it
  return track(request, describe_collective(name, input), [output, input, layout] {});
}

Work MpiCommunicator::broadcast_host(const at::Tensor& tensor, int root) {
  const char* name = "broadcast";
  check_cpu(name, tensor);
  if (root < 0 || root >= size_) {
    throw std::invalid_argument("broadcast: root " + std::to_string(root) + " is not a rank of " +
                                std::to_string(size_));
  }
  const int bytes = checked_count(name, static_cast<int64_t>(tensor.nbytes()));
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Ibcast(tensor.data_ptr(), bytes, MPI_BYTE, root, comm_.get(), &request));
  return track(request, describe_collective(name, tensor), [tensor] {});
}

Work MpiCommunicator::barrier_async() {
  MPI_Request request = MPI_REQUEST_NULL;
  ST_CHECK_MPI(MPI_Ibarrier(comm_.get(), &request));
  return track(request, "barrier()", [] {});
}

}  // namespace st
