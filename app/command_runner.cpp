// Error-to-exit-code mapping shared by all subcommands.
#include "command_runner.h"

#include <mpi.h>

#include <exception>
#include <string>

#include "exit_codes.h"
#include "util/abort.h"
#include "util/check.h"
#include "util/errors.h"
#include "util/log.h"

namespace st {
namespace {

int world_size_if_running() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return 1;
  int size = 1;
  ST_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &size));
  return size;
}

int fail(const std::string& message, int code) {
  if (world_size_if_running() > 1) abort_world("error: " + message, code);
  warn_all("error: ", message);
  return code;
}

}  // namespace

int run_guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const ConfigError& error) {
    return fail(error.what(), kExitConfigError);
  } catch (const Error& error) {
    return fail(error.what(), kExitError);
  } catch (const std::exception& error) {
    return fail(std::string("internal error: ") + error.what(), kExitError);
  }
}

}  // namespace st
