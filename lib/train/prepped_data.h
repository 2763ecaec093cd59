// Data a run preps itself ([prep]: LlamaFactory's dataset, dataset_dir, template, max_samples):
// each entry is prepped on all ranks into <train.output_dir>/data/<entry>-<content key>, where a
// requeued or resumed job finds it and does not prep again; data.train then names them.
#pragma once

#include <string>
#include <vector>

#include "distributed/mpi_communicator.h"
#include "train/train_config.h"

namespace st {

// Collective. With prep.dataset set, preps what is not there yet and sets config.data.train
// (several entries: a mixture weighted by their sizes, so each pair is drawn once an epoch, as
// LlamaFactory's concatenation). Each entry's directory is named by a hash of everything its
// pairs depend on (the files' bytes, the tokenizer's, the template and the prep keys, the
// stage's kind). Throws ConfigError naming the key for a config that sets
// data.train too or has no tokenizer; prep's own errors name the file and the entry. Returns
// the log lines (reused or prepped, with counts; rank 0's also the first example).
std::vector<std::string> prep_config_data(TrainConfig& config, MpiCommunicator& comm);

}  // namespace st
