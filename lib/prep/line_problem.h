// Why one input record of `shardtune prep` gives no pair: counted per reason and, with
// --strict, fatal.
#pragma once

#include <string>

#include "util/enum_names.h"

namespace st {

// The reasons, as the prep report counts them (their names are stable keys).
enum class LineReason {
  missing_field, bad_field, bad_json, wrong_shape, wrong_kind, text_record, id_out_of_vocab,
  empty_prompt, empty_completion, chosen_equals_rejected, bad_turns, untokenizable,
  template_refused,  // the chat template's own raise_exception (e.g. "roles must alternate")
  template_failed    // the chat template failed on the record (an undefined attribute, a limit)
};
template <>
struct EnumNames<LineReason> {
  static constexpr NamedValue<LineReason> table[] = {
      {LineReason::missing_field, "missing field"},
      {LineReason::bad_field, "bad field"},
      {LineReason::bad_json, "bad json"},
      {LineReason::wrong_shape, "wrong shape"},
      {LineReason::wrong_kind, "wrong kind"},
      {LineReason::text_record, "text record"},
      {LineReason::id_out_of_vocab, "id out of vocab"},
      {LineReason::empty_prompt, "empty prompt"},
      {LineReason::empty_completion, "empty completion"},
      {LineReason::chosen_equals_rejected, "chosen equals rejected"},
      {LineReason::bad_turns, "bad turns"},
      {LineReason::untokenizable, "untokenizable"},
      {LineReason::template_refused, "template refused"},
      {LineReason::template_failed, "template failed"}};
};

struct LineProblem {
  LineReason reason;
  std::string detail;  // with the field and value
};

}  // namespace st
