#include "train/tensorboard_writer.h"

#include <unistd.h>

#include <boost/crc.hpp>
#include <chrono>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>

#include "train/tensorboard_event.pb.h"  // generated (lib/CMakeLists.txt)
#include "util/errors.h"
#include "util/file_io.h"
#include "util/log.h"

namespace st {
namespace {

namespace fs = std::filesystem;
namespace tb = shardtune::tensorboard;

constexpr const char* kFileMarker = "tfevents";  // TensorBoard reads the files whose name holds it
constexpr int kStringDtype = 7;                  // TensorFlow's DT_STRING

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string little_endian(uint64_t value, int bytes) {
  std::string out(static_cast<size_t>(bytes), '\0');
  for (int i = 0; i < bytes; ++i) out[static_cast<size_t>(i)] = static_cast<char>((value >> (8 * i)) & 0xff);
  return out;
}

uint64_t read_little_endian(const std::string& bytes, size_t at, int count) {
  uint64_t value = 0;
  for (int i = count - 1; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(i)]);
  return value;
}

std::string frame(const std::string& event) {
  const std::string length = little_endian(event.size(), 8);
  return length + little_endian(masked_crc32c(length), 4) + event + little_endian(masked_crc32c(event), 4);
}

std::vector<fs::path> event_files(const fs::path& directory) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(directory)) {
    if (entry.is_regular_file() && entry.path().filename().string().find(kFileMarker) != std::string::npos) {
      files.push_back(entry.path());
    }
  }
  return files;
}

// Keeps the events of `file` at steps up to `last_step`; rewrites it only when that drops some.
void cut_back(const fs::path& file, int64_t last_step) {
  const std::vector<std::string> records = read_event_records(file.string());
  std::string kept;
  size_t dropped = 0;
  for (const std::string& record : records) {
    tb::Event event;
    if (!event.ParseFromString(record)) throw IoError(file.string() + ": holds a record that is not an Event");
    if (event.step() > last_step) {
      ++dropped;
      continue;
    }
    kept += frame(record);
  }
  if (dropped == 0 && kept.size() == fs::file_size(file)) return;
  write_file_atomically(file.string(), kept);
  log0("tensorboard: ", file.string(), ": kept ", records.size() - dropped, " event(s) up to step ", last_step,
       ", dropped ", dropped, " logged after it");
}

void add_number(tb::Summary& summary, const std::string& tag, const nlohmann::ordered_json& value) {
  if (value.is_object()) {
    for (const auto& [key, inner] : value.items()) add_number(summary, tag + "/" + key, inner);
    return;
  }
  if (!value.is_number()) return;
  tb::Summary::Value* scalar = summary.add_value();
  scalar->set_tag(tag);
  scalar->set_simple_value(value.get<float>());
}

}  // namespace

uint32_t masked_crc32c(const std::string& bytes) {
  boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;  // CRC-32C (Castagnoli)
  crc.process_bytes(bytes.data(), bytes.size());
  const uint32_t value = crc.checksum();
  return ((value >> 15) | (value << 17)) + 0xa282ead8u;
}

std::vector<std::string> read_event_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path + ": cannot read the TensorBoard event file");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  size_t at = 0;
  while (at + 12 <= bytes.size()) {
    const std::string length = bytes.substr(at, 8);
    if (read_little_endian(bytes, at + 8, 4) != masked_crc32c(length)) break;
    const uint64_t size = read_little_endian(bytes, at, 8);
    if (size > bytes.size() - at - 12 || bytes.size() - at - 12 - size < 4) break;
    std::string event = bytes.substr(at + 12, size);
    if (read_little_endian(bytes, at + 12 + size, 4) != masked_crc32c(event)) break;
    records.push_back(std::move(event));
    at += 16 + size;
  }
  return records;
}

TensorboardWriter::TensorboardWriter(const std::string& directory, int64_t first_step) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) throw IoError(directory + ": cannot create the TensorBoard directory (" + error.message() + ")");
  for (const fs::path& file : event_files(directory)) {
    if (first_step == 0) {
      fs::remove(file);
    } else {
      cut_back(file, first_step);
    }
  }
  char host[256] = "host";
  gethostname(host, sizeof(host) - 1);
  char name[512];
  // Seconds first, zero-padded: TensorBoard reads a logdir's files in name order.
  std::snprintf(name, sizeof(name), "events.out.tfevents.%010lld.%s.%d.shardtune",
                static_cast<long long>(wall_time()), host, static_cast<int>(getpid()));
  path_ = (fs::path(directory) / name).string();
  for (int again = 1; fs::exists(path_); ++again) {  // a second session within the same second
    path_ = (fs::path(directory) / name).string() + "." + std::to_string(again);
  }
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw IoError(path_ + ": cannot create the TensorBoard event file (is train.output_dir writable?)");
  tb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(first_step);
  event.set_file_version("brain.Event:2");
  write(event.SerializeAsString());
}

TensorboardWriter::~TensorboardWriter() = default;

void TensorboardWriter::add_record(const nlohmann::ordered_json& record) {
  if (!record.contains("step") || !record.at("step").is_number_integer()) return;
  tb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(record.at("step").get<int64_t>());
  for (const auto& [key, value] : record.items()) {
    if (key != "step") add_number(*event.mutable_summary(), key, value);
  }
  if (event.summary().value_size() > 0) write(event.SerializeAsString());
}

void TensorboardWriter::add_text(const std::string& tag, const std::string& text, int64_t step) {
  std::string markdown;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = std::min(text.find('\n', start), text.size());
    markdown += "    " + text.substr(start, end - start) + "\n";
    start = end + 1;
  }
  tb::Event event;
  event.set_wall_time(wall_time());
  event.set_step(step);
  tb::Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag(tag);
  value->mutable_metadata()->mutable_plugin_data()->set_plugin_name("text");
  tb::TensorProto* tensor = value->mutable_tensor();
  tensor->set_dtype(kStringDtype);
  tensor->mutable_tensor_shape();  // no dims: a scalar string
  tensor->add_string_val(markdown);
  write(event.SerializeAsString());
}

void TensorboardWriter::write(const std::string& event) {
  out_ << frame(event);
  out_.flush();  // readable while the run goes on, and after a crash
  if (!out_) throw IoError(path_ + ": write failed (disk full?)");
}

}  // namespace st
