// Two gathers: the lengths, then the bytes padded to the longest.
#include "distributed/string_gather.h"

#include <ATen/ATen.h>

#include <cstring>

#include "util/file_io.h"

namespace st {

std::vector<std::string> all_gather_strings(Communicator& communicator, const std::string& text) {
  const int ranks = communicator.size();
  const auto longs = at::TensorOptions().dtype(at::kLong);
  const at::Tensor my_length = at::full({1}, static_cast<int64_t>(text.size()), longs);
  const at::Tensor lengths = at::empty({ranks}, longs);
  communicator.all_gather_into(lengths, my_length);
  const int64_t longest = lengths.max().item<int64_t>();

  const auto bytes = at::TensorOptions().dtype(at::kByte);
  const at::Tensor mine = at::zeros({longest}, bytes);
  if (!text.empty()) std::memcpy(mine.data_ptr(), text.data(), text.size());
  const at::Tensor all = at::empty({ranks * longest}, bytes);
  communicator.all_gather_into(all, mine);

  std::vector<std::string> result;
  const auto* data = static_cast<const char*>(all.data_ptr());
  const auto* length = lengths.data_ptr<int64_t>();
  for (int rank = 0; rank < ranks; ++rank) {
    result.emplace_back(data + rank * longest, static_cast<size_t>(length[rank]));
  }
  return result;
}

void write_rank_blocks(Communicator& communicator, const std::string& block, const std::string& path) {
  const std::vector<std::string> blocks = all_gather_strings(communicator, block);
  if (communicator.rank() == 0) {
    std::string text;
    for (const std::string& rank_block : blocks) text += rank_block;
    write_file_atomically(path, text);
  }
  communicator.barrier();
}

}  // namespace st
