// A JSON array file's elements located (prep reads `[{...}, {...}]` as records).
#include "fuzz_target.h"
#include "prep/json_array.h"

ST_FUZZ_TARGET(json_array) {
  return st::fuzz::refusal([&] {
    (void)st::json_array_records(std::string(reinterpret_cast<const char*>(data), size), "fuzz.json");
  });
}
