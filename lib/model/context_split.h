// Context parallelism's split of a micro-batch (dist.context_parallel = C): the rows are padded
// to a multiple of 2C tokens and cut into 2C chunks; rank k of the context group holds chunks
// k and 2C-1-k of every row, so each rank gets as much causal attention work as the others.
// Every per-token part of the model (embedding, norms, projections, MLP, head) runs on those
// tokens alone; attention gathers the group's keys and values (context_exchange.h) and each
// local query span attends to its keys there: the spans of the whole rows (attention_spans.h)
// cut to this rank's queries, their key lists indexing the gathered tokens. The head returns
// this rank's targets' log-probs by slot; the FSDP model adds the group's and sums each line.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "model/context_exchange.h"
#include "model/llama_units.h"

namespace st {

// Rows of `length` tokens padded to a multiple of 2 x `parts`.
int64_t context_row_length(int64_t length, int64_t parts);
// The positions of a padded row (context_row_length) that rank `rank` of `parts` holds, in order.
std::vector<int64_t> context_positions(int64_t padded_length, int64_t parts, int64_t rank);

// make_token_batch's batch for this rank of `exchange`'s group: input_ids and targets [R, T] on
// the host, `layout` as there (undefined: plain rows), each kind of layer's positions. Always
// attention spans (a layout that has none is refused by name); the sums' slots are over the
// padded rows.
TokenBatch make_context_token_batch(const at::Tensor& input_ids, const at::Tensor& targets, const ModelAttention& kinds,
                                    at::ScalarType compute_dtype, int64_t logp_chunk_tokens, const RowLayout& layout,
                                    const std::shared_ptr<ContextExchange>& exchange);
// The same with one kind of layer (tests): `inverse_frequencies` and `sliding_window` for every layer.
TokenBatch make_context_token_batch(const at::Tensor& input_ids, const at::Tensor& targets,
                                    const at::Tensor& inverse_frequencies, at::ScalarType compute_dtype,
                                    int64_t logp_chunk_tokens, const RowLayout& layout, int64_t sliding_window,
                                    const std::shared_ptr<ContextExchange>& exchange);

}  // namespace st
