// A pair shard's validation (attributes; offsets against token counts, num_pairs, the loss mask
// and reference log-probs) and reads, on a small HDF5 file the input describes: a flags byte,
// then attributes, then per dataset a length and values. Fuzzing HDF5's own byte format would
// test libhdf5; this tests what shardtune checks of a well-formed file.
#include <hdf5.h>

#include <algorithm>

#include "data/pair_shard.h"
#include "fuzz_target.h"
#include "util/check.h"
#include "util/hdf5_io.h"

namespace {

class Bytes {
 public:
  Bytes(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  uint64_t take(int bytes) {  // little-endian; zeros past the end
    uint64_t value = 0;
    for (int i = 0; i < bytes; ++i) value |= uint64_t(next()) << (8 * i);
    return value;
  }
  uint8_t next() { return used_ < size_ ? data_[used_++] : 0; }

 private:
  const uint8_t* data_;
  size_t size_, used_ = 0;
};

// A dataset of `length` elements of which the first `values` are written: where `length` is
// another number, its extent says more (or less) than it stores (chunked, unwritten past the values).
template <typename T>
void write_dataset(hid_t file, const std::string& name, hid_t type, const std::vector<T>& values, uint64_t length,
                   bool compress) {
  if (length == values.size()) return st::write_1d_dataset(file, name, values, st::DatasetLayout{compress, 16});
  const hsize_t extent = length;
  const hsize_t chunk = 16;
  const hsize_t unlimited = H5S_UNLIMITED;  // so a chunk may exceed a small extent
  const st::Hdf5Handle space = st::hdf5_space(ST_CHECK_HDF5(H5Screate_simple(1, &extent, &unlimited)));
  const st::Hdf5Handle create = st::hdf5_plist(ST_CHECK_HDF5(H5Pcreate(H5P_DATASET_CREATE)));
  ST_CHECK_HDF5(H5Pset_chunk(create.get(), 1, &chunk));
  const st::Hdf5Handle dataset = st::hdf5_dataset(ST_CHECK_HDF5(
      H5Dcreate2(file, name.c_str(), type, space.get(), H5P_DEFAULT, create.get(), H5P_DEFAULT)));
  if (values.empty()) return;
  const hsize_t start = 0, count = std::min<hsize_t>(values.size(), extent);
  const st::Hdf5Handle memory = st::hdf5_space(ST_CHECK_HDF5(H5Screate_simple(1, &count, nullptr)));
  ST_CHECK_HDF5(H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, &start, nullptr, &count, nullptr));
  ST_CHECK_HDF5(H5Dwrite(dataset.get(), type, memory.get(), space.get(), H5P_DEFAULT, values.data()));
}

void write_shard(const std::string& path, Bytes& in) {
  const uint8_t flags = in.next();
  const bool sft = flags & 1, compress = flags & 2, declared = flags & 4, mask = flags & 8, refs = flags & 16;
  const st::Hdf5Handle file = st::create_hdf5_file(path);
  const hid_t root = file.get();
  st::write_attribute(root, "format", std::string(flags & 32 ? "other" : st::kPairFormatName));
  st::write_attribute(root, "format_version", int64_t(in.next() % 4));
  st::write_attribute(root, "kind", std::string(sft ? "sft" : "dpo"));
  const auto small_or_any = [&] { return in.next() < 200 ? int64_t(in.next() % 8) : int64_t(in.take(8)); };
  st::write_attribute(root, "vocab_size", small_or_any());
  st::write_attribute(root, "max_token_id", small_or_any());
  const int64_t pairs = small_or_any();
  st::write_attribute(root, "num_pairs", pairs);
  // The length a dataset claims: what it holds, or (declared) anything.
  const auto length_of = [&](size_t held) { return declared && (in.next() & 1) ? in.take(8) % (uint64_t(1) << 40) : held; };
  for (const std::string& name : st::shard_columns(sft ? st::PairKind::sft : st::PairKind::dpo)) {
    std::vector<int32_t> tokens(in.next() % 32);
    for (auto& token : tokens) token = int32_t(in.take(1)) - 8;
    std::vector<uint64_t> offsets(in.next() % 10);
    for (auto& offset : offsets) offset = in.next() < 240 ? in.next() % 33 : in.take(8);
    write_dataset(root, name, H5T_NATIVE_INT32, tokens, length_of(tokens.size()), compress);
    write_dataset(root, name + "_offsets", H5T_NATIVE_UINT64, offsets, length_of(offsets.size()), compress);
  }
  if (mask) {
    std::vector<uint8_t> values(in.next() % 32, 1);
    write_dataset(root, st::kLossMaskDataset, H5T_NATIVE_UINT8, values, length_of(values.size()), compress);
  }
  if (refs) {
    for (const char* name : {"ref_chosen_logp", "ref_rejected_logp"}) {
      std::vector<float> values(in.next() % 10, -1.5f);
      write_dataset(root, name, H5T_NATIVE_FLOAT, values, length_of(values.size()), compress);
    }
  }
}

}  // namespace

ST_FUZZ_TARGET(pair_shard) {
  static const bool silenced = (st::silence_hdf5_error_printing(), true);
  (void)silenced;
  const std::string path = st::fuzz::scratch_directory() + "/fuzz.h5";
  Bytes in(data, size);
  write_shard(path, in);
  return st::fuzz::refusal([&] {
    const st::PairShardReader reader(path);
    for (size_t i = 0; i < reader.size(); ++i) (void)reader.row_length(i);
    (void)reader.read_all();
  });
}
