// StartupDeadline: one thread that waits for the start-up to end or the deadline to pass.
#include "distributed/startup_deadline.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "util/abort.h"
#include "util/errors.h"

namespace st {
namespace {

constexpr const char* kStartupTimeoutVariable = "SHARDTUNE_STARTUP_TIMEOUT_S";
constexpr double kDefaultStartupTimeoutSeconds = 300.0;

}  // namespace

double startup_timeout_s() {
  const char* text = std::getenv(kStartupTimeoutVariable);
  if (text == nullptr || *text == '\0') return kDefaultStartupTimeoutSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (*end != '\0' || !std::isfinite(seconds) || seconds <= 0) {
    throw ConfigError(std::string("environment: ") + kStartupTimeoutVariable + "='" + text +
                      "' is not a positive number of seconds; set it to e.g. 300, or unset it for the default (" +
                      std::to_string(static_cast<int>(kDefaultStartupTimeoutSeconds)) + ")");
  }
  return seconds;
}

StartupDeadline::StartupDeadline(std::string what, double timeout_s) {
  thread_ = std::thread([this, what = std::move(what), timeout_s] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (met_signal_.wait_for(lock, std::chrono::duration<double>(timeout_s), [this] { return met_; })) return;
    std::ostringstream reason;
    reason << what << " did not finish within " << timeout_s << " s (" << kStartupTimeoutVariable
           << "): a rank died or hangs while starting (its own log says why), or a host is unreachable";
    abort_world(reason.str());
  });
}

StartupDeadline::~StartupDeadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    met_ = true;
  }
  met_signal_.notify_all();
  thread_.join();
}

}  // namespace st
