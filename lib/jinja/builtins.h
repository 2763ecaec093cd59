// What the renderer calls by name: filters (`x | name`), tests (`x is name`), the Python methods
// of str, dict and list (`x.strip()`), attribute and item lookup as Jinja2's sandbox does them,
// and json.dumps as transformers' `tojson` calls it. Internal to lib/jinja.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace st::jinja {

struct CallArgs {
  List positional;
  std::vector<std::pair<std::string, Value>> keywords;

  // The argument at `index` or named `name`; null when neither was given.
  const Value* get(size_t index, const char* name) const;
  Value get_or(size_t index, const char* name, Value fallback) const;
  // TemplateError naming `what` when more than `count` positional arguments or an unknown keyword came.
  void allow(size_t count, std::initializer_list<const char*> names, const std::string& what) const;
};

// Bounds on what one rendering may build (a template is untrusted input).
struct SizeLimits {
  size_t max_string_bytes = 16u << 20;
  size_t max_list_items = 100000;
};
// TemplateError if `v` is a string or list past the limits.
void check_size(const Value& v, const SizeLimits& limits);

// Python's `a op b` for + - * / // % ** (render.cpp): ints stay 64-bit (an overflow is an
// error), floor division and modulo take the divisor's sign, str and list concatenation and
// repetition within `limits`; TemplateError where Python raises.
Value arithmetic(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits);

// Python's `item in container` (render.cpp), for the `in` operator and the `in` test: a str
// takes only a str, a dict only a hashable key; TemplateError otherwise, as Python raises.
bool contains(const Value& container, const Value& item);
// An Undefined made by a missing name or key fails here with its message (as Jinja2 fails where
// a value is needed: int(u), float(u), indent).
void fail_if_undefined(const Value& v);

// Filters that take a test or another filter by name (select, map) call these.
Value apply_filter(const std::string& name, const Value& subject, const CallArgs& args, const SizeLimits& limits);
bool apply_test(const std::string& name, const Value& subject, const CallArgs& args);
bool has_filter(const std::string& name);
bool has_test(const std::string& name);

// Jinja2's `x.name`: a method of str / dict / list first, then a dict's key; Undefined (naming
// what was missing) when neither exists.
Value get_attribute(const Value& object, const std::string& name);
// Jinja2's `x[key]`: a dict's key, a list's or str's index (negative from the end), else the
// attribute of that name; Undefined when missing.
Value get_item(const Value& object, const Value& key);
// x[start:stop:step] on a str (code points) or list; each bound may be None.
Value slice_of(const Value& object, const Value& start, const Value& stop, const Value& step);
// The bound method `name` of `self` (a callable), or Undefined when `self` has none.
Value bound_method(const Value& self, const std::string& name);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as Python writes it; `indent` is
// None, an int or a str; separators None or a two-item list.
std::string json_dump(const Value& v, bool ensure_ascii, const Value& indent, const Value& separators, bool sort_keys);

// Python's str.strip(chars) family on code points; `chars` None strips whitespace.
enum class StripSide { both, left, right };
std::string python_strip(const std::string& text, const Value& chars, StripSide side);

}  // namespace st::jinja
