// An INI config file (`train --config`) against the whole key schema, then validated as a run
// on 2 ranks would be.
#include "config/config_parser.h"
#include "fuzz_target.h"
#include "train/train_config_schema.h"
#include "train/train_config_validate.h"

ST_FUZZ_TARGET(config_ini) {
  const std::string path = st::fuzz::scratch_file("fuzz.ini", data, size);
  return st::fuzz::refusal([&] {
    st::TrainConfig config;
    st::ConfigSchema schema;
    st::bind_train_config(schema, config);
    const st::ParsedArguments parsed = st::parse_arguments({"--config", path}, {}, schema);
    st::validate_config(config, 2, parsed.origins);
  });
}
