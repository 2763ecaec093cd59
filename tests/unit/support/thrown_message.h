// The message of the exception of type E that `action` throws; empty when it throws none (an
// exception of another type propagates and fails the test).
#pragma once

#include <string>

namespace st::testing {

template <typename E, typename Action>
std::string thrown_message(Action&& action) {
  try {
    action();
  } catch (const E& error) {
    return error.what();
  }
  return "";
}

}  // namespace st::testing
