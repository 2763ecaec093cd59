// A .safetensors file's header: length, JSON, every tensor's dtype, shape and offsets.
#include "fuzz_target.h"
#include "hf/safetensors_header.h"

ST_FUZZ_TARGET(safetensors_header) {
  return st::fuzz::refusal([&] {
    const st::SafetensorsHeader header = st::parse_safetensors_header(data, size, "fuzz.safetensors");
    for (const st::SafetensorsEntry& entry : header.entries) (void)entry.numel();
  });
}
