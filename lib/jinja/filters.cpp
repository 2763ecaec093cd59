// Jinja2's built-in filters and tests as chat templates use them (lib/jinja/README.md lists
// them), with transformers' tojson; an unknown name is a TemplateError naming it.
#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace st::jinja {
namespace {

using Filter = Value (*)(const Value&, const CallArgs&, const SizeLimits&);
using Test = bool (*)(const Value&, const CallArgs&);

int64_t length_of(const Value& v) {
  switch (v.kind) {
    case Kind::string: return static_cast<int64_t>(code_point_count(v.text));
    case Kind::list: return static_cast<int64_t>(v.list->size());
    case Kind::dict: return static_cast<int64_t>(v.dict->items.size());
    case Kind::undefined: return 0;
    default: throw TemplateError(std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

// `attribute` of a filter: a dotted path, each part a key or an index.
Value attribute_path(const Value& item, const Value& path) {
  if (path.is(Kind::integer)) return get_item(item, path);
  Value v = item;
  const std::string text = to_str(path);
  size_t start = 0;
  while (true) {
    const size_t dot = text.find('.', start);
    const std::string part = text.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit) && part.size() < 18;
    v = digits ? get_item(v, Value::of(static_cast<int64_t>(std::stoll(part)))) : get_item(v, Value::of(part));
    if (dot == std::string::npos || v.is(Kind::undefined)) return v;
    start = dot + 1;
  }
}

std::string lowered(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Jinja2 sorts and dedups strings case-insensitively unless told otherwise.
Value sort_key(const Value& v, bool case_sensitive) {
  return v.is(Kind::string) && !case_sensitive ? Value::of(lowered(v.text)) : v;
}

CallArgs rest_args(const CallArgs& args, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < args.positional.size(); ++i) rest.positional.push_back(args.positional[i]);
  rest.keywords = args.keywords;
  return rest;
}

std::string name_arg(const CallArgs& args, size_t index, const char* filter) {
  const Value* v = args.get(index, "name");
  if (!v || !v->is(Kind::string)) throw TemplateError(std::string(filter) + " needs the name of a test or filter");
  return v->text;
}

// select / reject / selectattr / rejectattr.
// Jinja2's even, odd and divisibleby tests: `value % divisor` compared, as Python computes it.
bool modulo_is(const Value& value, const Value& divisor, int64_t remainder) {
  return equals(arithmetic("%", value, divisor, SizeLimits{}), Value::of(remainder));
}

// select, reject, selectattr, rejectattr and map take a falsy value (none, 0, "", an empty list)
// as nothing to iterate, before reading their arguments, as Jinja2's `if value:` does.
Value selected(const Value& seq, const CallArgs& args, bool by_attribute, bool keep) {
  List out;
  if (!truthy(seq)) return Value::of(std::move(out));
  const Value* attribute = by_attribute ? args.get(0, "attribute") : nullptr;
  if (by_attribute && !attribute) throw TemplateError("selectattr / rejectattr need an attribute");
  const size_t test_at = by_attribute ? 1 : 0;
  const bool has_test = args.positional.size() > test_at;
  const std::string test = has_test ? name_arg(args, test_at, "select") : "";
  const CallArgs test_args = rest_args(args, test_at + 1);
  for (const Value& item : items_of(seq)) {
    const Value subject = by_attribute ? attribute_path(item, *attribute) : item;
    const bool passes = has_test ? apply_test(test, subject, test_args) : truthy(subject);
    if (passes == keep) out.push_back(item);
  }
  return Value::of(std::move(out));
}

Value filter_map(const Value& seq, const CallArgs& args, const SizeLimits& limits) {
  List out;
  if (!truthy(seq)) return Value::of(std::move(out));
  if (const Value* attribute = args.get(static_cast<size_t>(-1), "attribute")) {
    const Value fallback = args.get_or(static_cast<size_t>(-1), "default", Value::undefined());
    for (const Value& item : items_of(seq)) {
      Value v = attribute_path(item, *attribute);
      out.push_back(v.is(Kind::undefined) && !fallback.is(Kind::undefined) ? fallback : v);
    }
    return Value::of(std::move(out));
  }
  const std::string filter = name_arg(args, 0, "map");
  const CallArgs filter_args = rest_args(args, 1);
  for (const Value& item : items_of(seq)) out.push_back(apply_filter(filter, item, filter_args, limits));
  return Value::of(std::move(out));
}

std::string indented(const std::string& text, const Value& width, bool first, bool blank) {
  const std::string indention = width.is(Kind::string) ? width.text
                                                       : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                                         width.is(Kind::integer) ? width.integer : 4, 0, 256)),
                                                                     ' ');
  std::vector<std::string> lines = split_lines(text + "\n");
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i) out += "\n";
    const bool indent_line = i == 0 ? first : (blank || !lines[i].empty());
    out += (indent_line ? indention : "") + lines[i];
  }
  return out;
}

// Jinja2's title: a word starts after '-', whitespace or an opening bracket.
std::string jinja_title(const std::string& text) {
  std::string out;
  bool at_start = true;
  for (const char c : text) {
    const bool boundary = c == '-' || c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '(' || c == '{' ||
                          c == '[' || c == '<';
    if (boundary) {
      out += c;
      at_start = true;
      continue;
    }
    out += at_start ? static_cast<char>(std::toupper(static_cast<unsigned char>(c)))
                    : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    at_start = false;
  }
  return out;
}

Value call_method(const Value& self, const char* name, const CallArgs& args) {
  Value method = bound_method(self, name);
  CallArgs copy = args;
  return (*method.callable)(copy);
}

const std::unordered_map<std::string, Filter>& filters() {
  static const std::unordered_map<std::string, Filter> table = {
      {"trim", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         return Value::of(python_strip(to_str(v), a.get_or(0, "chars", Value::none()), StripSide::both));
       }},
      {"tojson", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         a.allow(0, {"ensure_ascii", "indent", "separators", "sort_keys"}, "tojson");
         return Value::of(json_dump(v, truthy(a.get_or(99, "ensure_ascii", Value::of(false))),
                                    a.get_or(99, "indent", Value::none()), a.get_or(99, "separators", Value::none()),
                                    truthy(a.get_or(99, "sort_keys", Value::of(false)))));
       }},
      {"length", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(length_of(v)); }},
      {"count", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(length_of(v)); }},
      {"first", [](const Value& v, const CallArgs&, const SizeLimits&) {
         const List items = items_of(v);
         return items.empty() ? Value::undefined("first of an empty sequence") : items.front();
       }},
      {"last", [](const Value& v, const CallArgs&, const SizeLimits&) {
         const List items = items_of(v);
         return items.empty() ? Value::undefined("last of an empty sequence") : items.back();
       }},
      {"join", [](const Value& v, const CallArgs& a, const SizeLimits& limits) {
         const std::string separator = to_str(a.get_or(0, "d", Value::of("")));
         const Value* attribute = a.get(1, "attribute");
         std::string out;
         bool first = true;
         for (const Value& item : items_of(v)) {
           out += (first ? "" : separator) + to_str(attribute ? attribute_path(item, *attribute) : item);
           first = false;
           if (out.size() > limits.max_string_bytes) throw TemplateError("join past the size limit");
         }
         return Value::of(out);
       }},
      {"default", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         const bool boolean = truthy(a.get_or(1, "boolean", Value::of(false)));
         const bool use_default = v.is(Kind::undefined) || (boolean && !truthy(v));
         return use_default ? a.get_or(0, "default_value", Value::of("")) : v;
       }},
      {"items", [](const Value& v, const CallArgs&, const SizeLimits&) {
         if (v.is(Kind::undefined)) return Value::of(List{});
         if (!v.is(Kind::dict)) throw TemplateError(std::string("items: expected a dict, got ") + type_name(v));
         return call_method(v, "items", {});
       }},
      {"dictsort", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         if (!v.is(Kind::dict)) throw TemplateError(std::string("dictsort: expected a dict, got ") + type_name(v));
         const bool case_sensitive = truthy(a.get_or(0, "case_sensitive", Value::of(false)));
         const bool by_value = to_str(a.get_or(1, "by", Value::of("key"))) == "value";
         const bool reverse = truthy(a.get_or(2, "reverse", Value::of(false)));
         List pairs = *call_method(v, "items", {}).list;
         std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
           const size_t at = by_value ? 1 : 0;
           const Value kx = sort_key((*x.list)[at], case_sensitive), ky = sort_key((*y.list)[at], case_sensitive);
           return reverse ? less(ky, kx) : less(kx, ky);
         });
         return Value::of(std::move(pairs));
       }},
      {"replace", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         CallArgs args;
         args.positional = {a.get_or(0, "old", Value::of("")), a.get_or(1, "new", Value::of("")),
                            a.get_or(2, "count", Value::none())};
         return call_method(Value::of(to_str(v)), "replace", args);
       }},
      {"upper", [](const Value& v, const CallArgs&, const SizeLimits&) { return call_method(Value::of(to_str(v)), "upper", {}); }},
      {"lower", [](const Value& v, const CallArgs&, const SizeLimits&) { return call_method(Value::of(to_str(v)), "lower", {}); }},
      {"capitalize", [](const Value& v, const CallArgs&, const SizeLimits&) {
         return call_method(Value::of(to_str(v)), "capitalize", {});
       }},
      {"title", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(jinja_title(to_str(v))); }},
      {"string", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(to_str(v)); }},
      // Markup(value): a str (None -> 'None', Undefined -> ''); lib/jinja has no Markup type.
      {"safe", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(to_str(v)); }},
      {"int", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         fail_if_undefined(v);  // int(Undefined) is Jinja2's UndefinedError, not the default
         const Value fallback = a.get_or(0, "default", Value::of(0));
         if (v.is(Kind::integer)) return v;
         if (v.is(Kind::boolean)) return Value::of(static_cast<int64_t>(v.boolean));
         if (v.is(Kind::floating)) {
           return std::isfinite(v.floating) && std::fabs(v.floating) < 9.2e18 ? Value::of(static_cast<int64_t>(v.floating)) : fallback;
         }
         if (v.is(Kind::string)) {
           const std::string s = python_strip(v.text, Value::none(), StripSide::both);
           try {
             size_t used = 0;
             const long long i = std::stoll(s, &used, 10);
             if (used == s.size()) return Value::of(static_cast<int64_t>(i));
             const double d = std::stod(s, &used);
             if (used == s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value::of(static_cast<int64_t>(d));
           } catch (const std::exception&) {
           }
         }
         return fallback;
       }},
      {"float", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         fail_if_undefined(v);
         const Value fallback = a.get_or(0, "default", Value::of(0.0));
         if (v.is_number()) return Value::of(v.as_double());
         if (v.is(Kind::string)) {
           try {
             size_t used = 0;
             const std::string s = python_strip(v.text, Value::none(), StripSide::both);
             const double d = std::stod(s, &used);
             if (used == s.size()) return Value::of(d);
           } catch (const std::exception&) {
           }
         }
         return fallback;
       }},
      {"list", [](const Value& v, const CallArgs&, const SizeLimits&) { return Value::of(items_of(v)); }},
      {"unique", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         const bool case_sensitive = truthy(a.get_or(0, "case_sensitive", Value::of(false)));
         const Value* attribute = a.get(1, "attribute");
         List out, seen;
         for (const Value& item : items_of(v)) {
           const Value key = sort_key(attribute ? attribute_path(item, *attribute) : item, case_sensitive);
           if (!hashable(key)) throw TemplateError(std::string("unhashable type: '") + type_name(key) + "'");
           if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, key); })) {
             seen.push_back(key);
             out.push_back(item);
           }
         }
         return Value::of(std::move(out));
       }},
      {"indent", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         fail_if_undefined(v);
         if (!v.is(Kind::string)) {  // Jinja2 appends "\n" to it, which only a string takes
           throw TemplateError(std::string("unsupported operand type(s) for +=: '") + type_name(v) + "' and 'str'");
         }
         return Value::of(indented(v.text, a.get_or(0, "width", Value::of(4)), truthy(a.get_or(1, "first", Value::of(false))),
                                   truthy(a.get_or(2, "blank", Value::of(false)))));
       }},
      {"selectattr", [](const Value& v, const CallArgs& a, const SizeLimits&) { return selected(v, a, true, true); }},
      {"rejectattr", [](const Value& v, const CallArgs& a, const SizeLimits&) { return selected(v, a, true, false); }},
      {"select", [](const Value& v, const CallArgs& a, const SizeLimits&) { return selected(v, a, false, true); }},
      {"reject", [](const Value& v, const CallArgs& a, const SizeLimits&) { return selected(v, a, false, false); }},
      {"map", filter_map},
      {"attr", [](const Value& v, const CallArgs& a, const SizeLimits&) {  // attributes only: never a dict's key
         fail_if_undefined(v);
         const std::string name = to_str(a.get_or(0, "name", Value::of("")));
         if (v.is(Kind::ns)) return get_attribute(v, name);
         const Value method = bound_method(v, name);
         return method.is(Kind::undefined) ? Value::undefined(std::string(type_name(v)) + " object has no attribute '" + name + "'")
                                           : method;
       }},
      {"reverse", [](const Value& v, const CallArgs&, const SizeLimits&) {
         if (v.is(Kind::string)) return slice_of(v, Value::none(), Value::none(), Value::of(-1));
         List items = items_of(v);
         std::reverse(items.begin(), items.end());
         return Value::of(std::move(items));
       }},
      {"sort", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         const bool reverse = truthy(a.get_or(0, "reverse", Value::of(false)));
         const bool case_sensitive = truthy(a.get_or(1, "case_sensitive", Value::of(false)));
         const Value* attribute = a.get(2, "attribute");
         List items = items_of(v);
         std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
           const Value kx = sort_key(attribute ? attribute_path(x, *attribute) : x, case_sensitive);
           const Value ky = sort_key(attribute ? attribute_path(y, *attribute) : y, case_sensitive);
           if (equals(kx, ky)) return false;  // Jinja2 compares [key] lists: equal keys (two Undefined) stay put
           return reverse ? less(ky, kx) : less(kx, ky);
         });
         return Value::of(std::move(items));
       }},
      {"abs", [](const Value& v, const CallArgs&, const SizeLimits&) {
         if (v.is(Kind::boolean)) return Value::of(static_cast<int64_t>(v.boolean));  // abs(True) is the int 1
         if (!v.is_number()) throw TemplateError(std::string("bad operand type for abs(): '") + type_name(v) + "'");
         if (v.is(Kind::integer) && v.integer != INT64_MIN) return Value::of(v.integer < 0 ? -v.integer : v.integer);
         return Value::of(std::fabs(v.as_double()));
       }},
      {"round", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         if (!v.is_number()) throw TemplateError(std::string("type ") + type_name(v) + " doesn't define __round__ method");
         const int64_t precision = std::clamp<int64_t>(a.get_or(0, "precision", Value::of(0)).integer, 0, 15);
         const std::string method = to_str(a.get_or(1, "method", Value::of("common")));
         if (method == "common") {
           // Python's round(x, n): an int stays one; a float rounds its exact binary value to n
           // decimals, ties to even, as printf does.
           if (!v.is(Kind::floating)) return v.is(Kind::boolean) ? Value::of(static_cast<int64_t>(v.boolean)) : v;
           if (!std::isfinite(v.floating)) return v;
           char text[400];
           std::snprintf(text, sizeof text, "%.*f", static_cast<int>(precision), v.floating);
           return Value::of(std::strtod(text, nullptr));
         }
         const double scale = std::pow(10.0, static_cast<double>(precision)), x = v.as_double() * scale;
         return Value::of((method == "floor" ? std::floor(x) : std::ceil(x)) / scale);
       }},
      {"sum", [](const Value& v, const CallArgs& a, const SizeLimits& limits) {
         const Value* attribute = a.get(0, "attribute");
         Value total = a.get_or(1, "start", Value::of(0));
         for (const Value& item : items_of(v)) {
           const Value x = attribute ? attribute_path(item, *attribute) : item;
           if (!x.is_number() || !total.is_number()) throw TemplateError("sum: items must be numbers");
           if (x.is(Kind::floating) || total.is(Kind::floating)) {
             total = Value::of(total.as_double() + x.as_double());
           } else {
             int64_t r = 0;
             if (__builtin_add_overflow(static_cast<int64_t>(total.as_double()), static_cast<int64_t>(x.as_double()), &r)) {
               throw TemplateError("integer overflow in sum");
             }
             total = Value::of(r);
           }
         }
         (void)limits;
         return total;
       }},
      {"min", [](const Value& v, const CallArgs&, const SizeLimits&) {
         const List items = items_of(v);
         if (items.empty()) return Value::undefined("min of an empty sequence");
         return *std::min_element(items.begin(), items.end(), [](const Value& x, const Value& y) {
           return less(sort_key(x, false), sort_key(y, false));
         });
       }},
      {"max", [](const Value& v, const CallArgs&, const SizeLimits&) {
         const List items = items_of(v);
         if (items.empty()) return Value::undefined("max of an empty sequence");
         return *std::max_element(items.begin(), items.end(), [](const Value& x, const Value& y) {
           return less(sort_key(x, false), sort_key(y, false));
         });
       }},
      {"center", [](const Value& v, const CallArgs& a, const SizeLimits&) {
         const std::string text = to_str(v);
         const int64_t width = std::clamp<int64_t>(a.get_or(0, "width", Value::of(80)).integer, 0, 4096);
         const int64_t n = static_cast<int64_t>(code_point_count(text));
         if (width <= n) return Value::of(text);
         const int64_t pad = width - n, left = pad / 2 + (pad & width & 1);
         return Value::of(std::string(static_cast<size_t>(left), ' ') + text + std::string(static_cast<size_t>(pad - left), ' '));
       }},
      {"wordcount", [](const Value& v, const CallArgs&, const SizeLimits&) {
         // Jinja2 counts the matches of \w+: runs of letters, digits and '_' (any non-ASCII byte
         // taken as a letter).
         int64_t words = 0;
         bool in_word = false;
         for (const char c : to_str(v)) {
           const bool word = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
           words += word && !in_word;
           in_word = word;
         }
         return Value::of(words);
       }},
      {"escape", [](const Value& v, const CallArgs&, const SizeLimits&) {
         std::string out;
         for (const char c : to_str(v)) {
           switch (c) {
             case '&': out += "&amp;"; break;
             case '<': out += "&lt;"; break;
             case '>': out += "&gt;"; break;
             case '"': out += "&#34;"; break;
             case '\'': out += "&#39;"; break;
             default: out += c;
           }
         }
         return Value::of(out);
       }},
  };
  return table;
}

const std::unordered_map<std::string, std::string>& filter_aliases() {
  static const std::unordered_map<std::string, std::string> aliases = {{"d", "default"}, {"e", "escape"}};
  return aliases;
}

bool number_compare(const Value& v, const CallArgs& a, bool (*pred)(const Value&, const Value&)) {
  const Value* other = a.get(0, "other");
  if (!other) throw TemplateError("the comparison test needs a value");
  return pred(v, *other);
}

const std::unordered_map<std::string, Test>& tests() {
  static const std::unordered_map<std::string, Test> table = {
      {"defined", [](const Value& v, const CallArgs&) { return !v.is(Kind::undefined); }},
      {"undefined", [](const Value& v, const CallArgs&) { return v.is(Kind::undefined); }},
      {"none", [](const Value& v, const CallArgs&) { return v.is(Kind::none); }},
      {"boolean", [](const Value& v, const CallArgs&) { return v.is(Kind::boolean); }},
      {"true", [](const Value& v, const CallArgs&) { return v.is(Kind::boolean) && v.boolean; }},
      {"false", [](const Value& v, const CallArgs&) { return v.is(Kind::boolean) && !v.boolean; }},
      {"integer", [](const Value& v, const CallArgs&) { return v.is(Kind::integer); }},
      {"float", [](const Value& v, const CallArgs&) { return v.is(Kind::floating); }},
      {"number", [](const Value& v, const CallArgs&) { return v.is_number(); }},
      {"string", [](const Value& v, const CallArgs&) { return v.is(Kind::string); }},
      {"mapping", [](const Value& v, const CallArgs&) { return v.is(Kind::dict); }},
      {"iterable", [](const Value& v, const CallArgs&) {
         return v.is(Kind::string) || v.is(Kind::list) || v.is(Kind::dict) || v.is(Kind::undefined);
       }},
      {"sequence", [](const Value& v, const CallArgs&) {
         return v.is(Kind::string) || v.is(Kind::list) || v.is(Kind::dict) || v.is(Kind::undefined);
       }},
      {"callable", [](const Value& v, const CallArgs&) { return v.is(Kind::callable) || v.is(Kind::undefined); }},
      {"escaped", [](const Value&, const CallArgs&) { return false; }},
      {"sameas", [](const Value& v, const CallArgs& a) {
         const Value* other = a.get(0, "other");
         if (!other) throw TemplateError("sameas needs a value");
         const bool singleton = v.is(Kind::none) || v.is(Kind::boolean) || v.is(Kind::undefined);
         return singleton ? v.kind == other->kind && v.boolean == other->boolean : equals(v, *other) && v.kind == other->kind;
       }},
      {"in", [](const Value& v, const CallArgs& a) {
         const Value* container = a.get(0, "seq");
         if (!container) throw TemplateError("the 'in' test needs a sequence");
         return contains(*container, v);  // as the `in` operator
       }},
      {"eq", [](const Value& v, const CallArgs& a) { return number_compare(v, a, equals); }},
      {"ne", [](const Value& v, const CallArgs& a) {
         return number_compare(v, a, [](const Value& x, const Value& y) { return !equals(x, y); });
       }},
      {"lt", [](const Value& v, const CallArgs& a) { return number_compare(v, a, less); }},
      {"gt", [](const Value& v, const CallArgs& a) {
         return number_compare(v, a, [](const Value& x, const Value& y) { return less(y, x); });
       }},
      {"le", [](const Value& v, const CallArgs& a) {
         return number_compare(v, a, [](const Value& x, const Value& y) { return !less(y, x); });
       }},
      {"ge", [](const Value& v, const CallArgs& a) {
         return number_compare(v, a, [](const Value& x, const Value& y) { return !less(x, y); });
       }},
      {"odd", [](const Value& v, const CallArgs&) { return modulo_is(v, Value::of(2), 1); }},  // Jinja2: % 2 == 1
      {"even", [](const Value& v, const CallArgs&) { return modulo_is(v, Value::of(2), 0); }},
      {"divisibleby", [](const Value& v, const CallArgs& a) {
         const Value* n = a.get(0, "num");
         if (!n) throw TemplateError("divisibleby needs a number");
         return modulo_is(v, *n, 0);
       }},
      // str(value).islower() / isupper(), as Jinja2: a cased letter, none of the other case.
      {"lower", [](const Value& v, const CallArgs&) { return truthy(call_method(Value::of(to_str(v)), "islower", {})); }},
      {"upper", [](const Value& v, const CallArgs&) { return truthy(call_method(Value::of(to_str(v)), "isupper", {})); }},
  };
  return table;
}

const std::unordered_map<std::string, std::string>& test_aliases() {
  static const std::unordered_map<std::string, std::string> aliases = {
      {"equalto", "eq"}, {"==", "eq"}, {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"}, {"greaterthan", "gt"},
      {">", "gt"},       {"<=", "le"}, {">=", "ge"}};
  return aliases;
}

template <typename Map>
std::string resolved(const std::string& name, const Map& aliases) {
  const auto it = aliases.find(name);
  return it == aliases.end() ? name : it->second;
}

}  // namespace

bool has_filter(const std::string& name) { return filters().count(resolved(name, filter_aliases())) > 0; }
bool has_test(const std::string& name) { return tests().count(resolved(name, test_aliases())) > 0; }

Value apply_filter(const std::string& name, const Value& subject, const CallArgs& args, const SizeLimits& limits) {
  const auto it = filters().find(resolved(name, filter_aliases()));
  if (it == filters().end()) throw TemplateError("unknown filter '" + name + "'");
  Value v = it->second(subject, args, limits);
  check_size(v, limits);
  return v;
}

bool apply_test(const std::string& name, const Value& subject, const CallArgs& args) {
  const auto it = tests().find(resolved(name, test_aliases()));
  if (it == tests().end()) throw TemplateError("unknown test '" + name + "'");
  return it->second(subject, args);
}

}  // namespace st::jinja
