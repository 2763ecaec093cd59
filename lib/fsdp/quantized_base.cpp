#include "fsdp/quantized_base.h"

#include <ATen/ATen.h>

#include <algorithm>

#include "model/nf4.h"
#include "util/errors.h"
#if ST_HAVE_CUDA
#include "cuda/nf4_dequantize.h"
#include "model/activation_kernels.h"
#include "util/check_cuda.h"
#include "util/torch_compat.h"
#endif

namespace st {
namespace {

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

constexpr int64_t kDequantizeChunk = int64_t{1} << 20;  // elements, a multiple of the block size

// Pads a layout's end to whole shards of `granule` elements per rank (none when it is empty).
void pad_for_group(UnitLayout& layout, int group_size, int64_t granule) {
  layout.padded_numel = round_up(layout.numel, granule * group_size);
  layout.shard_numel = layout.padded_numel / group_size;
}

// Every gathered block's absmax, fp32 [total_blocks] in rank order: as stored, or decoded from
// its 8-bit code with its weight's statistics (double quantization).
at::Tensor gathered_absmax(const QuantizedUnit& unit, const at::Tensor& rows) {
  const QuantizedUnitLayout& layout = unit.layout;
  const int64_t blocks = layout.shard_blocks();
  if (!layout.double_quant) {
    return rows.narrow(1, layout.absmax_begin, blocks * 4).contiguous().view(at::kFloat).reshape({-1});
  }
  const at::Tensor codes = rows.narrow(1, layout.absmax_begin, blocks).reshape({-1});
  at::Tensor absmax = at::zeros({layout.total_blocks()}, rows.options().dtype(at::kFloat));
  int64_t nested_first = 0;
  for (size_t i = 0; i < layout.blocks.params.size(); ++i) {
    const ParamSlot& slot = layout.blocks.params[i];
    const int64_t first = slot.offset / kNf4BlockSize, count = nf4_blocks(slot.spec.numel());
    const int64_t nested = (count + kAbsmaxBlockSize - 1) / kAbsmaxBlockSize;
    const QuantizedAbsmax quantized{codes.narrow(0, first, count),
                                    unit.statistics.nested_absmax.narrow(0, nested_first, nested),
                                    unit.statistics.offsets.at(i)};
    absmax.narrow(0, first, count).copy_(dequantize_absmax(quantized));
    nested_first += nested;
  }
  return absmax;
}

// The codes of each rank's row -> `flat`'s blocks, in chunks of a row, so the per-element
// temporaries stay small beside the unit.
void dequantize_codes_reference(const QuantizedUnitLayout& layout, const at::Tensor& rows, const at::Tensor& absmax,
                                at::Tensor& flat) {
  const int64_t row_numel = layout.blocks.shard_numel;
  for (int64_t row = 0; row < rows.size(0); ++row) {
    for (int64_t first = 0; first < row_numel; first += kDequantizeChunk) {
      const int64_t count = std::min(kDequantizeChunk, row_numel - first), begin = row * row_numel + first;
      const Nf4Tensor chunk{rows[row].narrow(0, first / 2, count / 2),
                            absmax.narrow(0, begin / kNf4BlockSize, count / kNf4BlockSize), count};
      flat.narrow(0, begin, count).copy_(nf4_dequantize(chunk, flat.scalar_type()));
    }
  }
}

#if ST_HAVE_CUDA
// cuda/'s kernel, where it applies: the rows on a GPU, `flat` in an activation dtype.
bool dequantize_codes_on_gpu(const QuantizedUnitLayout& layout, const at::Tensor& rows, const at::Tensor& absmax,
                             at::Tensor& flat) {
  if (!kernel_activation(flat) || !rows.is_cuda() || rows.stride(0) != layout.shard_bytes) return false;
  ST_CHECK_CUDA(st_nf4_dequantize(rows.data_ptr<uint8_t>(), layout.shard_bytes, layout.shard_blocks(), rows.size(0),
                                  absmax.contiguous().data_ptr<float>(), flat.data_ptr(), activation_dtype(flat),
                                  compat::current_cuda_stream()));
  return true;
}
#endif

at::Tensor dequantize(const QuantizedUnit& unit, const at::Tensor& gathered, at::ScalarType dtype,
                      [[maybe_unused]] bool kernel) {
  const QuantizedUnitLayout& layout = unit.layout;
  if (gathered.numel() % layout.shard_bytes != 0) throw ModelError("nf4: gathered bytes are not whole shards");
  const int64_t group_size = gathered.numel() / layout.shard_bytes;
  if (group_size * layout.shard_blocks() != layout.total_blocks()) {
    throw ModelError("nf4: unit " + layout.blocks.name + " was gathered from another group size");
  }
  const at::Tensor rows = gathered.contiguous().view({group_size, layout.shard_bytes});
  const int64_t dense_bytes = layout.dense_bytes();
  if (layout.shard_blocks() == 0 && dense_bytes == layout.shard_bytes && dtype == layout.compute_dtype) {
    return gathered.view(dtype);  // the embedding or head: already the flat (on one rank, the shard itself)
  }
  at::Tensor flat = at::empty({layout.bound.padded_numel}, gathered.options().dtype(dtype));
  if (layout.shard_blocks() > 0) {
    const at::Tensor absmax = gathered_absmax(unit, rows);
    bool done = false;
#if ST_HAVE_CUDA
    done = kernel && dequantize_codes_on_gpu(layout, rows, absmax, flat);
#endif
    if (!done) dequantize_codes_reference(layout, rows, absmax, flat);
  }
  if (dense_bytes > 0) {
    const at::Tensor dense = rows.narrow(1, layout.dense_begin, dense_bytes).contiguous().view(layout.compute_dtype);
    flat.narrow(0, layout.blocks.padded_numel, layout.dense.padded_numel).copy_(dense.reshape({-1}));
  }
  return flat;
}

}  // namespace

int64_t QuantizedUnitLayout::shard_blocks() const { return blocks.shard_numel / kNf4BlockSize; }
int64_t QuantizedUnitLayout::total_blocks() const { return blocks.padded_numel / kNf4BlockSize; }
int64_t QuantizedUnitLayout::dense_bytes() const {
  return dense.shard_numel * static_cast<int64_t>(c10::elementSize(compute_dtype));
}

void write_dense_section(const QuantizedUnitLayout& layout, at::Tensor& shard, const at::Tensor& dense_values) {
  if (layout.dense_bytes() == 0) return;
  shard.narrow(0, layout.dense_begin, layout.dense_bytes()).view(layout.compute_dtype).copy_(dense_values);
}

QuantizedUnitLayout build_quantized_unit_layout(const UnitLayout& unit, int group_size, bool double_quant,
                                                at::ScalarType compute_dtype) {
  if (group_size < 1) throw ConfigError("shard group size must be >= 1");
  QuantizedUnitLayout q;
  q.blocks.name = q.dense.name = q.bound.name = unit.name;
  q.double_quant = double_quant;
  q.compute_dtype = compute_dtype;
  for (const ParamSlot& slot : unit.params) {
    UnitLayout& part = is_projection_weight(slot.spec.key) ? q.blocks : q.dense;
    part.params.push_back({slot.spec, part.numel});
    part.numel += &part == &q.blocks ? round_up(slot.spec.numel(), kNf4BlockSize) : slot.spec.numel();
  }
  pad_for_group(q.blocks, group_size, kNf4BlockSize);
  pad_for_group(q.dense, group_size, 16);  // whole 16-byte rows: an embedding's shard is its flat as is
  q.bound.params = q.blocks.params;
  for (ParamSlot slot : q.dense.params) {
    slot.offset += q.blocks.padded_numel;
    q.bound.params.push_back(slot);
  }
  q.bound.numel = q.blocks.padded_numel + q.dense.numel;
  q.bound.padded_numel = q.blocks.padded_numel + q.dense.padded_numel;
  q.bound.shard_numel = q.bound.padded_numel / group_size;
  const int64_t blocks = q.shard_blocks();
  q.absmax_begin = round_up(blocks * kNf4BlockSize / 2, 16);
  q.dense_begin = round_up(q.absmax_begin + blocks * (double_quant ? 1 : 4), 16);
  q.shard_bytes = std::max<int64_t>(16, round_up(q.dense_begin + q.dense_bytes(), 16));
  return q;
}

DoubleQuantized double_quantize(const QuantizedUnitLayout& layout, const at::Tensor& absmax) {
  const at::Tensor values = absmax.to(at::kCPU, at::kFloat).contiguous();
  if (values.numel() != layout.total_blocks()) throw ModelError("nf4: one absmax per block of the unit expected");
  DoubleQuantized out;
  out.codes = at::zeros({layout.total_blocks()}, at::kByte);
  std::vector<at::Tensor> nested;
  for (const ParamSlot& slot : layout.blocks.params) {
    const int64_t first = slot.offset / kNf4BlockSize, count = nf4_blocks(slot.spec.numel());
    const at::Tensor part = values.narrow(0, first, count);
    // A sequential double sum: every rank (whatever its CPU's vector width) gets the same offset.
    const float* data = part.data_ptr<float>();
    double sum = 0.0;
    for (int64_t i = 0; i < count; ++i) sum += data[i];
    const auto offset = static_cast<float>(sum / static_cast<double>(count));
    const QuantizedAbsmax quantized = quantize_absmax(part, offset);
    out.codes.narrow(0, first, count).copy_(quantized.codes);
    nested.push_back(quantized.absmax);
    out.statistics.offsets.push_back(offset);
  }
  out.statistics.nested_absmax = nested.empty() ? at::empty({0}, at::kFloat) : at::cat(nested);
  return out;
}

at::Tensor quantize_unit_shard(const QuantizedUnitLayout& layout, const at::Tensor& block_values,
                               const at::Tensor& dense_values, Communicator& group, AbsmaxStatistics& statistics) {
  if (block_values.numel() != layout.blocks.shard_numel || dense_values.numel() != layout.dense.shard_numel) {
    throw ModelError("nf4: unit " + layout.blocks.name + " shard sizes differ from its quantized layout");
  }
  const int64_t blocks = layout.shard_blocks();
  at::Tensor shard = at::zeros({layout.shard_bytes}, block_values.options().dtype(at::kByte));
  statistics = {{}, at::empty({0}, block_values.options().dtype(at::kFloat))};
  if (blocks > 0) {
    const Nf4Tensor nf4 = nf4_quantize(block_values);
    shard.narrow(0, 0, nf4.codes.numel()).copy_(nf4.codes);
    if (!layout.double_quant) {
      shard.narrow(0, layout.absmax_begin, blocks * 4).view(at::kFloat).copy_(nf4.absmax);
    } else {
      at::Tensor whole = at::empty({layout.total_blocks()}, nf4.absmax.options());
      group.all_gather_into_async(whole, nf4.absmax).wait();
      DoubleQuantized quantized = double_quantize(layout, whole);
      shard.narrow(0, layout.absmax_begin, blocks).copy_(quantized.codes.narrow(0, group.rank() * blocks, blocks));
      statistics = std::move(quantized.statistics);
      statistics.nested_absmax = statistics.nested_absmax.to(block_values.device());
    }
  }
  write_dense_section(layout, shard, dense_values);
  return shard;
}

int64_t dequantize_workspace_bytes() {
  // Per element of a chunk: int64 code bytes and codes, fp32 values, scales and product.
  return kDequantizeChunk * (8 + 8 + 4 + 4 + 4);
}

at::Tensor dequantize_unit(const QuantizedUnit& unit, const at::Tensor& gathered, at::ScalarType dtype) {
  return dequantize(unit, gathered, dtype, /*kernel=*/true);
}

at::Tensor dequantize_unit_reference(const QuantizedUnit& unit, const at::Tensor& gathered, at::ScalarType dtype) {
  return dequantize(unit, gathered, dtype, /*kernel=*/false);
}

}  // namespace st
