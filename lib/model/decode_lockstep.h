// Decoding under expert parallelism: a sparse layer's forward sends its tokens to the ranks that
// hold their experts and serves theirs (model/expert_exchange.h), so every rank of the expert
// group must run as many forwards as the others, whatever its own rows need. Before each forward
// a rank says it has one; a rank with none left runs an idle forward (one token, discarded) for
// each forward another rank still runs, until no rank has one. Without an exchange it does nothing.
#pragma once

#include <memory>

#include "hf/model_config.h"
#include "model/llama_blocks.h"

namespace st {

class DecodeLockstep {
 public:
  // The exchange of `weights`' layers (llama_weights), if any; `weights` must outlive this.
  DecodeLockstep(const LlamaWeights& weights, const ModelConfig& config);

  // This rank runs a forward next (collective over the group: every rank runs one then).
  void before_forward();
  // This rank has no forward left: idle forwards until no rank of the group has one.
  void finish();

  int64_t idle_forwards() const { return idle_forwards_; }

 private:
  bool any_rank(bool mine);

  const LlamaWeights& weights_;
  const ModelConfig& config_;
  std::shared_ptr<ExpertExchange> exchange_;
  int64_t idle_forwards_ = 0;
};

}  // namespace st
