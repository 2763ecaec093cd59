// A read-only memory map of a whole file (RAII). Pages are read on first touch, so reading a
// slice of a large checkpoint costs only that slice.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace st {

class MappedFile {
 public:
  // Throws IoError naming the path when it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Drops the whole pages inside [offset, offset + length) from this process's memory (they
  // stay in the page cache and fault back in if read again): a loader that copied a range out
  // need not keep it resident.
  void release(size_t offset, size_t length) const;

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace st
