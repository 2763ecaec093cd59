// A LlamaFactory dataset_info.json: every entry listed and read (file, formatting, ranking,
// columns, tags). The files its seed names exist (empty) beside it.
#include "fuzz_target.h"
#include "prep/dataset_info.h"

ST_FUZZ_TARGET(dataset_info) {
  static const bool files = [] {
    for (const char* name : {"alpaca_en_demo.json", "dpo_en_demo.json", "identity.json", "glaive_toolcall_en_demo.json",
                             "kto_en_demo.json", "v1_sft_demo.jsonl", "v1_dpo_demo.jsonl", "data.json"}) {
      st::fuzz::scratch_file(name, nullptr, 0);
    }
    return true;
  }();
  (void)files;
  st::fuzz::scratch_file("dataset_info.json", data, size);
  return st::fuzz::refusal([&] {
    for (const st::DatasetInfoListing& listing : st::list_dataset_info(st::fuzz::scratch_directory())) {
      if (listing.entry) (void)st::read_dataset_info(st::fuzz::scratch_directory(), listing.name, listing.entry->kind);
    }
  });
}
