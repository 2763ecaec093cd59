#include "util/hdf5_io.h"

#include <cstring>

#include "util/check.h"
#include "util/errors.h"

namespace st {
namespace {

template <typename T>
hid_t native_type();
template <>
hid_t native_type<int32_t>() { return H5T_NATIVE_INT32; }
template <>
hid_t native_type<uint64_t>() { return H5T_NATIVE_UINT64; }
template <>
hid_t native_type<float>() { return H5T_NATIVE_FLOAT; }
template <>
hid_t native_type<uint8_t>() { return H5T_NATIVE_UINT8; }

}  // namespace

Hdf5Handle create_hdf5_file(const std::string& path) {
  silence_hdf5_error_printing();
  // Checked here rather than by ST_CHECK_HDF5: the message names the file.
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) throw IoError(path + ": cannot create HDF5 file (" + hdf5_error_stack() + ")");
  return hdf5_file(file);
}

Hdf5Handle open_hdf5_file(const std::string& path) {
  silence_hdf5_error_printing();
  // Checked here rather than by ST_CHECK_HDF5: the message names the file and the likely causes.
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (file < 0) {
    throw IoError(path + ": cannot open as HDF5 (missing, unreadable or not HDF5; " +
                  hdf5_error_stack() + ")");
  }
  return hdf5_file(file);
}

void write_attribute(hid_t object, const std::string& name, int64_t value) {
  const Hdf5Handle space = hdf5_space(ST_CHECK_HDF5(H5Screate(H5S_SCALAR)));
  const Hdf5Handle attribute = hdf5_attribute(ST_CHECK_HDF5(
      H5Acreate2(object, name.c_str(), H5T_NATIVE_INT64, space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  ST_CHECK_HDF5(H5Awrite(attribute.get(), H5T_NATIVE_INT64, &value));
}

void write_attribute(hid_t object, const std::string& name, const std::string& value) {
  const Hdf5Handle type = hdf5_type(ST_CHECK_HDF5(H5Tcopy(H5T_C_S1)));
  ST_CHECK_HDF5(H5Tset_size(type.get(), std::max<size_t>(1, value.size())));
  const Hdf5Handle space = hdf5_space(ST_CHECK_HDF5(H5Screate(H5S_SCALAR)));
  const Hdf5Handle attribute = hdf5_attribute(ST_CHECK_HDF5(
      H5Acreate2(object, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT)));
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  ST_CHECK_HDF5(H5Awrite(attribute.get(), type.get(), padded.data()));
}

std::optional<int64_t> read_int_attribute(hid_t object, const std::string& name) {
  if (ST_CHECK_HDF5(H5Aexists(object, name.c_str())) == 0) return std::nullopt;
  const Hdf5Handle attribute = hdf5_attribute(ST_CHECK_HDF5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  const Hdf5Handle type = hdf5_type(ST_CHECK_HDF5(H5Aget_type(attribute.get())));
  if (ST_CHECK_HDF5(H5Tget_class(type.get())) != H5T_INTEGER) return std::nullopt;
  int64_t value = 0;
  ST_CHECK_HDF5(H5Aread(attribute.get(), H5T_NATIVE_INT64, &value));
  return value;
}

std::optional<std::string> read_string_attribute(hid_t object, const std::string& name) {
  if (ST_CHECK_HDF5(H5Aexists(object, name.c_str())) == 0) return std::nullopt;
  const Hdf5Handle attribute = hdf5_attribute(ST_CHECK_HDF5(H5Aopen(object, name.c_str(), H5P_DEFAULT)));
  const Hdf5Handle type = hdf5_type(ST_CHECK_HDF5(H5Aget_type(attribute.get())));
  if (ST_CHECK_HDF5(H5Tget_class(type.get())) != H5T_STRING || ST_CHECK_HDF5(H5Tis_variable_str(type.get())) > 0) return std::nullopt;
  std::string value(H5Tget_size(type.get()), '\0');
  ST_CHECK_HDF5(H5Aread(attribute.get(), type.get(), value.data()));
  value.resize(std::strlen(value.c_str()));
  return value;
}

template <typename T>
void write_1d_dataset(hid_t file, const std::string& name, const T* values, uint64_t count,
                      const DatasetLayout& layout) {
  const hsize_t length = count;
  const Hdf5Handle space = hdf5_space(ST_CHECK_HDF5(H5Screate_simple(1, &length, nullptr)));
  const Hdf5Handle properties = hdf5_plist(ST_CHECK_HDF5(H5Pcreate(H5P_DATASET_CREATE)));
  if (layout.compress && length > 0) {
    const hsize_t chunk = std::min<hsize_t>(length, layout.chunk_elements);
    ST_CHECK_HDF5(H5Pset_chunk(properties.get(), 1, &chunk));
    ST_CHECK_HDF5(H5Pset_shuffle(properties.get()));
    ST_CHECK_HDF5(H5Pset_deflate(properties.get(), 4));
  }
  const Hdf5Handle dataset = hdf5_dataset(ST_CHECK_HDF5(H5Dcreate2(
      file, name.c_str(), native_type<T>(), space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT)));
  if (length > 0) {
    ST_CHECK_HDF5(H5Dwrite(dataset.get(), native_type<T>(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values));
  }
}

std::optional<DatasetShape> inspect_1d_dataset(hid_t file, const std::string& name, hid_t type) {
  if (ST_CHECK_HDF5(H5Lexists(file, name.c_str(), H5P_DEFAULT)) == 0) return std::nullopt;
  const Hdf5Handle dataset = hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(file, name.c_str(), H5P_DEFAULT)));
  const Hdf5Handle space = hdf5_space(ST_CHECK_HDF5(H5Dget_space(dataset.get())));
  const Hdf5Handle stored = hdf5_type(ST_CHECK_HDF5(H5Dget_type(dataset.get())));
  DatasetShape shape;
  if (ST_CHECK_HDF5(H5Sget_simple_extent_ndims(space.get())) == 1) {
    hsize_t length = 0;
    ST_CHECK_HDF5(H5Sget_simple_extent_dims(space.get(), &length, nullptr));
    shape.length = length;
    shape.matches_type = ST_CHECK_HDF5(H5Tequal(stored.get(), type)) > 0;
  }
  shape.stored_bytes = H5Dget_storage_size(dataset.get());
  return shape;
}

bool DatasetShape::storage_holds(uint64_t element_bytes) const {
  constexpr uint64_t kMaxInflation = 1100, kSlackBytes = 64 << 10;
  const uint64_t limit = stored_bytes > (UINT64_MAX - kSlackBytes) / kMaxInflation ? UINT64_MAX
                                                                                   : stored_bytes * kMaxInflation + kSlackBytes;
  return length <= limit / element_bytes;
}

Hdf5Handle open_dataset_for_reads(hid_t file, const std::string& name, size_t cache_bytes) {
  const Hdf5Handle access = hdf5_plist(ST_CHECK_HDF5(H5Pcreate(H5P_DATASET_ACCESS)));
  ST_CHECK_HDF5(H5Pset_chunk_cache(access.get(), 12421, cache_bytes, 1.0));
  return hdf5_dataset(ST_CHECK_HDF5(H5Dopen2(file, name.c_str(), access.get())));
}

template <typename T>
void read_1d_dataset_into(hid_t dataset, uint64_t first, uint64_t count, T* out) {
  if (count == 0) return;
  const Hdf5Handle file_space = hdf5_space(ST_CHECK_HDF5(H5Dget_space(dataset)));
  const hsize_t start = first;
  const hsize_t size = count;
  ST_CHECK_HDF5(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, &start, nullptr, &size, nullptr));
  const Hdf5Handle memory_space = hdf5_space(ST_CHECK_HDF5(H5Screate_simple(1, &size, nullptr)));
  ST_CHECK_HDF5(H5Dread(dataset, native_type<T>(), memory_space.get(), file_space.get(),
                        H5P_DEFAULT, out));
}

template <typename T>
std::vector<T> read_1d_dataset(hid_t dataset, uint64_t first, uint64_t count) {
  std::vector<T> out;
  read_1d_dataset_into(dataset, first, count, out);
  return out;
}

template void write_1d_dataset<int32_t>(hid_t, const std::string&, const int32_t*, uint64_t, const DatasetLayout&);
template void write_1d_dataset<uint64_t>(hid_t, const std::string&, const uint64_t*, uint64_t, const DatasetLayout&);
template void write_1d_dataset<float>(hid_t, const std::string&, const float*, uint64_t, const DatasetLayout&);
template void write_1d_dataset<uint8_t>(hid_t, const std::string&, const uint8_t*, uint64_t, const DatasetLayout&);
template void read_1d_dataset_into<int32_t>(hid_t, uint64_t, uint64_t, int32_t*);
template void read_1d_dataset_into<uint64_t>(hid_t, uint64_t, uint64_t, uint64_t*);
template void read_1d_dataset_into<float>(hid_t, uint64_t, uint64_t, float*);
template void read_1d_dataset_into<uint8_t>(hid_t, uint64_t, uint64_t, uint8_t*);
template std::vector<int32_t> read_1d_dataset<int32_t>(hid_t, uint64_t, uint64_t);
template std::vector<uint64_t> read_1d_dataset<uint64_t>(hid_t, uint64_t, uint64_t);
template std::vector<float> read_1d_dataset<float>(hid_t, uint64_t, uint64_t);
template std::vector<uint8_t> read_1d_dataset<uint8_t>(hid_t, uint64_t, uint64_t);

}  // namespace st
