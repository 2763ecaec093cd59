// The collectives the FSDP engine needs, on torch tensors, behind one interface with an MPI
// backend (CPU tensors; every CI test) and an NCCL backend (CUDA tensors, own stream).
// All tensors must be contiguous. Every call is collective over the communicator's group: all
// ranks call it in the same order with matching shapes. Each is watched by the watchdog.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

namespace st {

enum class ReduceOp { sum, avg, max };
const char* reduce_op_name(ReduceOp op);

// Handle to an asynchronous collective. wait() blocks until the result may be used (MPI) or
// orders the compute stream after it (NCCL). Destroying an unwaited Work waits for it, so
// buffers are never released while a collective still uses them.
class Work {
 public:
  Work() = default;
  explicit Work(std::function<void()> finish) : finish_(std::move(finish)) {}
  Work(Work&& other) noexcept : finish_(std::move(other.finish_)) { other.finish_ = nullptr; }
  Work& operator=(Work&& other) noexcept;
  Work(const Work&) = delete;
  Work& operator=(const Work&) = delete;
  ~Work() { wait(); }

  void wait();
  bool pending() const { return static_cast<bool>(finish_); }

 private:
  std::function<void()> finish_;
};

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string backend() const = 0;

  // full[r*n, (r+1)*n) = shard of rank r; full.numel() == size() * shard.numel(). `shard` may
  // be that slice of `full` itself (in-place gather).
  virtual Work all_gather_into_async(const at::Tensor& full, const at::Tensor& shard) = 0;
  // shard = op over ranks of full[rank*n, (rank+1)*n); sum or avg; bf16/fp16 reduce in fp32.
  virtual Work reduce_scatter_async(const at::Tensor& shard, const at::Tensor& full,
                                    ReduceOp op) = 0;
  // In place; sum, avg or max.
  virtual Work all_reduce_async(const at::Tensor& tensor, ReduceOp op) = 0;
  // In place; every rank ends with root's values.
  virtual Work broadcast_async(const at::Tensor& tensor, int root) = 0;
  virtual Work barrier_async() = 0;
  // Rows (the first dimension) to every rank and from every rank: input's rows
  // [sum(input_rows[0, r)), + input_rows[r]) go to rank r, and rank r's arrive in output's rows
  // [sum(output_rows[0, r)), + output_rows[r]), in rank order. output_rows[r] is what rank r
  // sends this rank (expert parallelism exchanges the counts first, then the tokens). Same dtype
  // and row shape on both sides; a count may be 0.
  virtual Work all_to_all_async(const at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& output_rows, const std::vector<int64_t>& input_rows) = 0;

  // Blocking forms.
  void all_gather_into(const at::Tensor& full, const at::Tensor& shard) {
    all_gather_into_async(full, shard).wait();
  }
  void reduce_scatter(const at::Tensor& shard, const at::Tensor& full, ReduceOp op) {
    reduce_scatter_async(shard, full, op).wait();
  }
  void all_reduce(const at::Tensor& tensor, ReduceOp op) { all_reduce_async(tensor, op).wait(); }
  void broadcast(const at::Tensor& tensor, int root) { broadcast_async(tensor, root).wait(); }
  void barrier() { barrier_async().wait(); }
  void all_to_all(const at::Tensor& output, const at::Tensor& input, const std::vector<int64_t>& output_rows,
                  const std::vector<int64_t>& input_rows) {
    all_to_all_async(output, input, output_rows, input_rows).wait();
  }
};

// Shape checks shared by the backends; throw std::invalid_argument naming the collective.
void check_gather_shapes(const char* operation, const at::Tensor& full, const at::Tensor& shard,
                         int group_size);
// all_to_all's: one count per rank, none negative, summing to each side's rows; the same dtype
// and row shape. Returns the elements of one row.
int64_t check_all_to_all_shapes(const at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& output_rows, const std::vector<int64_t>& input_rows,
                                int group_size);
// "all_reduce(sum, float32 x 1000)" for watchdog messages.
std::string describe_collective(const char* operation, const at::Tensor& tensor,
                                const char* detail = nullptr);

}  // namespace st
