// TensorBoard event files (TFEvents) of a run: every number of each metrics record as a scalar at
// the record's step, and text such as the resolved config. Rank 0 writes them under
// <output_dir>/tensorboard; a resumed run first cuts the earlier files back to its checkpoint's
// step and then appends a file of its own, so each (tag, step) is in the logdir once. Messages
// are tensorboard_event.proto (protobuf); each record is framed as TensorFlow's: length, masked
// CRC-32C of the length, the event, masked CRC-32C of the event.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace st {

// The events of one file, each serialised; a record cut short or failing its CRC ends the list
// (the tail of a crashed writer). Throws IoError when the file cannot be read.
std::vector<std::string> read_event_records(const std::string& path);
// The masked CRC-32C TFEvents frames with (TensorFlow's crc32c::Mask).
uint32_t masked_crc32c(const std::string& bytes);

class TensorboardWriter {
 public:
  // Creates `directory`. `first_step` 0 starts the run's logdir afresh (earlier event files are
  // removed, as metrics.jsonl is truncated); a resume keeps what the earlier files hold up to
  // `first_step` and drops what they logged after it. Throws IoError naming the file.
  TensorboardWriter(const std::string& directory, int64_t first_step);
  ~TensorboardWriter();

  // Every number of `record` (nested objects as "a/b") at record["step"]; records without one
  // are skipped.
  void add_record(const nlohmann::ordered_json& record);
  // `text` for TensorBoard's text dashboard under `tag` at `step`, as written: each line is
  // indented by four spaces, which Markdown shows as a code block.
  void add_text(const std::string& tag, const std::string& text, int64_t step);
  const std::string& path() const { return path_; }

 private:
  void write(const std::string& event);

  std::string path_;
  std::ofstream out_;
};

}  // namespace st
