#include "cuda/gated_delta_rule.h"

namespace {

constexpr int kThreads = 256;

struct BlockLanes {
  __device__ int rank() const { return static_cast<int>(threadIdx.x); }
  __device__ int count() const { return static_cast<int>(blockDim.x); }
  __device__ void sync() const { __syncthreads(); }
};

template <typename Program>
__global__ void run_program(st_gated_delta::Problem<float> problem, st_gated_delta::Workspace<float> workspace) {
  Program::run(BlockLanes{}, problem, workspace, static_cast<int64_t>(blockIdx.x), static_cast<int64_t>(blockIdx.y));
}

// Launches each program on its grid, stopping at the first failed launch.
struct Launcher {
  const st_gated_delta::Problem<float>& problem;
  st_gated_delta::Workspace<float> workspace;
  cudaStream_t stream;
  cudaError_t* status;

  template <typename Program>
  void operator()(Program, int64_t blocks_x, int64_t blocks_y) const {
    if (*status != cudaSuccess) return;
    if (blocks_y > 65535) {  // a grid's y extent: chunks or value blocks
      *status = cudaErrorInvalidConfiguration;
      return;
    }
    run_program<Program><<<dim3(static_cast<unsigned>(blocks_x), static_cast<unsigned>(blocks_y)), kThreads, 0,
                           stream>>>(problem, workspace);
    *status = cudaGetLastError();
  }
};

cudaError_t run(const st_gated_delta::Problem<float>& problem, bool backward, cudaStream_t stream) {
  if (problem.heads <= 0 || problem.length <= 0) return cudaSuccess;
  cudaError_t status = cudaSuccess;
  const Launcher launch{problem, st_gated_delta::bind_workspace(problem, backward, problem.workspace), stream, &status};
  if (backward) {
    st_gated_delta::run_backward(problem, launch);
  } else {
    st_gated_delta::run_forward(problem, launch);
  }
  return status;
}

}  // namespace

cudaError_t st_gated_delta_forward(const st_gated_delta::Problem<float>& problem, cudaStream_t stream) {
  return run(problem, false, stream);
}

cudaError_t st_gated_delta_backward(const st_gated_delta::Problem<float>& problem, cudaStream_t stream) {
  return run(problem, true, stream);
}
