// The final answer of a math completion and whether it equals a reference answer: the rule
// behind the `math_answer` reward. The answer is the last \boxed{...} (braces balanced), else what
// follows the last "####" (GSM8K's marker), else what follows the last "Answer:"; it is
// normalised (spaces, $, \left \right, \! and \, spacing, \dfrac and \tfrac, a trailing period,
// thousands separators, "\text{...}" units dropped) and two answers are equal as exact rationals
// when both read as one (integers, decimals, a/b, \frac{a}{b}, signed), else as normalised text.
// Not math_verify: no symbolic algebra, no sets or intervals (docs/grpo.md says where they differ).
#pragma once

#include <optional>
#include <string>

namespace st {

// The completion's final answer as written (before normalising); none when it states none.
std::optional<std::string> final_answer(const std::string& text);
// The answer normalised for comparison.
std::string normalised_answer(const std::string& answer);
// 1 when the completion's final answer equals the reference's, 0 when it differs or there is
// none. The reference is read the same way when it marks its answer, else whole.
double math_answer_reward(const std::string& completion, const std::string& reference);

}  // namespace st
