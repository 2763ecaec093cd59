// Small typed helpers over the HDF5 C API for what shardtune stores: scalar attributes (int64,
// string) on a file's root group and 1-D datasets of int32 / uint64 / float32 / uint8.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "util/hdf5_handle.h"

namespace st {

// Files: created (truncating) or opened read-only. Throw IoError naming the path.
Hdf5Handle create_hdf5_file(const std::string& path);
Hdf5Handle open_hdf5_file(const std::string& path);

void write_attribute(hid_t object, const std::string& name, int64_t value);
void write_attribute(hid_t object, const std::string& name, const std::string& value);
std::optional<int64_t> read_int_attribute(hid_t object, const std::string& name);
std::optional<std::string> read_string_attribute(hid_t object, const std::string& name);

struct DatasetLayout {
  bool compress = false;        // deflate level 4 with byte shuffle; implies chunked
  uint64_t chunk_elements = 1 << 14;  // 64 KiB of int32: small, since a random read
                                      // decompresses its whole chunk
};

// One 1-D dataset; contiguous when uncompressed (any slice reads directly), chunked otherwise.
template <typename T>
void write_1d_dataset(hid_t file, const std::string& name, const T* values, uint64_t count,
                      const DatasetLayout& layout);
template <typename T>
void write_1d_dataset(hid_t file, const std::string& name, const std::vector<T>& values,
                      const DatasetLayout& layout) {
  write_1d_dataset(file, name, values.data(), values.size(), layout);
}

// nullopt when absent; throws IoError when present with another element type.
struct DatasetShape {
  uint64_t length = 0;
  bool matches_type = false;
  uint64_t stored_bytes = 0;  // allocated in the file (compressed size; 0 when never written)
  // Whether `length` elements of `element_bytes` can come from what is stored: at most deflate's
  // ratio (~1032:1) over the stored bytes, plus 64 KiB. A dataset's extent is only a number in
  // its header, so a reader checks this before allocating for a whole dataset or a slice.
  bool storage_holds(uint64_t element_bytes) const;
};
std::optional<DatasetShape> inspect_1d_dataset(hid_t file, const std::string& name, hid_t type);

// Opens a dataset for random reads; compressed (chunked) ones get a chunk cache of
// `cache_bytes` so repeated reads in a chunk decompress it once.
Hdf5Handle open_dataset_for_reads(hid_t file, const std::string& name, size_t cache_bytes);

template <typename T>
std::vector<T> read_1d_dataset(hid_t dataset, uint64_t first, uint64_t count);
// Reads [first, first + count) into `out` (count elements).
template <typename T>
void read_1d_dataset_into(hid_t dataset, uint64_t first, uint64_t count, T* out);
// The same into `out` (resized), reusing the caller's buffer.
template <typename T>
void read_1d_dataset_into(hid_t dataset, uint64_t first, uint64_t count, std::vector<T>& out) {
  out.resize(count);
  read_1d_dataset_into(dataset, first, count, out.data());
}

}  // namespace st
