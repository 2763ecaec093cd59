#include "util/file_io.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#include "util/errors.h"

namespace st {
namespace {

class ReadOnlyFd {
 public:
  ReadOnlyFd(const std::string& path, int flags) : fd_(::open(path.c_str(), flags | O_CLOEXEC)) {
    if (fd_ < 0) throw IoError(path + ": cannot open (" + std::strerror(errno) + ")");
  }
  ~ReadOnlyFd() { ::close(fd_); }
  ReadOnlyFd(const ReadOnlyFd&) = delete;
  ReadOnlyFd& operator=(const ReadOnlyFd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

void sync_fd(const std::string& path, int flags) {
  const ReadOnlyFd fd(path, flags);
  if (::fsync(fd.get()) != 0) throw IoError(path + ": fsync failed (" + std::strerror(errno) + ")");
}

}  // namespace

uint32_t file_crc32(const std::string& path) {
  const ReadOnlyFd fd(path, O_RDONLY);
  std::vector<unsigned char> buffer(8 << 20);
  uLong crc = crc32(0L, Z_NULL, 0);
  for (;;) {
    const ssize_t got = ::read(fd.get(), buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw IoError(path + ": read failed while checksumming (" + std::strerror(errno) + ")");
    if (got == 0) break;
    crc = crc32(crc, buffer.data(), static_cast<uInt>(got));
  }
  return static_cast<uint32_t>(crc);
}

void sync_file(const std::string& path) { sync_fd(path, O_RDONLY); }

void sync_directory(const std::string& path) { sync_fd(path, O_RDONLY | O_DIRECTORY); }

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError(temporary + ": cannot create (" + std::strerror(errno) + ")");
    size_t written = 0;
    while (written < text.size()) {
      const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        const std::string reason = std::strerror(errno);
        ::close(fd);
        std::remove(temporary.c_str());
        throw IoError(temporary + ": write failed (" + reason + ")");
      }
      written += static_cast<size_t>(n);
    }
    const bool synced = ::fsync(fd) == 0;
    ::close(fd);
    if (!synced) throw IoError(temporary + ": fsync failed (" + std::strerror(errno) + ")");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw IoError(path + ": cannot rename " + temporary + " into place (" + std::strerror(errno) + ")");
  }
}

}  // namespace st
