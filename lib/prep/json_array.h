// The elements of a top-level JSON array, located without parsing them: `prep` reads a
// `[{...}, {...}]` file as records, each parsed (and numbered by its line) on its own, as JSONL
// lines are.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace st {

struct TextRecord {
  uint64_t line = 0;  // 1-based line of the record's first character
  std::string text;
};

// Whether the stream's first non-blank character opens an array (reads up to it).
bool starts_json_array(std::istream& in);

// Throws DataError naming `path` and the line when the array is not closed or its elements are
// not separated by commas.
std::vector<TextRecord> json_array_records(const std::string& text, const std::string& path);

}  // namespace st
