// tokenize_corpus <tokenizer.json or model dir> <corpus.jsonl> <ids.jsonl>: encodes each line
// (a JSON string) and writes its ids as a JSON array per line; prints the throughput on one core.
// tokenizer_parity.sh runs it next to Hugging Face tokenizers (hf_encode.py) on the same corpus.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: tokenize_corpus TOKENIZER CORPUS.jsonl IDS.jsonl\n";
    return 2;
  }
  try {
    const st::Tokenizer tokenizer = st::Tokenizer::from_file(argv[1]);
    std::ifstream in(argv[2]);
    std::vector<std::string> texts;
    for (std::string line; std::getline(in, line);) texts.push_back(nlohmann::json::parse(line).get<std::string>());
    size_t bytes = 0;
    std::vector<std::vector<int32_t>> ids(texts.size());
    const auto start = std::chrono::steady_clock::now();
    for (size_t i = 0; i < texts.size(); ++i) {
      ids[i] = tokenizer.encode(texts[i]);
      bytes += texts[i].size();
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::ofstream out(argv[3]);
    for (const auto& row : ids) out << nlohmann::json(row).dump() << "\n";
    std::printf("c++ (shardtune): %zu strings, %.2f MB in %.3f s = %.2f MB/s on one core\n", texts.size(), bytes / 1e6,
                seconds, bytes / 1e6 / seconds);
  } catch (const std::exception& e) {
    std::cerr << "tokenize_corpus: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
