// [prep]: data that `train` preps itself before training (LlamaFactory's dataset / dataset_dir /
// template / max_samples), instead of reading data.train made by `shardtune prep`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tokenizer/chat_template.h"

namespace st {

struct PrepSourceOptions {
  // The keys of [prep]: their help and range are declared once, in train/train_config_schema.cpp.
  std::string dataset_dir;
  std::string dataset;                        // entries of dataset_info.json, comma-separated
  std::optional<TemplateKind> chat_template;  // empty: auto (the model's own)
  std::string template_kwargs;                // JSON object, for jinja
  std::string tokenizer;                      // empty: model.path
  int64_t max_samples = 0;                    // 0: every record
  TrainOn train_on = TrainOn::all;

  bool wanted() const { return !dataset.empty(); }
};

}  // namespace st
