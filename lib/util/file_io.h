// Durable file operations shared by the dataset, checkpoint and export writers: CRC-32 of a
// file, fsync of a file or a directory (so a rename survives a crash), whole-file writes that
// appear atomically, and positioned writes. Errors throw IoError naming the path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace st {

// The zlib CRC-32 of the whole file (ranges of large files in parallel). Throws IoError naming it.
uint32_t file_crc32(const std::string& path);
// The CRC-32 of the file's first and last `bytes_each_end` bytes (all of a smaller file): a cheap
// fingerprint of multi-GB weight files, whose header and first and last tensors it covers.
uint32_t file_ends_crc32(const std::string& path, uint64_t bytes_each_end);
// A CRC-32 as manifests and messages write it: 8 lowercase hex digits.
std::string crc32_hex(uint32_t crc);
// The inverse, for manifests read back: 1 to 8 hex digits, nothing else; nullopt otherwise.
std::optional<uint32_t> parse_crc32_hex(const std::string& text);
// Whether a manifest's file entry names a file inside its own directory: not empty, no '/', not
// "." or "..". A manifest from elsewhere must not make a reader open files outside it.
bool is_plain_file_name(const std::string& name);
void sync_file(const std::string& path);
void sync_directory(const std::string& path);
// Writes `text` to path.tmp, fsyncs it and renames it over `path`.
void write_file_atomically(const std::string& path, const std::string& text);
// A directory written whole at `complete` takes the place of `target` (any earlier one moved to
// target.old first, removed after), both directories fsynced: readers see the old or the new.
void replace_directory(const std::string& complete, const std::string& target);

// A file open for writing (open(2) flags, mode 0644), closed on destruction.
class WritableFile {
 public:
  WritableFile(const std::string& path, int flags);
  ~WritableFile();
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  void pwrite_all(const void* data, size_t size, uint64_t offset);  // retries short writes
  void resize(uint64_t size);
  void sync();

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace st
