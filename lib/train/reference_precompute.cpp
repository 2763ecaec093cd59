#include "train/reference_precompute.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "prep/reference_columns.h"
#include "train/batch_loss.h"

namespace st {
namespace {

// Every rank's [rows] fp32 block, rank-major; blocks are padded to one length.
std::vector<float> gather_blocks(Communicator& host, const at::Tensor& mine) {
  const at::Tensor all = at::empty({mine.numel() * host.size()}, at::kFloat);
  host.all_gather_into(all, mine.contiguous());
  return {all.data_ptr<float>(), all.data_ptr<float>() + all.numel()};
}

}  // namespace

ReferenceLogps score_reference_logps(const PairDataset& dataset, ReferenceModel& reference,
                                     const CollateOptions& collate, const at::Device& /*device: the reference model has its own*/,
                                     Communicator& host) {
  const uint64_t pairs = dataset.size();
  const uint64_t block = (pairs + host.size() - 1) / host.size();
  const uint64_t first = std::min(pairs, block * static_cast<uint64_t>(host.rank()));
  const uint64_t last = std::min(pairs, first + block);
  const auto per_pass = static_cast<uint64_t>(std::max<int64_t>(1, collate.micro_batch));
  // Forward passes are collective: every rank runs as many as the fullest block needs.
  const uint64_t passes = (block + per_pass - 1) / per_pass;

  at::Tensor chosen = at::zeros({static_cast<int64_t>(block)}, at::kFloat);
  at::Tensor rejected = at::zeros({static_cast<int64_t>(block)}, at::kFloat);
  const PairKind kind = dataset.kind();
  const MicroBatch padding = padding_micro_batch(kind, dataset.pad_id(), false);
  for (uint64_t pass = 0; pass < passes; ++pass) {
    const uint64_t begin = std::min(last, first + pass * per_pass);
    const uint64_t end = std::min(last, begin + per_pass);
    std::vector<Pair> batch_pairs;
    for (uint64_t index = begin; index < end; ++index) batch_pairs.push_back(dataset.example(index, collate.micro_batch));
    const MicroBatch micro = batch_pairs.empty() ? padding : collate_pairs(std::move(batch_pairs), kind, collate);
    const at::Tensor logps = reference.logps(micro.input_ids, micro.targets, micro.layout).to(at::kCPU);
    const int64_t count = micro.pairs;
    if (count == 0) continue;
    const auto offset = static_cast<int64_t>(begin - first);
    chosen.narrow(0, offset, count).copy_(logps.narrow(0, 0, count));
    rejected.narrow(0, offset, count).copy_(logps.narrow(0, count, count));
  }
  ReferenceLogps result;
  result.chosen = gather_blocks(host, chosen);
  result.rejected = gather_blocks(host, rejected);
  result.chosen.resize(pairs);
  result.rejected.resize(pairs);
  return result;
}

uint64_t precompute_reference(const std::string& directory, PairKind kind, ReferenceModel& reference,
                              const CollateOptions& collate, const at::Device& device, const ReferenceInfo& info,
                              Communicator& host) {
  const PairDataset dataset(directory, {kind, 0, false});
  const ReferenceLogps logps = score_reference_logps(dataset, reference, collate, device, host);
  const Manifest& manifest = dataset.manifest();
  const auto shard_count = static_cast<int64_t>(manifest.shards.size());
  // CRCs travel as doubles (exact for 32 bits) in one sum over the ranks.
  at::Tensor crcs = at::zeros({shard_count}, at::kDouble);
  std::vector<ShardEntry> written = manifest.shards;
  uint64_t offset = 0;
  for (int64_t shard = 0; shard < shard_count; ++shard) {
    const ShardEntry& entry = manifest.shards[static_cast<size_t>(shard)];
    if (shard % host.size() == host.rank()) {
      const auto from = logps.chosen.begin() + static_cast<int64_t>(offset);
      const auto from_rejected = logps.rejected.begin() + static_cast<int64_t>(offset);
      const auto pairs = static_cast<int64_t>(entry.pairs);
      written[static_cast<size_t>(shard)] = write_shard_with_reference(
          directory, entry, {from, from + pairs}, {from_rejected, from_rejected + pairs});
      crcs[shard] = static_cast<double>(written[static_cast<size_t>(shard)].crc32);
    }
    offset += entry.pairs;
  }
  host.all_reduce(crcs, ReduceOp::sum);
  for (int64_t shard = 0; shard < shard_count; ++shard) {
    written[static_cast<size_t>(shard)].file = reference_shard_name(manifest.shards[static_cast<size_t>(shard)].file);
    written[static_cast<size_t>(shard)].crc32 = static_cast<uint32_t>(crcs[shard].item<double>());
  }
  ReferenceInfo recorded = info;
  recorded.chat_template = dataset.chat_template();
  if (schema_of(kind).second == SecondSequence::partner) recorded.partner_group = collate.micro_batch;
  if (host.rank() == 0) commit_reference_shards(directory, manifest, written, recorded);
  host.barrier();  // no rank reads the directory again before the manifest switched
  return dataset.size();
}

}  // namespace st
