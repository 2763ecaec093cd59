// Attribute, item and slice lookup, and the Python methods templates call on str, dict and
// list, under the immutable sandbox transformers renders in: a method that would change its
// object (list.append, dict.update ...) is refused as Jinja2's SecurityError refuses it.
#include <algorithm>
#include <set>

#include "jinja/builtins.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace st::jinja {

const Value* CallArgs::get(size_t index, const char* name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [key, value] : keywords) {
    if (key == name) return &value;
  }
  return nullptr;
}

Value CallArgs::get_or(size_t index, const char* name, Value fallback) const {
  const Value* v = get(index, name);
  return v ? *v : std::move(fallback);
}

void CallArgs::allow(size_t count, std::initializer_list<const char*> names, const std::string& what) const {
  if (positional.size() > count) {
    throw TemplateError(what + " takes at most " + std::to_string(count) + " positional argument(s), " +
                        std::to_string(positional.size()) + " given");
  }
  for (const auto& keyword : keywords) {
    if (std::none_of(names.begin(), names.end(), [&](const char* n) { return keyword.first == n; })) {
      throw TemplateError(what + " got an unexpected keyword argument '" + keyword.first + "'");
    }
  }
}

void check_size(const Value& v, const SizeLimits& limits) {
  if (v.is(Kind::string) && v.text.size() > limits.max_string_bytes) {
    throw TemplateError("a string past the size limit (" + std::to_string(limits.max_string_bytes) + " bytes)");
  }
  if (v.is(Kind::list) && v.list->size() > limits.max_list_items) {
    throw TemplateError("a list past the size limit (" + std::to_string(limits.max_list_items) + " items)");
  }
}

std::string python_strip(const std::string& text, const Value& chars, StripSide side) {
  const bool whitespace = chars.is(Kind::none) || chars.is(Kind::undefined);
  if (!whitespace && !chars.is(Kind::string)) throw TemplateError("strip arg must be None or str");
  const std::u32string set = whitespace ? U"" : decode_utf8(chars.text);
  auto stripped = [&](char32_t c) { return whitespace ? is_python_space(c) : set.find(c) != std::u32string::npos; };
  const std::u32string cps = decode_utf8(text);
  size_t begin = 0, end = cps.size();
  if (side != StripSide::right) {
    while (begin < end && stripped(cps[begin])) ++begin;
  }
  if (side != StripSide::left) {
    while (end > begin && stripped(cps[end - 1])) --end;
  }
  return encode_utf8(cps.substr(begin, end - begin));
}

namespace {

std::string ascii_mapped(std::string text, int (*map)(int)) {
  for (char& c : text) {
    if (static_cast<unsigned char>(c) < 0x80) c = static_cast<char>(map(c));
  }
  return text;
}

bool ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// str.title(): a letter after a non-letter starts a word (upper), the rest lower.
std::string python_title(const std::string& text) {
  std::string out = text;
  bool previous_letter = false;
  for (char& c : out) {
    const bool letter = ascii_letter(c);
    if (letter) c = static_cast<char>(previous_letter ? std::tolower(c) : std::toupper(c));
    previous_letter = letter || static_cast<unsigned char>(c) >= 0x80;
  }
  return out;
}

std::vector<std::string> split_whitespace(const std::string& text, int64_t max_split) {
  const std::u32string cps = decode_utf8(text);
  std::vector<std::string> parts;
  size_t i = 0;
  while (i < cps.size()) {
    while (i < cps.size() && is_python_space(cps[i])) ++i;
    if (i >= cps.size()) break;
    if (max_split >= 0 && static_cast<int64_t>(parts.size()) == max_split) {
      size_t end = cps.size();
      while (end > i && is_python_space(cps[end - 1])) --end;
      parts.push_back(encode_utf8(cps.substr(i, end - i)));
      break;
    }
    const size_t start = i;
    while (i < cps.size() && !is_python_space(cps[i])) ++i;
    parts.push_back(encode_utf8(cps.substr(start, i - start)));
  }
  return parts;
}

std::vector<std::string> split_on(const std::string& text, const std::string& sep, int64_t max_split, bool from_right) {
  if (sep.empty()) throw TemplateError("empty separator");
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    for (size_t at = text.find(sep); at != std::string::npos && (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split);
         at = text.find(sep, start)) {
      parts.push_back(text.substr(start, at - start));
      start = at + sep.size();
    }
    parts.push_back(text.substr(start));
    return parts;
  }
  size_t end = text.size();
  while (max_split < 0 || static_cast<int64_t>(parts.size()) < max_split) {
    if (end < sep.size()) break;
    const size_t at = text.rfind(sep, end - sep.size());
    if (at == std::string::npos) break;
    parts.push_back(text.substr(at + sep.size(), end - at - sep.size()));
    end = at;
  }
  parts.push_back(text.substr(0, end));
  std::reverse(parts.begin(), parts.end());
  return parts;
}

Value list_of_strings(const std::vector<std::string>& parts) {
  List out;
  for (const std::string& p : parts) out.push_back(Value::of(p));
  return Value::of(std::move(out));
}

int64_t integer_arg(const CallArgs& args, size_t index, const char* name, int64_t fallback) {
  const Value* v = args.get(index, name);
  if (!v || v->is(Kind::none)) return fallback;
  if (v->is(Kind::integer)) return v->integer;
  if (v->is(Kind::boolean)) return v->boolean;
  throw TemplateError(std::string("'") + type_name(*v) + "' object cannot be interpreted as an integer");
}

std::string string_arg(const CallArgs& args, size_t index, const char* name, const std::string& method) {
  const Value* v = args.get(index, name);
  if (!v || !v->is(Kind::string)) throw TemplateError(method + "() needs a string argument");
  return v->text;
}

// startswith / endswith: a prefix or a tuple (list) of them.
bool affix_matches(const std::string& text, const Value& affix, bool at_start) {
  auto one = [&](const Value& a) {
    if (!a.is(Kind::string)) throw TemplateError("startswith / endswith need a str or a tuple of str");
    if (a.text.size() > text.size()) return false;
    return at_start ? text.compare(0, a.text.size(), a.text) == 0
                    : text.compare(text.size() - a.text.size(), a.text.size(), a.text) == 0;
  };
  if (affix.is(Kind::list)) return std::any_of(affix.list->begin(), affix.list->end(), one);
  return one(affix);
}

std::string replaced(const std::string& text, const std::string& old, const std::string& with, int64_t count,
                     const SizeLimits& limits) {
  std::string out;
  int64_t done = 0;
  if (old.empty()) {  // Python inserts `with` around every character
    const std::u32string cps = decode_utf8(text);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      if (i < cps.size()) out += encode_utf8(cps.substr(i, 1));
      if (out.size() > limits.max_string_bytes) throw TemplateError("replace() past the size limit");
    }
    return out;
  }
  size_t start = 0;
  for (size_t at = text.find(old); at != std::string::npos && (count < 0 || done < count); at = text.find(old, start)) {
    out.append(text, start, at - start);
    out += with;
    start = at + old.size();
    ++done;
    if (out.size() > limits.max_string_bytes) throw TemplateError("replace() past the size limit");
  }
  return out + text.substr(start);
}

int64_t code_point_index(const std::string& text, size_t byte_offset) {
  return static_cast<int64_t>(code_point_count(text.substr(0, byte_offset)));
}

const std::set<std::string>& mutating_methods() {
  static const std::set<std::string> names = {"append", "extend", "insert", "pop", "remove", "clear", "sort",
                                              "reverse", "update", "setdefault", "popitem", "__setitem__"};
  return names;
}

Value string_method(const std::string& self, const std::string& name) {
  static const SizeLimits limits;
  auto method = [](auto body) { return Value::function(body); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    const StripSide side = name == "strip" ? StripSide::both : name == "lstrip" ? StripSide::left : StripSide::right;
    return method([self, side](CallArgs& args) { return Value::of(python_strip(self, args.get_or(0, "chars", Value::none()), side)); });
  }
  if (name == "split" || name == "rsplit") {
    const bool from_right = name == "rsplit";
    return method([self, from_right](CallArgs& args) {
      const Value sep = args.get_or(0, "sep", Value::none());
      const int64_t max_split = integer_arg(args, 1, "maxsplit", -1);
      if (sep.is(Kind::none)) {
        if (from_right && max_split >= 0) throw TemplateError("rsplit() without a separator is not supported with maxsplit");
        return list_of_strings(split_whitespace(self, max_split));
      }
      if (!sep.is(Kind::string)) throw TemplateError("split() separator must be a str or None");
      return list_of_strings(split_on(self, sep.text, max_split, from_right));
    });
  }
  if (name == "startswith" || name == "endswith") {
    const bool at_start = name == "startswith";
    return method([self, at_start](CallArgs& args) {
      const Value* affix = args.get(0, "prefix");
      if (!affix) throw TemplateError("startswith / endswith need an argument");
      return Value::of(affix_matches(self, *affix, at_start));
    });
  }
  if (name == "replace") {
    return method([self](CallArgs& args) {
      return Value::of(replaced(self, string_arg(args, 0, "old", "replace"), string_arg(args, 1, "new", "replace"),
                                integer_arg(args, 2, "count", -1), limits));
    });
  }
  if (name == "upper") return method([self](CallArgs&) { return Value::of(ascii_mapped(self, ::toupper)); });
  if (name == "lower") return method([self](CallArgs&) { return Value::of(ascii_mapped(self, ::tolower)); });
  if (name == "title") return method([self](CallArgs&) { return Value::of(python_title(self)); });
  if (name == "capitalize") {
    return method([self](CallArgs&) {
      std::string out = ascii_mapped(self, ::tolower);
      if (!out.empty()) out[0] = static_cast<char>(std::toupper(out[0]));
      return Value::of(out);
    });
  }
  if (name == "find" || name == "rfind" || name == "index" || name == "rindex" || name == "count") {
    return method([self, name](CallArgs& args) {
      const std::string sub = string_arg(args, 0, "sub", name);
      if (name == "count") {
        if (sub.empty()) return Value::of(static_cast<int64_t>(code_point_count(self) + 1));
        int64_t n = 0;
        for (size_t at = self.find(sub); at != std::string::npos; at = self.find(sub, at + sub.size())) ++n;
        return Value::of(n);
      }
      const size_t at = name[0] == 'r' ? self.rfind(sub) : self.find(sub);
      if (at == std::string::npos) {
        if (name == "index" || name == "rindex") throw TemplateError("substring not found");
        return Value::of(static_cast<int64_t>(-1));
      }
      return Value::of(code_point_index(self, at));
    });
  }
  if (name == "join") {
    return method([self](CallArgs& args) {
      const Value* items = args.get(0, "iterable");
      if (!items) throw TemplateError("join() needs an iterable");
      std::string out;
      bool first = true;
      for (const Value& item : items_of(*items)) {
        if (!item.is(Kind::string)) throw TemplateError(std::string("join() expects str items, found ") + type_name(item));
        out += (first ? "" : self) + item.text;
        first = false;
      }
      return Value::of(out);
    });
  }
  if (name == "splitlines") return method([self](CallArgs&) { return list_of_strings(split_lines(self)); });
  if (name == "isdigit" || name == "isalpha" || name == "isspace" || name == "isalnum" || name == "isupper" ||
      name == "islower") {
    return method([self, name](CallArgs&) {
      if (self.empty()) return Value::of(false);
      const std::u32string cps = decode_utf8(self);
      bool cased = false, ok = true;
      for (const char32_t c : cps) {
        const bool digit = c >= '0' && c <= '9';
        const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80;
        if (name == "isdigit") ok = ok && digit;
        if (name == "isalpha") ok = ok && alpha;
        if (name == "isalnum") ok = ok && (alpha || digit);
        if (name == "isspace") ok = ok && is_python_space(c);
        if (name == "isupper") {
          ok = ok && !(c >= 'a' && c <= 'z');
          cased = cased || (c >= 'A' && c <= 'Z');
        }
        if (name == "islower") {
          ok = ok && !(c >= 'A' && c <= 'Z');
          cased = cased || (c >= 'a' && c <= 'z');
        }
      }
      return Value::of(ok && (name == "isupper" || name == "islower" ? cased : true));
    });
  }
  return Value::undefined();
}

Value dict_method(const Value& self, const std::string& name) {
  if (name == "get") {
    return Value::function([self](CallArgs& args) {
      const Value* key = args.get(0, "key");
      if (!key) throw TemplateError("get() needs a key");
      const Value* found = hashable(*key) ? self.dict->find(*key) : nullptr;
      return found ? *found : args.get_or(1, "default", Value::none());
    });
  }
  if (name == "items" || name == "keys" || name == "values") {
    return Value::function([self, name](CallArgs&) {
      List out;
      for (const auto& [key, value] : self.dict->items) {
        if (name == "items") out.push_back(Value::tuple_of(List{key, value}));
        if (name == "keys") out.push_back(key);
        if (name == "values") out.push_back(value);
      }
      return Value::of(std::move(out));
    });
  }
  if (name == "copy") return Value::function([self](CallArgs&) { return self; });
  return Value::undefined();
}

Value list_method(const Value& self, const std::string& name) {
  if (name == "index" || name == "count") {
    return Value::function([self, name](CallArgs& args) {
      const Value* item = args.get(0, "value");
      if (!item) throw TemplateError(name + "() needs an argument");
      int64_t count = 0;
      for (size_t i = 0; i < self.list->size(); ++i) {
        if (!equals((*self.list)[i], *item)) continue;
        if (name == "index") return Value::of(static_cast<int64_t>(i));
        ++count;
      }
      if (name == "index") throw TemplateError("list.index(x): x not in list");
      return Value::of(count);
    });
  }
  if (name == "copy") return Value::function([self](CallArgs&) { return self; });
  return Value::undefined();
}

std::string object_name(const Value& v) {
  return v.is(Kind::none) ? "'None'" : std::string("'") + type_name(v) + " object'";
}

// Python's slice.indices(n).
void slice_indices(int64_t n, const Value& start_v, const Value& stop_v, const Value& step_v, int64_t& start,
                   int64_t& stop, int64_t& step) {
  auto bound = [](const Value& v, int64_t fallback) {
    if (v.is(Kind::none) || v.is(Kind::undefined)) return fallback;
    if (v.is(Kind::integer)) return v.integer;
    if (v.is(Kind::boolean)) return static_cast<int64_t>(v.boolean);
    throw TemplateError("slice indices must be integers or None");
  };
  step = bound(step_v, 1);
  if (step == 0) throw TemplateError("slice step cannot be zero");
  if (step == INT64_MIN) step = -INT64_MAX;
  auto clamp = [&](int64_t i, bool is_start) {
    if (i < 0) {
      i += n;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= n) {
      i = step < 0 ? n - 1 : n;
    }
    (void)is_start;
    return i;
  };
  const bool start_none = start_v.is(Kind::none) || start_v.is(Kind::undefined);
  const bool stop_none = stop_v.is(Kind::none) || stop_v.is(Kind::undefined);
  start = start_none ? (step < 0 ? n - 1 : 0) : clamp(bound(start_v, 0), true);
  stop = stop_none ? (step < 0 ? -1 : n) : clamp(bound(stop_v, 0), false);
}

}  // namespace

Value bound_method(const Value& self, const std::string& name) {
  if ((self.is(Kind::list) || self.is(Kind::dict)) && mutating_methods().count(name)) {
    const std::string type = type_name(self);
    return Value::function([type, name](CallArgs&) -> Value {
      throw TemplateError("access to attribute '" + name + "' of '" + type +
                          "' object is unsafe (templates render in an immutable sandbox, as in transformers)");
    });
  }
  switch (self.kind) {
    case Kind::string: return string_method(self.text, name);
    case Kind::dict: return dict_method(self, name);
    case Kind::list: return list_method(self, name);
    default: return Value::undefined();
  }
}

Value get_attribute(const Value& object, const std::string& name) {
  if (object.is(Kind::undefined)) throw TemplateError(object.text.empty() ? "'" + name + "' of an undefined value" : object.text);
  if (object.is(Kind::ns)) {
    const Value* v = object.ns->find(name);
    return v ? *v : Value::undefined("'Namespace object' has no attribute '" + name + "'");
  }
  Value method = bound_method(object, name);
  if (!method.is(Kind::undefined)) return method;
  if (object.is(Kind::dict)) {
    if (const Value* v = object.dict->find(name)) return *v;
  }
  return Value::undefined(object_name(object) + " has no attribute '" + name + "'");
}

Value get_item(const Value& object, const Value& key) {
  if (object.is(Kind::undefined)) throw TemplateError(object.text.empty() ? "item of an undefined value" : object.text);
  if (object.is(Kind::dict) && hashable(key)) {
    if (const Value* v = object.dict->find(key)) return *v;
  }
  if (object.is(Kind::ns) && key.is(Kind::string)) return get_attribute(object, key.text);
  if ((object.is(Kind::list) || object.is(Kind::string)) && (key.is(Kind::integer) || key.is(Kind::boolean))) {
    int64_t i = key.is(Kind::boolean) ? key.boolean : key.integer;
    if (object.is(Kind::list)) {
      const int64_t n = static_cast<int64_t>(object.list->size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return (*object.list)[static_cast<size_t>(i)];
      return Value::undefined(object_name(object) + " has no element " + std::to_string(key.integer));
    }
    const std::u32string cps = decode_utf8(object.text);
    const int64_t n = static_cast<int64_t>(cps.size());
    if (i < 0) i += n;
    if (i >= 0 && i < n) return Value::of(encode_utf8(cps.substr(static_cast<size_t>(i), 1)));
    return Value::undefined("string index out of range");
  }
  if (key.is(Kind::string)) return get_attribute(object, key.text);
  return Value::undefined(object_name(object) + " has no element " + repr(key));
}

Value slice_of(const Value& object, const Value& start_v, const Value& stop_v, const Value& step_v) {
  if (object.is(Kind::undefined)) throw TemplateError(object.text.empty() ? "slice of an undefined value" : object.text);
  if (!object.is(Kind::list) && !object.is(Kind::string)) {
    throw TemplateError(std::string("'") + type_name(object) + "' object is not subscriptable");
  }
  const bool ascii = object.is(Kind::string) && is_ascii(object.text);
  const std::u32string cps = object.is(Kind::string) && !ascii ? decode_utf8(object.text) : U"";
  const int64_t n = object.is(Kind::list) ? static_cast<int64_t>(object.list->size())
                                          : static_cast<int64_t>(ascii ? object.text.size() : cps.size());
  int64_t start = 0, stop = 0, step = 1;
  slice_indices(n, start_v, stop_v, step_v, start, stop, step);
  std::vector<size_t> positions;
  for (int64_t i = start; step > 0 ? i < stop : i > stop;) {
    positions.push_back(static_cast<size_t>(i));
    if (__builtin_add_overflow(i, step, &i)) break;
  }
  if (object.is(Kind::list)) {
    List out;
    for (const size_t i : positions) out.push_back((*object.list)[i]);
    return Value::of(std::move(out));
  }
  if (ascii) {
    std::string out;
    for (const size_t i : positions) out += object.text[i];
    return Value::of(std::move(out));
  }
  std::u32string out;
  for (const size_t i : positions) out += cps[i];
  return Value::of(encode_utf8(out));
}

}  // namespace st::jinja
