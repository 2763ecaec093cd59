// MpiComm: duplicate/split constructors and release.
#include "distributed/mpi_comm.h"

#include "util/check.h"

namespace st {

int MpiComm::rank() const {
  int rank = 0;
  ST_CHECK_MPI(MPI_Comm_rank(comm_, &rank));
  return rank;
}

int MpiComm::size() const {
  int size = 0;
  ST_CHECK_MPI(MPI_Comm_size(comm_, &size));
  return size;
}

MpiComm MpiComm::duplicate(MPI_Comm comm) {
  MPI_Comm copy = MPI_COMM_NULL;
  ST_CHECK_MPI(MPI_Comm_dup(comm, &copy));
  return MpiComm(copy);
}

MpiComm MpiComm::split(MPI_Comm comm, int color, int key) {
  MPI_Comm part = MPI_COMM_NULL;
  ST_CHECK_MPI(MPI_Comm_split(comm, color, key, &part));
  return MpiComm(part);
}

void MpiComm::reset() {
  if (comm_ == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&comm_);
  comm_ = MPI_COMM_NULL;
}

}  // namespace st
