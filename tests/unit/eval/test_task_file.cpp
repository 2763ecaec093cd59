// Task files as users write them: each kind read, the few-shot contexts built as the harness
// builds them (description, examples with delimiters, the document itself left out when drawn
// from the task's own documents, equal for any document range), and bad files refused with
// file:line, the field and the fix.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "eval/eval_context.h"
#include "eval/eval_requests.h"
#include "eval/python_random.h"
#include "eval/task_file.h"
#include "template_tokenizer.h"
#include "util/errors.h"

namespace st {
namespace {

namespace fs = std::filesystem;

class TaskFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("st_task_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  void expect_refused(const std::string& text, const std::string& expected) {
    const std::string path = write("bad.jsonl", text);
    try {
      read_task_file(path);
      FAIL() << "accepted: " << text;
    } catch (const DataError& error) {
      EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
      EXPECT_NE(std::string(error.what()).find("bad.jsonl"), std::string::npos) << error.what();
    }
  }
  fs::path dir_;
};

const char* kChoices = R"({"task": {"kind": "multiple_choice", "num_fewshot": 2, "fewshot_file": "mc.jsonl", "description": "Quiz.\n\n"}}
{"context": "Q: 1+1?\nA:", "choices": ["2", "3"], "gold": 0}
{"context": "Q: 2+2?\nA:", "choices": ["5", "4"], "gold": 1}

{"context": "Q: 3+3?\nA:", "choices": ["6", "7", "8"], "gold": 0}
{"context": "Q: 4+4?\nA:", "choices": ["8", "9"], "gold": 0}
)";

TEST_F(TaskFileTest, MultipleChoiceWithFewShotFromItsOwnDocuments) {
  const EvalTask task = read_task_file(write("mc.jsonl", kChoices));
  EXPECT_EQ(task.spec.name, "mc");
  EXPECT_EQ(task.spec.kind, TaskKind::multiple_choice);
  ASSERT_EQ(task.docs.size(), 4u);
  EXPECT_EQ(task.docs[2].line, 5);  // blank lines skipped, numbers kept
  EXPECT_TRUE(task.fewshot_from_docs);
  const std::vector<std::string> contexts = document_contexts(task, nullptr);
  ASSERT_EQ(contexts.size(), 4u);
  // The harness's draw: random.Random(1234), sample(range(4), 3) per document in order, the
  // document itself dropped, the first 2 kept.
  PythonRandom random(1234);
  for (size_t d = 0; d < 4; ++d) {
    std::string expected = "Quiz.\n\n";
    size_t kept = 0;
    for (size_t index : random.sample(4, 3)) {
      if (index == d || kept == 2) continue;
      expected += task.docs[index].context + " " + task.docs[index].target + "\n\n";
      ++kept;
    }
    EXPECT_EQ(contexts[d], expected + task.docs[d].context) << "document " << d;
  }
  // --limit keeps the first documents and the same draws for them.
  const EvalTask limited = read_task_file((dir_ / "mc.jsonl").string(), 2);
  ASSERT_EQ(limited.docs.size(), 2u);
  EXPECT_EQ(limited.documents_in_file, 4u);
  const std::vector<std::string> limited_contexts = document_contexts(limited, nullptr);
  EXPECT_EQ(limited_contexts[0], contexts[0]);
  EXPECT_EQ(limited_contexts[1], contexts[1]);
}

TEST_F(TaskFileTest, OtherKindsAndASeparateFewShotFile) {
  write("train.jsonl", "{\"context\": \"Q: 9?\", \"target\": \"#### 9\"}\n");
  const EvalTask generation = read_task_file(write("gen.jsonl",
      R"JSON({"task": {"name": "arith", "kind": "generate_until", "num_fewshot": 1, "fewshot_file": "train.jsonl", "until": ["\n"], "max_gen_toks": 8, "filter": {"regex": "#### ([0-9]+)"}, "exact_match": {"ignore_case": true}}}
{"context": "Q: 5?", "target": "#### 5", "answer": "5"}
)JSON"));
  EXPECT_EQ(generation.spec.name, "arith");
  EXPECT_EQ(generation.spec.until, std::vector<std::string>{"\n"});
  EXPECT_EQ(generation.docs[0].answer, "5");
  EXPECT_FALSE(generation.fewshot_from_docs);
  EXPECT_EQ(document_contexts(generation, nullptr)[0], "Q: 9? #### 9\n\nQ: 5?");
  const EvalTask rolling = read_task_file(write("ppl.jsonl", "{\"task\": {\"kind\": \"loglikelihood_rolling\"}}\n{\"text\": \"Some text.\"}\n"));
  EXPECT_EQ(rolling.docs[0].text, "Some text.");
  EXPECT_EQ(rolling.spec.until, std::vector<std::string>{"\n\n"});  // the few-shot delimiter by default
}

TEST_F(TaskFileTest, ChatTemplateTurnsTheExamplesIntoTurns) {
  write("train.jsonl", "{\"context\": \"Q: 9?\", \"target\": \"#### 9\"}\n");
  const EvalTask task = read_task_file(write("chat.jsonl",
      "{\"task\": {\"kind\": \"generate_until\", \"num_fewshot\": 1, \"fewshot_file\": \"train.jsonl\", "
      "\"description\": \"Be exact.\", \"chat_template\": true}}\n{\"context\": \"Q: 5?\", \"target\": \"#### 5\"}\n"));
  const Tokenizer tokenizer = Tokenizer::from_file(testing::write_template_tokenizer((dir_ / "tok").string(), true));
  const ChatTemplate chatml(TemplateKind::chatml, tokenizer);
  EXPECT_EQ(document_contexts(task, &chatml)[0],
            "<|im_start|>system\nBe exact.<|im_end|>\n<|im_start|>user\nQ: 9?<|im_end|>\n"
            "<|im_start|>assistant\n#### 9<|im_end|>\n<|im_start|>user\nQ: 5?<|im_end|>\n<|im_start|>assistant\n");
  EXPECT_THROW(document_contexts(task, nullptr), DataError);  // asks for a template the model lacks
}

TEST_F(TaskFileTest, BadFilesAreRefusedWithLineFieldAndFix) {
  const std::string header = "{\"task\": {\"kind\": \"multiple_choice\"}}\n";
  expect_refused(header + "{\"context\": \"x\", \"choices\": [\"a\", \"b\"]}\n", "bad.jsonl:2: field 'gold' is missing");
  expect_refused(header + "{\"context\": \"x\", \"choices\": [\"a\", \"b\"], \"gold\": 2}\n",
                 "bad.jsonl:2: field 'gold' = 2 is outside the 2 choices");
  expect_refused(header + "{\"context\": \"x\", \"choices\": [], \"gold\": 0}\n", "field 'choices' is empty");
  expect_refused(header + "{\"context\": \"x\", \"choices\": [\"a\", \"\"], \"gold\": 0}\n", "holds an empty choice");
  expect_refused(header + "{\"context\": \"x\", \"choices\": \"a\", \"gold\": 0}\n", "field 'choices' must be a list of strings");
  expect_refused("{\"task\": {\"kind\": \"ranking\"}}\n{}\n",
                 "bad.jsonl:1: task field 'kind' = 'ranking' is not one of multiple_choice|loglikelihood_rolling|generate_until");
  expect_refused("{\"task\": {\"kind\": \"multiple_choice\", \"shots\": 5}}\n", "task field 'shots' is unknown");
  expect_refused("{\"context\": \"x\"}\n", "bad.jsonl:1: the first line must be the task header");
  expect_refused(header, "has no documents");
  expect_refused(header + "not json\n", "bad.jsonl:2: not valid JSON");
  expect_refused("{\"task\": {\"kind\": \"generate_until\", \"filter\": {\"regex\": \"([0-9]\"}}}\n{}\n",
                 "field 'regex' = \"([0-9]\" is not a valid regex");
  expect_refused("{\"task\": {\"kind\": \"multiple_choice\", \"num_fewshot\": 5, \"fewshot_file\": \"bad.jsonl\"}}\n"
                 "{\"context\": \"x\", \"choices\": [\"a\"], \"gold\": 0}\n",
                 "1 few-shot documents, fewer than the 6 that num_fewshot = 5 draws");
  expect_refused("{\"task\": {\"kind\": \"multiple_choice\", \"num_fewshot\": 1}}\n", "needs 'fewshot_file'");
  expect_refused("{\"task\": {\"kind\": \"loglikelihood_rolling\", \"num_fewshot\": 1, \"fewshot_file\": \"x\"}}\n",
                 "takes no few-shot examples");
  expect_refused("{\"task\": {\"kind\": \"loglikelihood_rolling\"}}\n{\"text\": 5}\n", "field 'text' is 5, not a string");
  EXPECT_THROW(read_task_file((dir_ / "absent.jsonl").string()), DataError);
}

}  // namespace
}  // namespace st
