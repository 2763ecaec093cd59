#include "train/flops.h"

namespace st {

namespace {

double matmul_parameters(const ModelConfig& config) {
  const double embedding = static_cast<double>(config.vocab_size) * static_cast<double>(config.hidden_size);
  // A tied head still multiplies by the table: only the lookup side is not a matmul. A token
  // multiplies by its routed experts only (MFU on active parameters).
  return static_cast<double>(config.active_parameter_count()) - (config.head_reads_embedding() ? 0.0 : embedding);
}

}  // namespace

double forward_flops(const ModelConfig& config, int64_t tokens) {
  const double matmul_params = matmul_parameters(config);
  const double n = static_cast<double>(tokens);
  const double attention = 4.0 * static_cast<double>(config.num_hidden_layers) *
                           static_cast<double>(config.q_size()) * n * n;
  return 2.0 * matmul_params * n + attention;
}

double training_flops(const ModelConfig& config, const std::vector<int64_t>& segment_lengths, bool with_reference,
                      bool frozen_weights) {
  double flops = 0.0;
  for (int64_t length : segment_lengths) {
    flops += (with_reference ? 4.0 : 3.0) * forward_flops(config, length);
    // Frozen weights: the backward's weight-gradient matmuls are not run.
    if (frozen_weights) flops -= 2.0 * matmul_parameters(config) * static_cast<double>(length);
  }
  return flops;
}

double known_peak_tflops(const std::string& device_name, ComputeDtype compute_dtype) {
  if (compute_dtype != ComputeDtype::bf16 && compute_dtype != ComputeDtype::fp16) return 0.0;
  // Dense tensor-core peaks from the vendors' data sheets (SXM parts; PCIe parts are lower).
  struct Known {
    const char* name;
    double tflops;
  };
  static const Known known[] = {{"H200", 989.4}, {"H100", 989.4}, {"A100", 312.0}, {"L40S", 362.1}};
  for (const Known& entry : known) {
    if (device_name.find(entry.name) != std::string::npos) {
      const bool pcie = device_name.find("PCIe") != std::string::npos;
      return pcie && std::string(entry.name) == "H100" ? 756.0 : entry.tflops;
    }
  }
  return 0.0;
}

}  // namespace st
