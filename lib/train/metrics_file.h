// metrics.jsonl: one JSON record per line, flushed as written, so the file of a crashed or
// still-running job is readable (by `shardtune plot`, jq, pandas).
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace st {

class MetricsFile {
 public:
  // Truncates, or appends (a resumed run); throws IoError.
  explicit MetricsFile(const std::string& path, bool append = false);
  void write(const nlohmann::ordered_json& record);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace st
