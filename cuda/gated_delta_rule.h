/* The chunked gated delta rule on the GPU, forward and backward, in fp32: the block programs of
   cuda/gated_delta_programs.h launched as kernels on `stream`. A C++ header (the problem is the
   programs' template, shared with the host tests), still free of libtorch. The references are
   lib/model/gated_delta_rule.cpp's chunked and recurrent paths (tests/cuda/test_gated_delta_rule.cpp). */
#pragma once

#include <cuda_runtime_api.h>

#include "cuda/gated_delta_programs.h"

/* problem.workspace: st_gated_delta::workspace_elements(problem, false) floats; writes out and
   final_state. */
cudaError_t st_gated_delta_forward(const st_gated_delta::Problem<float>& problem, cudaStream_t stream);

/* problem.workspace: workspace_elements(problem, true) floats; reads grad_out (and
   grad_final_state when given), writes every grad_* (grad_initial_state when given). */
cudaError_t st_gated_delta_backward(const st_gated_delta::Problem<float>& problem, cudaStream_t stream);
