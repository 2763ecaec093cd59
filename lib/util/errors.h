// Typed errors for bad input. Each names the file or field at fault and the fix; app/ catches
// them and exits non-zero. Broken invariants and failed collectives abort instead (check.h).
#pragma once

#include <stdexcept>
#include <string>

namespace st {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class ConfigError : public Error {      // config file, command line, validation
 public:
  using Error::Error;
};
class DataError : public Error {        // HDF5 shards, JSONL inputs, manifests
 public:
  using Error::Error;
};
class ModelError : public Error {       // config.json, safetensors, presets
 public:
  using Error::Error;
};
class CheckpointError : public Error {  // sharded checkpoints, exports
 public:
  using Error::Error;
};
class TokenizerError : public Error {  // tokenizer.json, tiktoken files, chat templates
 public:
  using Error::Error;
};
class RewardError : public Error {      // reward functions, reward models and the reward program
 public:
  using Error::Error;
};
class IoError : public Error {          // files and libraries below the formats (HDF5 calls, fs)
 public:
  using Error::Error;
};

}  // namespace st
