// HDF5 pair shards, manifests and datasets: round trips and the validation at open.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "data/collate.h"
#include "data/pair_dataset.h"
#include "prep/dataset_writer.h"
#include "prep/synth.h"
#include "scratch_dir.h"
#include "util/check.h"
#include "util/errors.h"
#include "util/hdf5_io.h"

namespace st {
namespace {

namespace fs = std::filesystem;

class DataFormat : public st::testing::ScratchDirTest {
 protected:
  std::string error_of(const std::function<void()>& action) {
    try {
      action();
    } catch (const Error& error) {
      return error.what();
    }
    return "";
  }
};

PairTable sample(PairKind kind, size_t count, bool with_ref) {
  SynthOptions options;
  options.kind = kind;
  options.vocab_size = 100;
  PairTable table = synthesize_pairs(options, 0, count);
  if (with_ref) {
    PairTable copy;
    copy.kind = kind;
    for (size_t i = 0; i < table.size(); ++i) {
      Pair pair = table.at(i);
      pair.ref_chosen_logp = -1.5f * i;
      pair.ref_rejected_logp = -2.5f * i;
      copy.append(pair);
    }
    return copy;
  }
  return table;
}

void expect_same_pairs(const PairTable& a, const PairTable& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Pair x = a.at(i), y = b.at(i);
    EXPECT_EQ(x.prompt, y.prompt) << i;
    EXPECT_EQ(x.chosen, y.chosen) << i;
    EXPECT_EQ(x.rejected, y.rejected) << i;
    EXPECT_EQ(x.ref_chosen_logp, y.ref_chosen_logp) << i;
    EXPECT_EQ(x.ref_rejected_logp, y.ref_rejected_logp) << i;
    EXPECT_EQ(x.label, y.label) << i;
    EXPECT_EQ(x.margin, y.margin) << i;
    EXPECT_EQ(x.record, y.record) << i;
  }
}

TEST_F(DataFormat, ShardRoundTripForEveryKindAndLayout) {
  for (PairKind kind : {PairKind::dpo, PairKind::sft, PairKind::kto, PairKind::prompt}) {
    for (bool compress : {false, true}) {
      for (bool with_ref : {false, true}) {
        if (with_ref && !stores_completion(kind)) continue;  // nothing to score
        const PairTable table = sample(kind, 57, with_ref);
        const std::string path = (dir_ / "s.h5").string();
        ShardInfo info{kind, 100, 1, 2, 0, "tok", "test", "llama3"};
        write_pair_shard(path, table, info, {compress, 64});
        const PairShardReader reader(path);
        EXPECT_EQ(reader.size(), 57u);
        EXPECT_EQ(reader.info().kind, kind);
        EXPECT_EQ(reader.info().tokenizer, "tok");
        EXPECT_EQ(reader.info().chat_template, "llama3");
        EXPECT_EQ(reader.info().eos_id, 2);
        EXPECT_EQ(reader.has_ref_logps(), with_ref);
        expect_same_pairs(reader.read_all(), table);
        EXPECT_EQ(reader.row_length(3),
                  static_cast<int64_t>(table.prompt.length(3) +
                                       std::max(table.chosen.length(3),
                                                kind == PairKind::dpo ? table.rejected.length(3) : 0)));
      }
    }
  }
}

// A prompt shard holds the prompt and the source record (version 3); a record dataset that is
// missing or whose offsets run past its bytes is refused by name, and a prompt example needs one.
TEST_F(DataFormat, PromptExamplesKeepTheirRecord) {
  const PairTable table = sample(PairKind::prompt, 9, false);
  ASSERT_EQ(table.records.size(), 9u);
  EXPECT_TRUE(table.chosen.tokens.empty());
  const Pair first = table.at(0);
  EXPECT_EQ(first.record.rfind("{\"answer_ids\":[", 0), 0u) << first.record;
  const std::string path = (dir_ / "q.h5").string();
  write_pair_shard(path, table, {PairKind::prompt, 100, 1, 2, 0, "", "test"});
  {
    const PairShardReader reader(path);
    expect_same_pairs(reader.read_all(), table);
    EXPECT_EQ(reader.read_record(4), table.at(4).record);
    EXPECT_EQ(reader.row_length(4), static_cast<int64_t>(table.prompt.length(4)));
    const Hdf5Handle handle = open_hdf5_file(path);
    EXPECT_EQ(read_int_attribute(handle.get(), "format_version"), 3);
  }
  EXPECT_EQ(shard_columns(PairKind::prompt), std::vector<std::string>{"prompt"});
  EXPECT_NE(example_kinds_text().find("prompt (prompt, record)"), std::string::npos) << example_kinds_text();
  Pair bare = first;
  bare.record.clear();
  PairTable refused;
  refused.kind = PairKind::prompt;
  EXPECT_NE(error_of([&] { refused.append(bare); }).find("a prompt example has no source record"), std::string::npos);
  Pair answered = first;
  answered.chosen = {5, 2};
  EXPECT_NE(error_of([&] { refused.append(answered); }).find("holds a prompt alone"), std::string::npos);

  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(file, "record_offsets", H5P_DEFAULT);
  write_1d_dataset(file, "record_offsets", std::vector<uint64_t>(10, 0), {});
  H5Fclose(file);
  const std::string why = error_of([&] { PairShardReader reader(path); });
  EXPECT_NE(why.find("q.h5: dataset 'record_offsets' must start at 0 and end at the byte count"), std::string::npos) << why;
  const hid_t again = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(again, "record", H5P_DEFAULT);
  H5Fclose(again);
  const std::string missing = error_of([&] { PairShardReader reader(path); });
  EXPECT_NE(missing.find("dataset 'record' (1-D uint8) is missing"), std::string::npos) << missing;
}

// A kto shard carries one label per example; without it (or mistyped) it is refused by name.
TEST_F(DataFormat, KtoLabelsRoundTripAndAreRequired) {
  const PairTable table = sample(PairKind::kto, 30, false);
  size_t desirable = 0;
  for (size_t i = 0; i < table.size(); ++i) desirable += table.at(i).label.value() ? 1 : 0;
  EXPECT_GT(desirable, 0u);
  EXPECT_LT(desirable, table.size());
  const std::string path = (dir_ / "k.h5").string();
  write_pair_shard(path, table, {PairKind::kto, 100, 1, 2, 0, "", "test"});
  expect_same_pairs(PairShardReader(path).read_all(), table);
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(file, kLabelDataset, H5P_DEFAULT);
  H5Fclose(file);
  const std::string why = error_of([&] { PairShardReader reader(path); });
  EXPECT_NE(why.find("dataset 'label'"), std::string::npos) << why;
  EXPECT_NE(why.find("k.h5"), std::string::npos) << why;
}

// Preference pairs' margins (TRL's margin column) round-trip, reach the batch, and are all or
// none; a shard's damaged margin dataset is named.
TEST_F(DataFormat, MarginsRoundTripAndAreAllOrNone) {
  PairTable table;
  table.kind = PairKind::dpo;
  const PairTable plain = sample(PairKind::dpo, 6, false);
  for (size_t i = 0; i < plain.size(); ++i) {
    Pair pair = plain.at(i);
    pair.margin = 0.5f * static_cast<float>(i);
    table.append(pair);
  }
  const std::string path = (dir_ / "m.h5").string();
  write_pair_shard(path, table, {PairKind::dpo, 100, 1, 2, 0, "", "test"});
  const PairTable read = PairShardReader(path).read_all();
  expect_same_pairs(read, table);
  ASSERT_TRUE(read.has_margins());
  const MicroBatch batch = collate_pairs({read.at(1), read.at(4)}, PairKind::dpo, {});
  ASSERT_TRUE(batch.margins.defined());
  EXPECT_EQ(batch.margins[1].item<float>(), 2.0f);
  EXPECT_FALSE(collate_pairs({plain.at(0)}, PairKind::dpo, {}).margins.defined());
  EXPECT_NE(error_of([&] { table.append(plain.at(0)); }).find("pairs mix rows with and without a margin"),
            std::string::npos);
  PairTable sft;
  sft.kind = PairKind::sft;
  Pair completion = sample(PairKind::sft, 1, false).at(0);
  completion.margin = 1.0f;
  EXPECT_NE(error_of([&] { sft.append(completion); }).find("a margin is a preference pair's"), std::string::npos);
  // A mixture of data with and without margins is refused when it opens, naming both.
  const fs::path with_margins = dir_ / "with", without = dir_ / "without";
  const std::pair<fs::path, const PairTable*> sets[] = {{with_margins, &table}, {without, &plain}};
  for (const auto& [directory, pairs] : sets) {
    fs::create_directories(directory);
    Manifest manifest{PairKind::dpo, 100, "train", "test", {}, std::nullopt};
    manifest.shards =
        write_shards(directory.string(), "part", *pairs, {PairKind::dpo, 100, 1, 2, 0, "", "test"}, {16, {}});
    write_manifest(directory.string(), manifest);
  }
  const std::string mixed = error_of([&] { PairDataset data({with_margins.string(), without.string()}); });
  EXPECT_NE(mixed.find("has no margin column, but"), std::string::npos) << mixed;
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  H5Ldelete(file, kMarginDataset, H5P_DEFAULT);
  const std::vector<float> short_margins(3, 1.0f);
  write_1d_dataset(file, kMarginDataset, short_margins, DatasetLayout{});
  H5Fclose(file);
  const std::string why = error_of([&] { PairShardReader reader(path); });
  EXPECT_NE(why.find("dataset 'margin' must be float32 with num_pairs entries"), std::string::npos) << why;
  EXPECT_NE(why.find("m.h5"), std::string::npos) << why;
}

// The loss mask of multi-turn SFT round-trips; shards with one are format version 2, shards
// without stay version 1 (older builds still read them).
TEST_F(DataFormat, SftLossMaskRoundTripsAndSetsTheVersion) {
  PairTable table = sample(PairKind::sft, 12, false);
  PairTable masked;
  masked.kind = PairKind::sft;
  for (size_t i = 0; i < table.size(); ++i) {
    Pair pair = table.at(i);
    if (i % 3 == 1) {
      for (size_t t = 0; t < pair.chosen.size(); ++t) pair.loss_mask.push_back(t % 2 == 0 ? 1 : 0);
    }
    masked.append(pair);
  }
  ASSERT_TRUE(masked.has_loss_mask());
  const std::string path = (dir_ / "m.h5").string();
  write_pair_shard(path, masked, {PairKind::sft, 100, 1, 2, 0, "", "test"});
  const PairShardReader reader(path);
  ASSERT_TRUE(reader.has_loss_mask());
  for (size_t i = 0; i < masked.size(); ++i) {
    const Pair read = reader.read(i);
    ASSERT_EQ(read.loss_mask.size(), read.chosen.size()) << i;
    EXPECT_EQ(read.loss_mask, masked.at(i).loss_mask) << i;
    if (i % 3 != 1) {
      EXPECT_EQ(read.loss_mask, std::vector<uint8_t>(read.chosen.size(), 1)) << "unmasked pair " << i;
    }
  }
  auto version_of = [](const std::string& file) {
    const Hdf5Handle handle = open_hdf5_file(file);
    return read_int_attribute(handle.get(), "format_version");
  };
  EXPECT_EQ(version_of(path), 2);
  const std::string plain = (dir_ / "p.h5").string();
  write_pair_shard(plain, table, {PairKind::sft, 100, 1, 2, 0, "", "test"});
  EXPECT_EQ(version_of(plain), 1);
  EXPECT_FALSE(PairShardReader(plain).has_loss_mask());
}

// The reference record says what produced the log-probs: model, fingerprint, dtype, template.
TEST_F(DataFormat, ReferenceRecordRoundTrips) {
  Manifest manifest;
  manifest.vocab_size = 100;
  manifest.reference = ReferenceInfo{"/models/base", 1024, "bf16", "config.json crc32 0badc0de", "chatml"};
  write_manifest(dir_.string(), manifest);
  const Manifest read = read_manifest(dir_.string());
  ASSERT_TRUE(read.reference);
  EXPECT_EQ(read.reference->model, "/models/base");
  EXPECT_EQ(read.reference->cutoff_len, 1024);
  EXPECT_EQ(read.reference->dtype, "bf16");
  EXPECT_EQ(read.reference->fingerprint, "config.json crc32 0badc0de");
  EXPECT_EQ(read.reference->chat_template, "chatml");
}

TEST_F(DataFormat, DatasetSpansShardsInManifestOrder) {
  const PairTable table = sample(PairKind::dpo, 50, false);
  const ShardInfo info{PairKind::dpo, 100, 1, 2, 0, "", "test"};
  Manifest manifest{PairKind::dpo, 100, "train", "test", {}, std::nullopt};
  manifest.shards = write_shards(dir_.string(), "part", table, info, {16, {}});
  write_manifest(dir_.string(), manifest);
  EXPECT_EQ(manifest.shards.size(), 4u);  // 16 + 16 + 16 + 2
  const PairDataset dataset(dir_.string(), {PairKind::dpo, 128, true});
  ASSERT_EQ(dataset.size(), 50u);
  for (uint64_t i : {0, 15, 16, 31, 49}) EXPECT_EQ(dataset.get(i).chosen, table.at(i).chosen) << i;
  EXPECT_NE(error_of([&] { dataset.get(50); }).find("pair index 50 >= 50"), std::string::npos);
}

// KTO's mismatched partners: TRL's rotation within groups of consecutive indices (the last group
// may be short), fixed by the index across shards; other kinds are read as they are.
TEST_F(DataFormat, KtoExamplesTakeTheirPartnersCompletionByIndex) {
  EXPECT_EQ(mismatched_partner(0, 4, 10), 3u);
  EXPECT_EQ(mismatched_partner(1, 4, 10), 0u);
  EXPECT_EQ(mismatched_partner(3, 4, 10), 2u);
  EXPECT_EQ(mismatched_partner(8, 4, 10), 9u);  // the short last group {8, 9}
  EXPECT_EQ(mismatched_partner(9, 4, 10), 8u);
  EXPECT_EQ(mismatched_partner(5, 1, 10), 5u);  // groups of one: itself
  const PairTable table = sample(PairKind::kto, 10, false);
  Manifest manifest{PairKind::kto, 100, "train", "test", {}, std::nullopt};
  manifest.shards = write_shards(dir_.string(), "part", table, {PairKind::kto, 100, 1, 2, 0, "", "test"}, {3, {}});
  write_manifest(dir_.string(), manifest);
  const PairDataset dataset(dir_.string(), {PairKind::kto, 0, false});
  for (uint64_t i = 0; i < 10; ++i) {
    const Pair pair = dataset.example(i, 4);
    EXPECT_EQ(pair.chosen, table.at(i).chosen) << i;
    EXPECT_EQ(pair.label, table.at(i).label) << i;
    EXPECT_EQ(pair.rejected, table.at(mismatched_partner(i, 4, 10)).chosen) << i;
  }
}

TEST_F(DataFormat, OpenRefusesWhatDoesNotFit) {
  const PairTable table = sample(PairKind::dpo, 20, false);
  const ShardInfo info{PairKind::dpo, 100, 1, 2, 0, "", "test"};
  Manifest manifest{PairKind::dpo, 100, "train", "test", write_shards(dir_.string(), "part", table, info, {100, {}}), std::nullopt};
  write_manifest(dir_.string(), manifest);
  const std::string d = dir_.string();
  EXPECT_NE(error_of([&] { PairDataset(d, {PairKind::sft, 0, false}); })
                .find("holds dpo pairs but the stage trains on sft pairs"), std::string::npos);
  EXPECT_NE(error_of([&] { PairDataset(d, {PairKind::dpo, 50, false}); })
                .find("tokenized for a vocabulary of 100 but the model has 50"), std::string::npos);
  {  // a changed file is caught by its checksum
    std::fstream file(d + "/part-00000.h5", std::ios::in | std::ios::out | std::ios::binary);
    file.seekp(-3, std::ios::end);
    file.put('\x7f');
  }
  EXPECT_NE(error_of([&] { PairDataset(d, {PairKind::dpo, 0, true}); }).find("CRC-32 differs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { PairDataset((dir_ / "none").string()); }).find("manifest.json: cannot open"),
            std::string::npos);
}

TEST_F(DataFormat, MalformedShardsAreNamed) {
  const std::string path = (dir_ / "bad.h5").string();
  auto make = [&](const std::function<void(hid_t)>& damage) {
    const PairTable table = sample(PairKind::sft, 5, false);
    write_pair_shard(path, table, {PairKind::sft, 100, 1, 2, 0, "", ""});
    const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
    damage(file);
    H5Fclose(file);
  };
  make([](hid_t f) { H5Adelete(f, "format"); });
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find("attribute 'format' is missing"), std::string::npos);
  make([](hid_t f) { H5Adelete(f, "format_version"); write_attribute(f, "format_version", int64_t{9}); });
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find("'format_version' is 9"), std::string::npos);
  make([](hid_t f) { H5Ldelete(f, "completion", H5P_DEFAULT); });
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find("dataset 'completion' (1-D int32) is missing"),
            std::string::npos);
  make([](hid_t f) {
    const hid_t d = H5Dopen2(f, "prompt_offsets", H5P_DEFAULT);
    const uint64_t big = 1000;
    const hsize_t at = 2, one = 1;
    const hid_t space = H5Dget_space(d);
    H5Sselect_hyperslab(space, H5S_SELECT_SET, &at, nullptr, &one, nullptr);
    const hid_t memory = H5Screate_simple(1, &one, nullptr);
    H5Dwrite(d, H5T_NATIVE_UINT64, memory, space, H5P_DEFAULT, &big);
    H5Sclose(memory); H5Sclose(space); H5Dclose(d);
  });
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find("'prompt_offsets' decreases at index 2"),
            std::string::npos);
  make([](hid_t f) { write_1d_dataset(f, "completion_loss_mask", std::vector<uint8_t>{1, 0, 1}, {}); });
  EXPECT_NE(error_of([&] { PairShardReader r(path); })
                .find("dataset 'completion_loss_mask' must be 1-D uint8 with one entry per completion token"),
            std::string::npos);
  make([](hid_t f) { H5Adelete(f, "max_token_id"); write_attribute(f, "max_token_id", int64_t{100}); });
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find("token id 100 is outside its vocab_size 100"),
            std::string::npos);
  std::ofstream(path) << "not hdf5";
  EXPECT_NE(error_of([&] { PairShardReader r(path); }).find(path + ": cannot open as HDF5"), std::string::npos);
}

}  // namespace
}  // namespace st
