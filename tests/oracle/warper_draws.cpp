// warper_draws INPUTS.json OUT.json: the shardtune side of the sampling oracle (warpers_test.sh):
// for each case of warpers_inputs.py, the warped distribution (model/logits_warpers.h) of its
// logits and the counts of DRAWS tokens drawn from it as generate draws them (at::multinomial
// with one seeded generator).
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

#include "model/logits_warpers.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: warper_draws INPUTS.json OUT.json\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  const nlohmann::json data = nlohmann::json::parse(in);
  const at::Tensor logits = at::tensor(data["logits"].get<std::vector<float>>(), at::kFloat);
  const int64_t draws = data["draws"].get<int64_t>();
  nlohmann::json out;
  for (const nlohmann::json& c : data["cases"]) {
    st::SamplingOptions sampling;
    sampling.temperature = c.value("temperature", 1.0);
    sampling.top_k = c.value("top_k", int64_t{0});
    sampling.top_p = c.value("top_p", 1.0);
    sampling.min_p = c.value("min_p", 0.0);
    const at::Tensor probabilities = at::softmax(st::warped_logits(logits, sampling), 0);
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(c["seed"].get<uint64_t>());
    const at::Tensor tokens = at::multinomial(probabilities, draws, /*replacement=*/true, generator);
    const at::Tensor counts = at::bincount(tokens, {}, logits.size(0));
    out[c["name"].get<std::string>()] = {
        {"probabilities", std::vector<float>(probabilities.data_ptr<float>(), probabilities.data_ptr<float>() + probabilities.numel())},
        {"counts", std::vector<int64_t>(counts.data_ptr<int64_t>(), counts.data_ptr<int64_t>() + counts.numel())}};
  }
  std::ofstream(argv[2]) << out.dump(1);
  std::cout << "warper_draws: " << out.size() << " cases, " << draws << " draws each\n";
  return 0;
}
