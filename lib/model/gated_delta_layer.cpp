#include "model/gated_delta_layer.h"

#include <ATen/ATen.h>

#include <vector>

#include "model/gated_delta_mixer.h"
#include "util/errors.h"

namespace st {
namespace {

LoraTarget target_of(GatedDeltaProjection which) {
  switch (which) {
    case GatedDeltaProjection::qkv: return LoraTarget::in_proj_qkv;
    case GatedDeltaProjection::z: return LoraTarget::in_proj_z;
    case GatedDeltaProjection::b: return LoraTarget::in_proj_b;
    case GatedDeltaProjection::a: return LoraTarget::in_proj_a;
    case GatedDeltaProjection::out: break;
  }
  return LoraTarget::out;
}

// The layer's tensors, and its LoRA pairs on the projections where it holds them (as
// llama_blocks' projections add theirs: the same dropout streams by layer and target).
GatedDeltaWeights mixer_weights(const LayerWeights& w) {
  GatedDeltaWeights weights{w[LayerParam::linear_qkv],   w[LayerParam::linear_z],    w[LayerParam::linear_b],
                            w[LayerParam::linear_a],     w[LayerParam::linear_conv], w[LayerParam::linear_dt_bias],
                            w[LayerParam::linear_a_log], w[LayerParam::linear_norm], w[LayerParam::linear_out]};
  bool adapted = false;
  for (const LoraPair& pair : w.lora) adapted = adapted || pair.a.defined();
  if (!adapted) return weights;
  weights.delta = [&w](GatedDeltaProjection which, const at::Tensor& x) -> at::Tensor {
    const LoraTarget target = target_of(which);
    const LoraPair& pair = w.lora[static_cast<size_t>(target)];
    if (!pair.a.defined()) return {};
    return lora_delta(x, pair, w.adapter, lora_stream(w.layer, target), w.token_places);
  };
  return weights;
}

GatedDeltaShape mixer_shape(const ModelConfig& config) {
  GatedDeltaShape shape;
  static_cast<LinearAttentionShape&>(shape) = config.linear_attention;
  shape.norm_eps = config.rms_norm_eps;
  return shape;
}

// Runs that continue others (prompt sharing): each run from its prompt's carry, in order (a
// prompt's run comes before its branches').
at::Tensor continued_runs(const at::Tensor& x, const GatedDeltaWeights& w, const GatedDeltaShape& s,
                          const std::vector<SequenceRun>& runs) {
  const at::Tensor flat = x.reshape({1, -1, x.size(2)});
  std::vector<at::Tensor> outputs;
  std::vector<GatedDeltaCarry> ends(runs.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    const SequenceRun& run = runs[i];
    const GatedDeltaCarry from = run.continues >= 0 ? ends[static_cast<size_t>(run.continues)] : GatedDeltaCarry{};
    GatedDeltaStep step = gated_delta_mixer_step(flat.narrow(1, run.begin, run.end - run.begin), w, s, from);
    outputs.push_back(step.out);
    ends[i] = std::move(step.carry);
  }
  return at::cat(outputs, 1).view(x.sizes());
}

}  // namespace

at::Tensor gated_delta_block(const LayerWeights& weights, const at::Tensor& x, const TokenPositions& positions,
                             const ModelConfig& config, KvCache* cache) {
  if (positions.context) {
    throw ModelError("a Gated DeltaNet layer's recurrent state would have to pass between the context-parallel "
                     "ranks, which is not built: train this hybrid model with parallel.context = 1");
  }
  const GatedDeltaWeights w = mixer_weights(weights);
  const GatedDeltaShape s = mixer_shape(config);
  if (cache) {
    GatedDeltaCarry& carry = cache->carries.at(static_cast<size_t>(weights.layer));
    const at::Tensor valid = cache->new_tokens_valid;
    GatedDeltaStep step =
        gated_delta_mixer_step(valid.defined() ? x * valid.unsqueeze(-1).to(x.scalar_type()) : x, w, s, carry);
    carry = std::move(step.carry);
    return step.out;
  }
  if (!positions.runs) return gated_delta_mixer(x, w, s);  // each row one sequence from its start
  const std::vector<SequenceRun>& runs = *positions.runs;
  if (runs.empty()) {
    throw ModelError("a Gated DeltaNet layer needs the micro-batch's sequences laid out as collate lays them out");
  }
  bool continues = false;
  std::vector<int64_t> starts;
  for (const SequenceRun& run : runs) {
    continues = continues || run.continues >= 0;
    starts.push_back(run.begin);
  }
  if (continues) return continued_runs(x, w, s, runs);
  starts.push_back(x.size(0) * x.size(1));
  return gated_delta_mixer(x, w, s, &starts);
}

int64_t gated_delta_activation_elements(const ModelConfig& config) {
  // Counted as the chunked rule's torch formulation saves them (transformers' fallback, which
  // this one follows: 44.0 KB a token in bf16 measured with saved-tensor hooks for 12 value heads
  // of 32 over 4 key heads, 41.2 KB counted here): about 13 fp32 tensors of each value head's
  // key and value dimensions (q, k, v widened and chunked, the corrected values, the outputs),
  // 5 fp32 in-chunk matrices, one state per chunk, and the projections, conv and gated norm in
  // the compute dtype.
  const GatedDeltaShape s = mixer_shape(config);
  const int64_t heads = s.value_heads, fp32 = 2;
  const int64_t per_head_dim = 13 * heads * (s.key_head_dim + s.value_head_dim) / 2 * fp32;
  const int64_t in_chunk = 5 * heads * s.chunk * fp32;
  const int64_t states = heads * s.key_head_dim * s.value_head_dim / s.chunk * fp32;
  const int64_t compute_dtype = 2 * s.conv_channels() + 2 * s.value_dim() + config.hidden_size;
  return per_head_dim + in_chunk + states + compute_dtype;
}

}  // namespace st
