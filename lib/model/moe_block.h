// A sparse layer's MLP (FamilySpec::experts): a router picks each token's top-k experts, each a
// SwiGLU MLP of its own, and the token's output is their outputs weighted by the router. As
// transformers' Qwen3-MoE and Mixtral blocks: the router's softmax in fp32 over all experts, top-k,
// the k weights renormalised to sum 1 when the config says so, then cast to the activations'
// dtype. Dropless: every token reaches every expert it picked.
#pragma once

#include <ATen/core/Tensor.h>

#include "hf/model_config.h"
#include "model/activation_cache.h"

namespace st {

struct LayerWeights;

// Each token's routing: probs [N, E] (fp32 softmax over all experts, differentiable: the
// load-balancing loss reads them), experts [N, k] (int64, in descending probability), weights
// [N, k] (in the router logits' dtype).
struct Routing {
  at::Tensor probs, experts, weights;
};

// tokens [N, D] (already normalised), router [E, D].
Routing route(const at::Tensor& tokens, const at::Tensor& router, const ExpertShape& shape,
              ActivationCache* cache = nullptr);

// How the experts run over their sorted rows: automatic = one grouped GEMM per projection over
// every expert (aten::_grouped_mm) for bf16 on a GPU whose libtorch has it (>= 2.9) and no
// adapters, else one matmul per expert; looped = one matmul per expert always (the reference
// the GPU test holds the grouped path to).
enum class ExpertKernel { automatic, looped };

// The experts' outputs over tokens [N, D]: tokens grouped by expert (one matmul per expert over
// its tokens, or one grouped GEMM over all, never one per token), each output scaled by its
// weight and summed per token in expert order, as transformers sums them. Under expert
// parallelism (weights.expert_exchange) each token row travels to the rank holding its expert
// and its output back (dropless). `pairs_are_experts`: the layer's gate and down LoRA pairs, where
// bound, are the experts' stacked ones (hf/param_table.h lora_adapts_routed_experts); false where
// they are a shared expert's, the routed experts then unadapted.
at::Tensor expert_outputs(const LayerWeights& weights, const at::Tensor& tokens, const Routing& routing,
                          ActivationCache* cache = nullptr, ExpertKernel kernel = ExpertKernel::automatic,
                          bool pairs_are_experts = true);

// x [B, T, D] (already normalised) -> [B, T, D]: the routed experts' weighted sum, plus the shared
// expert's output times sigmoid(its gate) where the family has one (Experts::qwen_shared). `routing`,
// when given, receives the tokens' routing.
at::Tensor moe_block(const LayerWeights& weights, const at::Tensor& x, const ModelConfig& config,
                     ActivationCache* cache = nullptr, Routing* routing = nullptr);

}  // namespace st
