// adamw8bit_steps IN_DIR OUT_DIR LR WEIGHT_DECAY: shardtune's AdamW8bit (optim/adamw8bit.h) on
// one parameter vector, the oracle side of adamw8bit_check.py. IN_DIR holds "param" (fp32 [n])
// and "grads" (fp32 [steps, n]); OUT_DIR gets "params" ([steps, n], after each step) and the
// final moments' codes and absmax ("m_codes", "v_codes", "m_absmax", "v_absmax"). Weight decay
// applies to every element, as bitsandbytes applies it to a whole parameter.
#include <ATen/ATen.h>

#include <iostream>
#include <string>

#include "hf/safetensors_checkpoint.h"
#include "hf/safetensors_writer.h"
#include "optim/adamw8bit.h"
#include "optim/adamw_host.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::cerr << "usage: adamw8bit_steps IN_DIR OUT_DIR LR WEIGHT_DECAY\n";
    return 2;
  }
  const st::SafetensorsCheckpoint in(argv[1]);
  at::Tensor param = in.read("param").to(at::kFloat).contiguous().clone();
  const at::Tensor grads = in.read("grads").to(at::kFloat).contiguous();
  st::OptimOptions options;
  options.lr = std::stod(argv[3]);
  options.weight_decay = std::stod(argv[4]);
  const int64_t n = param.numel();
  st::Moments8bit moments = st::Moments8bit::zeros(n);
  const std::vector<st::ElementRange> decayed = {{0, n}};
  std::vector<at::Tensor> after;
  for (int64_t step = 1; step <= grads.size(0); ++step) {
    st::adamw8bit_host_step(param, moments, grads[step - 1], 1.0f, decayed, st::adamw_scalars(options, options.lr, step));
    after.push_back(param.clone());
  }
  st::write_safetensors_checkpoint(argv[2],
                                   {{"params", at::stack(after)},
                                    {"m_codes", moments.m_codes},
                                    {"v_codes", moments.v_codes},
                                    {"m_absmax", moments.m_absmax},
                                    {"v_absmax", moments.v_absmax}},
                                   uint64_t{1} << 34);
  std::cout << "adamw8bit_steps: " << grads.size(0) << " steps of " << n << " elements\n";
  return 0;
}
