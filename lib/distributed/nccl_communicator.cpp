// NcclCommunicator: tensor checks, stream ordering, dtype mapping, watchdog polling.
#include "distributed/nccl_communicator.h"

#include <ATen/ATen.h>

#include <memory>
#include <stdexcept>

#include "util/check_cuda.h"
#include "util/torch_compat.h"

namespace st {
namespace {

ncclDataType_t nccl_type(const char* operation, at::ScalarType type) {
  switch (type) {
    case at::kFloat: return ncclFloat32;
    case at::kDouble: return ncclFloat64;
    case at::kHalf: return ncclFloat16;
    case at::kBFloat16: return ncclBfloat16;
    case at::kInt: return ncclInt32;
    case at::kLong: return ncclInt64;
    case at::kByte: return ncclUint8;
    case at::kChar: return ncclInt8;
    default:
      throw std::invalid_argument(std::string(operation) + ": dtype " + c10::toString(type) +
                                  " is not supported by the NCCL backend");
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return ncclSum;
    case ReduceOp::avg: return ncclAvg;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

void check_cuda_tensor(const char* operation, const at::Tensor& tensor, int device) {
  if (!tensor.is_cuda() || tensor.get_device() != device) {
    throw std::invalid_argument(std::string(operation) + ": the NCCL backend needs tensors on cuda:" +
                                std::to_string(device));
  }
  if (!tensor.is_contiguous()) {
    throw std::invalid_argument(std::string(operation) + ": tensor must be contiguous");
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(MPI_Comm bootstrap, int cuda_device, Watchdog& watchdog)
    : comm_(NcclComm::bootstrap(bootstrap, cuda_device, watchdog.timeout())), watchdog_(watchdog) {
  ST_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
}

NcclCommunicator::~NcclCommunicator() {
  if (stream_) cudaStreamSynchronize(stream_);
  // The tickets' polls read comm_, which is destroyed after this body: a ticket the watchdog has
  // not yet retired would otherwise poll a dead communicator and abort the job at exit.
  watchdog_.disarm_all(this);
  if (stream_) cudaStreamDestroy(stream_);
}

cudaStream_t NcclCommunicator::begin(std::initializer_list<at::Tensor> tensors) {
  const cudaStream_t compute = compat::current_cuda_stream();
  cudaEvent_t ready = nullptr;
  ST_CHECK_CUDA(cudaEventCreateWithFlags(&ready, cudaEventDisableTiming));
  ST_CHECK_CUDA(cudaEventRecord(ready, compute));
  ST_CHECK_CUDA(cudaStreamWaitEvent(stream_, ready, 0));
  ST_CHECK_CUDA(cudaEventDestroy(ready));  // destruction is deferred until the event completes
  for (const auto& tensor : tensors) compat::record_stream(tensor, stream_);
  return stream_;
}

Work NcclCommunicator::finish(const std::string& description, std::function<void()> after) {
  cudaEvent_t raw = nullptr;
  ST_CHECK_CUDA(cudaEventCreateWithFlags(&raw, cudaEventDisableTiming));
  ST_CHECK_CUDA(cudaEventRecord(raw, stream_));
  auto done = std::shared_ptr<CUevent_st>(raw, [](cudaEvent_t event) { cudaEventDestroy(event); });
  const NcclComm* comm = &comm_;
  watchdog_.arm(
      description,
      [done, comm] {
        if (cudaEventQuery(done.get()) == cudaSuccess) return true;
        const ncclResult_t state = comm->async_error();
        if (state != ncclSuccess && state != ncclInProgress) {
          fail_check("NCCL collective", __FILE__, __LINE__, ncclGetErrorString(state));
        }
        return false;
      },
      this);
  return Work([done, after = std::move(after)] {
    ST_CHECK_CUDA(cudaStreamWaitEvent(compat::current_cuda_stream(), done.get(), 0));
    if (after) after();
  });
}

Work NcclCommunicator::all_gather_into_async(const at::Tensor& full, const at::Tensor& shard) {
  const char* name = "all_gather_into";
  check_cuda_tensor(name, full, comm_.device());
  check_cuda_tensor(name, shard, comm_.device());
  check_gather_shapes(name, full, shard, size());
  const cudaStream_t stream = begin({full, shard});
  comm_.all_gather(shard.data_ptr(), full.data_ptr(), static_cast<size_t>(shard.numel()),
                   nccl_type(name, full.scalar_type()), stream);
  return finish(describe_collective(name, full));
}

Work NcclCommunicator::reduce_scatter_async(const at::Tensor& shard, const at::Tensor& full,
                                            ReduceOp op) {
  const char* name = "reduce_scatter";
  check_cuda_tensor(name, full, comm_.device());
  check_cuda_tensor(name, shard, comm_.device());
  check_gather_shapes(name, full, shard, size());
  // Like the MPI backend, 16-bit floats are reduced in fp32 and rounded once.
  const bool widen = full.scalar_type() == at::kBFloat16 || full.scalar_type() == at::kHalf;
  const at::Tensor send = widen ? full.to(at::kFloat) : full;
  const at::Tensor receive = widen ? at::empty({shard.numel()}, send.options()) : shard;
  const cudaStream_t stream = begin({send, receive, shard});
  comm_.reduce_scatter(send.data_ptr(), receive.data_ptr(), static_cast<size_t>(shard.numel()),
                       nccl_type(name, send.scalar_type()), nccl_op(op), stream);
  std::function<void()> after;
  if (widen) after = [shard, receive] { shard.view({-1}).copy_(receive); };
  return finish(describe_collective(name, full, reduce_op_name(op)), std::move(after));
}

Work NcclCommunicator::all_reduce_async(const at::Tensor& tensor, ReduceOp op) {
  const char* name = "all_reduce";
  check_cuda_tensor(name, tensor, comm_.device());
  const bool widen = tensor.scalar_type() == at::kBFloat16 || tensor.scalar_type() == at::kHalf;
  const at::Tensor buffer = widen ? tensor.to(at::kFloat) : tensor;
  const cudaStream_t stream = begin({buffer});
  comm_.all_reduce(buffer.data_ptr(), buffer.data_ptr(), static_cast<size_t>(buffer.numel()),
                   nccl_type(name, buffer.scalar_type()), nccl_op(op), stream);
  std::function<void()> after;
  if (widen) after = [tensor, buffer] { tensor.copy_(buffer); };
  return finish(describe_collective(name, tensor, reduce_op_name(op)), std::move(after));
}

Work NcclCommunicator::broadcast_async(const at::Tensor& tensor, int root) {
  const char* name = "broadcast";
  check_cuda_tensor(name, tensor, comm_.device());
  const cudaStream_t stream = begin({tensor});
  comm_.broadcast(tensor.data_ptr(), tensor.data_ptr(), static_cast<size_t>(tensor.nbytes()),
                  ncclUint8, root, stream);
  return finish(describe_collective(name, tensor));
}

Work NcclCommunicator::all_to_all_async(const at::Tensor& output, const at::Tensor& input,
                                       const std::vector<int64_t>& output_rows,
                                       const std::vector<int64_t>& input_rows) {
  const char* name = "all_to_all";
  check_cuda_tensor(name, output, comm_.device());
  check_cuda_tensor(name, input, comm_.device());
  const int64_t row = check_all_to_all_shapes(output, input, output_rows, input_rows, size());
  const auto row_bytes = static_cast<size_t>(row) * input.element_size();
  std::vector<size_t> send_bytes, receive_bytes;
  for (size_t peer = 0; peer < input_rows.size(); ++peer) {
    send_bytes.push_back(static_cast<size_t>(input_rows[peer]) * row_bytes);
    receive_bytes.push_back(static_cast<size_t>(output_rows[peer]) * row_bytes);
  }
  const cudaStream_t stream = begin({output, input});
  comm_.all_to_all(input.data_ptr(), output.data_ptr(), send_bytes, receive_bytes, stream);
  return finish(describe_collective(name, input));
}

Work NcclCommunicator::barrier_async() {
  // NCCL has no barrier; a one-element all-reduce on the device orders every rank the same way.
  auto token = std::make_shared<void*>(nullptr);
  ST_CHECK_CUDA(cudaMallocAsync(token.get(), sizeof(float), stream_));
  ST_CHECK_CUDA(cudaMemsetAsync(*token, 0, sizeof(float), stream_));
  comm_.all_reduce(*token, *token, 1, ncclFloat32, ncclSum, stream_);
  cudaStream_t stream = stream_;
  ST_CHECK_CUDA(cudaFreeAsync(*token, stream));
  return finish("barrier()");
}

}  // namespace st
