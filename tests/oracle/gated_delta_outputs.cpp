// gated_delta_outputs IN_DIR OUT_DIR KEY_HEADS VALUE_HEADS KEY_DIM VALUE_DIM KERNEL LENGTHS: the
// oracle side of gated_delta_check.py. IN_DIR holds one Gated DeltaNet layer's tensors under
// transformers' names and "hidden_<L>" inputs; OUT_DIR gets "out64hi_<L>" + "out64lo_<L>" (float64
// as the sum of two fp32 parts) and
// "out32_<L>" (the weights and inputs cast to fp32) from model/gated_delta_mixer.h.
#include <ATen/ATen.h>

#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "hf/safetensors_checkpoint.h"
#include "hf/safetensors_writer.h"
#include "model/gated_delta_mixer.h"

int main(int argc, char** argv) {
  if (argc != 9) {
    std::cerr << "usage: gated_delta_outputs IN_DIR OUT_DIR KEY_HEADS VALUE_HEADS KEY_DIM VALUE_DIM KERNEL LENGTHS\n";
    return 2;
  }
  const st::SafetensorsCheckpoint in(argv[1]);
  st::GatedDeltaShape shape;
  shape.key_heads = std::stoll(argv[3]);
  shape.value_heads = std::stoll(argv[4]);
  shape.key_head_dim = std::stoll(argv[5]);
  shape.value_head_dim = std::stoll(argv[6]);
  shape.conv_kernel = std::stoll(argv[7]);
  const auto weights = [&](at::ScalarType dtype) {
    st::GatedDeltaWeights w;
    w.in_proj_qkv = in.read("in_proj_qkv.weight").to(dtype);
    w.in_proj_z = in.read("in_proj_z.weight").to(dtype);
    w.in_proj_b = in.read("in_proj_b.weight").to(dtype);
    w.in_proj_a = in.read("in_proj_a.weight").to(dtype);
    w.conv1d = in.read("conv1d.weight").to(dtype);
    w.dt_bias = in.read("dt_bias").to(dtype);
    w.A_log = in.read("A_log").to(dtype);
    w.norm = in.read("norm.weight").to(dtype);
    w.out_proj = in.read("out_proj.weight").to(dtype);
    return w;
  };
  const st::GatedDeltaWeights w64 = weights(at::kDouble), w32 = weights(at::kFloat);
  std::vector<std::pair<std::string, at::Tensor>> out;
  std::stringstream lengths(argv[8]);
  for (std::string length; std::getline(lengths, length, ',');) {
    const at::Tensor hidden = in.read("hidden_" + length).to(at::kDouble);
    // float64 as two fp32 parts (the writer's widest dtype): hi + lo holds 48 bits of the mantissa.
    const at::Tensor out64 = st::gated_delta_mixer(hidden, w64, shape);
    const at::Tensor hi = out64.to(at::kFloat);
    out.emplace_back("out64hi_" + length, hi.contiguous());
    out.emplace_back("out64lo_" + length, (out64 - hi.to(at::kDouble)).to(at::kFloat).contiguous());
    out.emplace_back("out32_" + length, st::gated_delta_mixer(hidden.to(at::kFloat), w32, shape).contiguous());
  }
  st::write_safetensors_checkpoint(argv[2], out, uint64_t{1} << 34);
  std::cout << "gated_delta_outputs: " << out.size() / 3 << " lengths\n";
  return 0;
}
