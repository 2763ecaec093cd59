#include "train/metrics_file.h"

#include "util/errors.h"

namespace st {

MetricsFile::MetricsFile(const std::string& path, bool append)
    : path_(path), out_(path, append ? std::ios::app : std::ios::trunc) {
  if (!out_) throw IoError(path + ": cannot create the metrics file (does train.output_dir exist and is it writable?)");
}

void MetricsFile::write(const nlohmann::ordered_json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
  if (!out_) throw IoError(path_ + ": write failed (disk full?)");
}

}  // namespace st
