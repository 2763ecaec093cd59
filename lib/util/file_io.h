// Durable file operations shared by the dataset, checkpoint and export writers: CRC-32 of a
// file, fsync of a file or a directory (so a rename survives a crash), and whole-file writes
// that appear atomically. Errors throw IoError naming the path.
#pragma once

#include <cstdint>
#include <string>

namespace st {

// The zlib CRC-32 of the whole file (ranges of large files in parallel). Throws IoError naming it.
uint32_t file_crc32(const std::string& path);
void sync_file(const std::string& path);
void sync_directory(const std::string& path);
// Writes `text` to path.tmp, fsyncs it and renames it over `path`.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace st
