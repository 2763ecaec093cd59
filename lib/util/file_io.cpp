#include "util/file_io.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <utility>
#include <thread>
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

int usable_cores() {
  cpu_set_t cores;
  constexpr int kAtMost = 4;  // beyond that the storage, not the checksum, is the limit
  if (sched_getaffinity(0, sizeof(cores), &cores) != 0) return 1;
  return std::min(kAtMost, std::max(1, CPU_COUNT(&cores)));
}

// Adds bytes [begin, end) of `fd` to `crc` through `buffer`; returns why a read failed ("" when
// none): a text, not an exception, so worker threads can hand it back.
std::string add_range_crc32(int fd, uint64_t begin, uint64_t end, std::vector<unsigned char>& buffer, uLong& crc) {
  for (uint64_t at = begin; at < end;) {
    const ssize_t got = ::pread(fd, buffer.data(), std::min<uint64_t>(buffer.size(), end - at), static_cast<off_t>(at));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return got < 0 ? std::strerror(errno) : "file shrank";
    crc = crc32(crc, buffer.data(), static_cast<uInt>(got));
    at += static_cast<uint64_t>(got);
  }
  return "";
}

}  // namespace

std::string crc32_hex(uint32_t crc) {
  char text[16];
  std::snprintf(text, sizeof(text), "%08x", crc);
  return text;
}

std::optional<uint32_t> parse_crc32_hex(const std::string& text) {
  if (text.empty() || text.size() > 8 || text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(std::stoul(text, nullptr, 16));
}

bool is_plain_file_name(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos &&
         name.find('\0') == std::string::npos;
}

uint32_t file_ends_crc32(const std::string& path, uint64_t bytes_each_end) {
  const ReadOnlyFd fd(path, O_RDONLY);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw IoError(path + ": cannot stat (" + std::strerror(errno) + ")");
  const auto size = static_cast<uint64_t>(info.st_size);
  const uint64_t head = std::min(size, bytes_each_end);
  const uint64_t tail_start = std::max(head, size > bytes_each_end ? size - bytes_each_end : 0);
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buffer(1 << 20);
  for (const auto& [begin, end] : {std::pair<uint64_t, uint64_t>{0, head}, {tail_start, size}}) {
    const std::string error = add_range_crc32(fd.get(), begin, end, buffer, crc);
    if (!error.empty()) throw IoError(path + ": read failed (" + error + ")");
  }
  return static_cast<uint32_t>(crc);
}

uint32_t file_crc32(const std::string& path) {
  const ReadOnlyFd fd(path, O_RDONLY);
  struct stat info {};
  if (::fstat(fd.get(), &info) != 0) throw IoError(path + ": cannot stat (" + std::strerror(errno) + ")");
  const auto size = static_cast<uint64_t>(info.st_size);
  // zlib's CRC-32 runs at about one disk's bandwidth per core, so large files are checksummed in
  // parallel ranges (on the cores this process may use), joined with crc32_combine.
  constexpr uint64_t kBlock = 8 << 20, kPerThreadAtLeast = 64 << 20;
  const int threads = static_cast<int>(std::clamp<uint64_t>(size / kPerThreadAtLeast, 1, usable_cores()));
  const uint64_t range = (size / kBlock + threads) / threads * kBlock;
  std::vector<uLong> crcs(threads);
  std::vector<std::string> errors(threads);
  const auto checksum_range = [&](int part) {
    std::vector<unsigned char> buffer(kBlock);
    uLong crc = crc32(0L, Z_NULL, 0);
    errors[part] = add_range_crc32(fd.get(), std::min(size, part * range), std::min(size, (part + 1) * range), buffer, crc);
    crcs[part] = crc;
  };
  std::vector<std::thread> workers;
  for (int part = 1; part < threads; ++part) workers.emplace_back(checksum_range, part);
  checksum_range(0);
  for (std::thread& worker : workers) worker.join();
  uLong crc = crcs[0];
  for (int part = 0; part < threads; ++part) {
    if (!errors[part].empty()) throw IoError(path + ": read failed while checksumming (" + errors[part] + ")");
    if (part > 0) {
      const uint64_t length = std::min(size, (part + 1) * range) - std::min(size, part * range);
      crc = crc32_combine(crc, crcs[part], static_cast<z_off_t>(length));
    }
  }
  return static_cast<uint32_t>(crc);
}

void sync_file(const std::string& path) { sync_fd(path, O_RDONLY); }

void sync_directory(const std::string& path) { sync_fd(path, O_RDONLY | O_DIRECTORY); }

void replace_directory(const std::string& complete, const std::string& target) {
  namespace fs = std::filesystem;
  sync_directory(complete);
  const fs::path previous = target + ".old";
  fs::remove_all(previous);
  if (fs::exists(target)) fs::rename(target, previous);
  fs::rename(complete, target);
  fs::remove_all(previous);
  const fs::path parent = fs::path(target).parent_path();
  sync_directory(parent.empty() ? "." : parent.string());
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  try {
    WritableFile file(temporary, O_WRONLY | O_CREAT | O_TRUNC);
    file.pwrite_all(text.data(), text.size(), 0);
    file.sync();
  } catch (const IoError&) {
    std::remove(temporary.c_str());
    throw;
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    throw IoError(path + ": cannot rename " + temporary + " into place (" + std::strerror(errno) + ")");
  }
}

WritableFile::WritableFile(const std::string& path, int flags) : path_(path) {
  fd_ = ::open(path.c_str(), flags | O_CLOEXEC, 0644);
  if (fd_ < 0) throw IoError(path + ": cannot open for writing (" + std::strerror(errno) + ")");
}

WritableFile::~WritableFile() { ::close(fd_); }

void WritableFile::pwrite_all(const void* data, size_t size, uint64_t offset) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  while (size > 0) {
    const ssize_t written = ::pwrite(fd_, bytes, size, static_cast<off_t>(offset));
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) throw IoError(path_ + ": write failed (" + std::strerror(errno) + ")");
    bytes += written;
    size -= static_cast<size_t>(written);
    offset += static_cast<uint64_t>(written);
  }
}

void WritableFile::resize(uint64_t size) {
  if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
    throw IoError(path_ + ": cannot size to " + std::to_string(size) + " bytes (" + std::strerror(errno) + ")");
  }
}

void WritableFile::sync() {
  if (::fsync(fd_) != 0) throw IoError(path_ + ": fsync failed (" + std::strerror(errno) + ")");
}

}  // namespace st
