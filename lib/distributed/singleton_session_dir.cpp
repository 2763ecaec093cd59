// SingletonSessionDir: a per-process Open MPI session directory base for singletons.
#include "distributed/singleton_session_dir.h"

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

#include "util/abort.h"

namespace st {
namespace {

constexpr const char* kTmpdirBaseVariable = "OMPI_MCA_orte_tmpdir_base";

void remove_quietly(const std::string& path) {
  std::error_code ignored;
  std::filesystem::remove_all(path, ignored);
}

// Whether an MPI launcher started this process: mpirun sets the first variable, srun --mpi=pmix
// the second, --mpi=pmi2 (and MPICH's hydra) the third.
bool started_by_mpi_launcher() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    if (std::getenv(name) != nullptr) return true;
  }
  return false;
}

}  // namespace

SingletonSessionDir::SingletonSessionDir() {
  if (started_by_mpi_launcher() || std::getenv(kTmpdirBaseVariable) != nullptr) return;
  const char* tmpdir = std::getenv("TMPDIR");
  std::string pattern = std::string(tmpdir != nullptr && *tmpdir != '\0' ? tmpdir : "/tmp") +
                        "/shardtune-mpi.XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) return;
  path_ = buffer.data();
  setenv(kTmpdirBaseVariable, path_.c_str(), /*overwrite=*/1);
  const std::string path = path_;
  abort_hook_ = add_abort_hook([path] { remove_quietly(path); });
}

SingletonSessionDir::~SingletonSessionDir() {
  if (path_.empty()) return;
  remove_abort_hook(abort_hook_);
  unsetenv(kTmpdirBaseVariable);
  remove_quietly(path_);
}

}  // namespace st
