// Runs a subcommand body and turns exceptions into a message and an exit code. With several
// ranks the failure ends the whole job (abort_world), so no rank is left waiting in a collective.
#pragma once

#include <functional>

namespace st {

int run_guarded(const std::function<int()>& body);

}  // namespace st
