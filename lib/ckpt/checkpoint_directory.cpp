#include "ckpt/checkpoint_directory.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;

constexpr const char* kStepPrefix = "step_";
constexpr const char* kTemporarySuffix = ".tmp";

// The step of a "step_<digits>" name; nullopt for anything else.
std::optional<int64_t> step_of(const std::string& name) {
  const std::string prefix = kStepPrefix;
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
  const std::string digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  return std::stoll(digits);
}

// The step of a "step_<digits>.tmp" name (a save in progress or interrupted); nullopt otherwise.
std::optional<int64_t> temporary_step_of(const std::string& name) {
  const size_t suffix = std::char_traits<char>::length(kTemporarySuffix);
  if (name.size() <= suffix || name.compare(name.size() - suffix, suffix, kTemporarySuffix) != 0) return std::nullopt;
  return step_of(name.substr(0, name.size() - suffix));
}

bool is_complete(const fs::path& path) { return fs::exists(path / kCompleteMarker); }

// The marker goes first: a deletion cut short leaves an incomplete directory, never a
// "complete" one with files missing.
void remove_complete_checkpoint(const std::string& path) {
  fs::remove(fs::path(path) / kCompleteMarker);
  fs::remove_all(path);
}

}  // namespace

std::string step_directory_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof(name), "%s%08lld", kStepPrefix, static_cast<long long>(step));
  return name;
}

std::string rank_file_name(int shard) {
  char name[32];
  std::snprintf(name, sizeof(name), "rank_%05d.h5", shard);
  return name;
}

std::vector<CheckpointEntry> list_complete_checkpoints(const std::string& directory) {
  std::vector<CheckpointEntry> found;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return found;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const auto step = step_of(entry.path().filename().string());
    if (step && entry.is_directory() && !entry.is_symlink() && is_complete(entry.path())) {
      found.push_back({*step, entry.path().string()});
    }
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
  return found;
}

int remove_incomplete_checkpoints(const std::string& directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) return 0;
  int removed = 0;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    const bool temporary = temporary_step_of(name).has_value();
    const bool unmarked = step_of(name).has_value() && entry.is_directory() && !is_complete(entry.path());
    if (temporary || unmarked) {
      fs::remove_all(entry.path());
      ++removed;
    }
  }
  return removed;
}

void remove_all_checkpoints(const std::string& directory) {
  std::error_code error;
  if (!fs::is_directory(directory, error)) return;
  remove_incomplete_checkpoints(directory);
  for (const CheckpointEntry& entry : list_complete_checkpoints(directory)) remove_complete_checkpoint(entry.path);
  fs::remove(fs::path(directory) / "latest");
}

void apply_retention(const std::string& directory, int64_t keep_last, const std::string& protected_name) {
  if (keep_last <= 0) return;
  const std::vector<CheckpointEntry> complete = list_complete_checkpoints(directory);
  auto excess = static_cast<int64_t>(complete.size()) - keep_last;
  for (const CheckpointEntry& entry : complete) {
    if (excess <= 0) break;
    if (fs::path(entry.path).filename() == protected_name) continue;
    remove_complete_checkpoint(entry.path);
    --excess;
  }
}

std::optional<int64_t> checkpoint_step(const std::string& path) {
  return step_of(fs::path(path).filename().string());
}

SetAside set_aside_newer_checkpoints(const std::string& directory, int64_t step, const std::string& stamp) {
  SetAside result;
  std::error_code error;
  if (!fs::is_directory(directory, error)) return result;
  std::vector<fs::path> newer;
  for (const auto& entry : fs::directory_iterator(directory)) {
    const std::string name = entry.path().filename().string();
    const std::optional<int64_t> found = step_of(name) ? step_of(name) : temporary_step_of(name);
    if (found && *found > step && entry.is_directory() && !entry.is_symlink()) newer.push_back(entry.path());
  }
  if (newer.empty()) return result;
  std::sort(newer.begin(), newer.end());
  const fs::path folder = fs::path(directory) / ("abandoned-" + std::to_string(step) + "-" + stamp);
  fs::create_directories(folder);
  for (const fs::path& path : newer) {
    fs::rename(path, folder / path.filename());
    result.moved.push_back(path.filename().string());
  }
  const std::vector<CheckpointEntry> left = list_complete_checkpoints(directory);
  if (left.empty()) {
    fs::remove(fs::path(directory) / "latest");
  } else {
    point_latest_at(directory, fs::path(left.back().path).filename().string());
  }
  result.folder = folder.string();
  return result;
}

void point_latest_at(const std::string& directory, const std::string& step_name) {
  const fs::path link = fs::path(directory) / "latest";
  const fs::path temporary = fs::path(directory) / "latest.tmp";
  fs::remove(temporary);
  fs::create_directory_symlink(step_name, temporary);
  fs::rename(temporary, link);
}

std::optional<std::string> resolve_resume(const std::string& spec, const std::string& directory) {
  if (spec.empty()) return std::nullopt;
  if (spec == kResumeNewest) {
    const auto complete = list_complete_checkpoints(directory);
    if (complete.empty()) return std::nullopt;
    return complete.back().path;
  }
  const fs::path path = fs::weakly_canonical(spec);
  if (!fs::is_directory(path)) {
    throw CheckpointError("checkpoint " + spec + ": no such directory; give a step_* checkpoint, a "
                          "checkpoint directory, or auto");
  }
  if (step_of(path.filename().string())) {
    if (!is_complete(path)) {
      throw CheckpointError("checkpoint " + spec + ": this checkpoint has no " + kCompleteMarker +
                            " marker (its save was interrupted); resume from an earlier one");
    }
    return path.string();
  }
  const auto complete = list_complete_checkpoints(path.string());
  if (complete.empty()) {
    throw CheckpointError("checkpoint " + spec + ": holds no complete step_* checkpoint");
  }
  return complete.back().path;
}

}  // namespace st
