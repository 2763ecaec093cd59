// The check-macro family: every MPI/HDF5 call (and CUDA/NCCL in check_cuda.h) goes through one
// of these, which on failure reports the call, file, line, rank and host. MPI failures abort
// the world (the collective state is gone); HDF5 failures throw IoError, because they usually
// mean bad input that the caller wraps with the file name and the fix.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "util/errors.h"

namespace st {

// "[r1/4 host] MPI_Allreduce(...) failed at lib/distributed/x.cpp:42: <detail>"
std::string describe_check_failure(const char* call, const char* file, int line,
                                   const std::string& detail);

[[noreturn]] void fail_check(const char* call, const char* file, int line,
                             const std::string& detail);

// A failed MPI call: its error text, then what the failure context adds (below), then the abort.
[[noreturn]] void fail_mpi_check(const char* call, const char* file, int line, int code);
// Who else failed, for a failed MPI call's report: a dead or cut-off peer makes the call fail on
// the ranks left, and the report names it as a timeout would ("(on unit 3 step 15); ranks 2-3 on
// st-n2 stopped answering"). lib/distributed's World sets it; empty clears it.
void set_mpi_failure_context(std::function<std::string()> describe);

std::string mpi_error_string(int code);
// The messages on HDF5's error stack of this thread, innermost first, one per line.
std::string hdf5_error_stack();
// Turns off HDF5's automatic stack printing: failures are reported through ST_CHECK_HDF5.
void silence_hdf5_error_printing();

namespace detail {
template <typename T>
T check_hdf5(T result, const char* call, const char* file, int line) {
  if (result < 0) throw IoError(describe_check_failure(call, file, line, hdf5_error_stack()));
  return result;
}
}  // namespace detail

}  // namespace st

#define ST_CHECK_MPI(call)                                                       \
  do {                                                                           \
    const int st_mpi_rc_ = (call);                                               \
    if (st_mpi_rc_ != MPI_SUCCESS) ::st::fail_mpi_check(#call, __FILE__, __LINE__, st_mpi_rc_); \
  } while (0)

// Evaluates to the call's result (an hid_t or herr_t) so it can wrap opens.
#define ST_CHECK_HDF5(call) ::st::detail::check_hdf5((call), #call, __FILE__, __LINE__)

// Invariants of our own code (not user input): abort with the condition and a message.
#define ST_ASSERT(condition, message)                                            \
  do {                                                                           \
    if (!(condition))                                                            \
      ::st::fail_check(#condition, __FILE__, __LINE__, std::string(message));    \
  } while (0)
