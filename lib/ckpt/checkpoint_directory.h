// The checkpoint directory of a run: step_XXXXXXXX/ entries (complete once they hold COMPLETE;
// written as step_XXXXXXXX.tmp and renamed), the `latest` symlink, leftovers of interrupted
// saves, retention (keep the newest K), and what a resume spec (auto | path) points at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace st {

inline constexpr const char* kCompleteMarker = "COMPLETE";

std::string step_directory_name(int64_t step);       // step_00000500
std::string rank_file_name(int shard);               // rank_00000.h5

struct CheckpointEntry {
  int64_t step = 0;
  std::string path;
};

// Complete checkpoints in `directory`, oldest first; none when it does not exist.
std::vector<CheckpointEntry> list_complete_checkpoints(const std::string& directory);
// Removes step_*.tmp directories (saves a crash or kill interrupted); returns how many.
int remove_incomplete_checkpoints(const std::string& directory);
// Removes every step_* entry and `latest` (a fresh run with train.overwrite).
void remove_all_checkpoints(const std::string& directory);
// Deletes the oldest complete checkpoints until `keep_last` remain (0 = keep all); never
// `protected_name` (the checkpoint just written), whatever its step.
void apply_retention(const std::string& directory, int64_t keep_last, const std::string& protected_name = "");
// The step of a step_XXXXXXXX path; nullopt for another name.
std::optional<int64_t> checkpoint_step(const std::string& path);

// Resuming an older checkpoint while newer ones exist starts another timeline: the newer step_*
// entries (complete or not) move into <directory>/abandoned-<step>-<stamp>/, so `auto` never
// jumps back to them, and `latest` is pointed at the newest complete checkpoint left (removed
// when none). Returns that folder's path and the names moved; an empty path when none was newer.
struct SetAside {
  std::string folder;
  std::vector<std::string> moved;
};
SetAside set_aside_newer_checkpoints(const std::string& directory, int64_t step, const std::string& stamp);
// Points <directory>/latest at `step_name` (atomically: a new link renamed over the old one).
void point_latest_at(const std::string& directory, const std::string& step_name);

// The resume spec that means "the newest complete checkpoint, if any" (train.resume = auto).
inline constexpr const char* kResumeNewest = "auto";
// The checkpoint a resume spec selects: kResumeNewest = the newest complete one in `directory` (none
// when there is none); otherwise a step directory (must be complete) or a checkpoint directory
// (its newest complete one; an error when it has none). Throws CheckpointError.
std::optional<std::string> resolve_resume(const std::string& spec, const std::string& directory);

}  // namespace st
