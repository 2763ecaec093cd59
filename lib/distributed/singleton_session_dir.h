// A private Open MPI session directory for a command started without mpirun or srun.
//
// Open MPI 4 names the same session directory for every isolated singleton on a host
// (<tmp>/ompi.<host>.<uid>/jf.0/1/0): one singleton's MPI_Finalize removes that tree while
// another singleton's MPI_Init is creating it, and the latter fails ("orte_session_dir failed").
// Users run commands side by side (prep of several datasets, eval next to a run), and so does the
// test suite. Each singleton gets its own base directory instead.
#pragma once

#include <string>

namespace st {

class SingletonSessionDir {
 public:
  // Before MPI_Init. Creates <TMPDIR or /tmp>/shardtune-mpi.XXXXXX and points
  // OMPI_MCA_orte_tmpdir_base at it; does nothing under a launcher (its daemons own the session
  // directory), where the user set orte_tmpdir_base, or where the directory cannot be made
  // (Open MPI's default then applies and reports its own error).
  SingletonSessionDir();
  // After MPI_Finalize: removes the base directory (also when the job is aborted).
  ~SingletonSessionDir();
  SingletonSessionDir(const SingletonSessionDir&) = delete;
  SingletonSessionDir& operator=(const SingletonSessionDir&) = delete;

  // The private base directory; empty where none was made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int abort_hook_ = -1;
};

}  // namespace st
