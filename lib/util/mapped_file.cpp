#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "util/errors.h"

namespace st {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat info {};
  if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd);
    throw IoError(path + ": not a regular file");
  }
  size_ = static_cast<size_t>(info.st_size);
  if (size_ > 0) {
    void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      throw IoError(path + ": mmap failed (" + std::strerror(error) + ")");
    }
    data_ = static_cast<const uint8_t*>(mapped);
  }
  ::close(fd);  // the mapping keeps the file alive
}

void MappedFile::release(size_t offset, size_t length) const {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t begin = (offset + page - 1) / page * page;
  const size_t end = std::min(offset + length, size_) / page * page;
  if (data_ == nullptr || end <= begin) return;
  ::madvise(const_cast<uint8_t*>(data_) + begin, end - begin, MADV_DONTNEED);  // advisory only
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace st
