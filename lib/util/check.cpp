// Failure reporting for the check macros: formatting, MPI and HDF5 error texts.
#include "util/check.h"

#include <hdf5.h>

#include <cstring>
#include <mutex>

#include "util/abort.h"
#include "util/log.h"

namespace st {

std::string describe_check_failure(const char* call, const char* file, int line,
                                   const std::string& detail) {
  // Paths from __FILE__ are absolute in out-of-tree builds; keep them from lib/ or app/ on.
  std::string path = file;
  for (const char* root : {"/lib/", "/app/", "/tests/", "/cuda/", "/bench/"}) {
    const auto pos = path.rfind(root);
    if (pos != std::string::npos) {
      path = path.substr(pos + 1);
      break;
    }
  }
  // No log prefix here: whoever prints the text (abort_world, the error handler) adds it once.
  return std::string(call) + " failed at " + path + ":" + std::to_string(line) + ": " +
         detail;
}

void fail_check(const char* call, const char* file, int line, const std::string& detail) {
  abort_world(describe_check_failure(call, file, line, detail));
}

namespace {
std::mutex mpi_failure_context_mutex;
std::function<std::string()> mpi_failure_context;
}  // namespace

void set_mpi_failure_context(std::function<std::string()> describe) {
  std::lock_guard<std::mutex> lock(mpi_failure_context_mutex);
  mpi_failure_context = std::move(describe);
}

void fail_mpi_check(const char* call, const char* file, int line, int code) {
  std::string detail = mpi_error_string(code);
  // The context may call MPI itself (a roll call); a failure in there reports without it.
  static thread_local bool describing = false;
  std::function<std::string()> describe;
  {
    std::lock_guard<std::mutex> lock(mpi_failure_context_mutex);
    describe = mpi_failure_context;
  }
  if (describe && !describing) {
    describing = true;
    detail += describe();
    describing = false;
  }
  fail_check(call, file, line, detail);
}

std::string mpi_error_string(int code) {
  // Open MPI aborts the process if MPI_Error_string is called before MPI_Init.
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return "MPI error code " + std::to_string(code);
  char text[MPI_MAX_ERROR_STRING] = {0};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    return "MPI error code " + std::to_string(code);
  }
  return std::string(text, static_cast<size_t>(length));
}

namespace {
herr_t collect_hdf5_message(unsigned, const H5E_error2_t* error, void* output) {
  auto* text = static_cast<std::string*>(output);
  if (!text->empty()) *text += "; ";
  *text += error->func_name ? error->func_name : "?";
  *text += ": ";
  *text += error->desc ? error->desc : "(no description)";
  return 0;
}
}  // namespace

std::string hdf5_error_stack() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_hdf5_message, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? "HDF5 reported no details" : text;
}

void silence_hdf5_error_printing() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

}  // namespace st
