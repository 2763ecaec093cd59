// RAII owner of an MPI communicator (freed on destruction, before MPI_Finalize).
#pragma once

#include <mpi.h>

namespace st {

class MpiComm {
 public:
  MpiComm() = default;
  explicit MpiComm(MPI_Comm comm) : comm_(comm) {}
  ~MpiComm() { reset(); }
  MpiComm(MpiComm&& other) noexcept : comm_(other.comm_) { other.comm_ = MPI_COMM_NULL; }
  MpiComm& operator=(MpiComm&& other) noexcept {
    if (this != &other) {
      reset();
      comm_ = other.comm_;
      other.comm_ = MPI_COMM_NULL;
    }
    return *this;
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  MPI_Comm get() const { return comm_; }
  int rank() const;
  int size() const;

  // Collective over `comm`: a private duplicate, so our traffic never matches anyone else's.
  static MpiComm duplicate(MPI_Comm comm);
  // Collective over `comm`: ranks with equal color form one group, ordered by key.
  static MpiComm split(MPI_Comm comm, int color, int key);

 private:
  void reset();
  MPI_Comm comm_ = MPI_COMM_NULL;
};

}  // namespace st
