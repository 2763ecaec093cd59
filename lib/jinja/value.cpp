#include "jinja/value.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace st::jinja {

const Value* Dict::find(const std::string& key) const {
  for (const auto& [k, v] : items) {
    if (k.is(Kind::string) && k.text == key) return &v;
  }
  return nullptr;
}

const Value* Dict::find(const Value& key) const {
  if (key.is(Kind::string)) return find(key.text);
  for (const auto& [k, v] : items) {
    if (!k.is(Kind::string) && equals(k, key)) return &v;
  }
  return nullptr;
}

void Dict::set(const std::string& key, Value value) { set(Value::of(key), std::move(value)); }

void Dict::set(const Value& key, Value value) {
  if (!hashable(key)) throw TemplateError(std::string("unhashable type: '") + type_name(key) + "'");
  for (auto& [k, v] : items) {
    if (k.kind == Kind::string ? key.is(Kind::string) && k.text == key.text : !key.is(Kind::string) && equals(k, key)) {
      v = std::move(value);  // Python keeps the first key written (1 stays 1 after 1.0 is set)
      return;
    }
  }
  items.emplace_back(key, std::move(value));
}

bool hashable(const Value& v) {
  switch (v.kind) {
    case Kind::dict:
    case Kind::ns: return false;
    case Kind::list:
      return v.tuple && std::all_of(v.list->begin(), v.list->end(), [](const Value& item) { return hashable(item); });
    default: return true;
  }
}

double Value::as_double() const {
  switch (kind) {
    case Kind::boolean: return boolean ? 1 : 0;
    case Kind::integer: return static_cast<double>(integer);
    case Kind::floating: return floating;
    default: throw TemplateError(std::string("expected a number, got ") + type_name(*this));
  }
}

const char* type_name(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "NoneType";
    case Kind::boolean: return "bool";
    case Kind::integer: return "int";
    case Kind::floating: return "float";
    case Kind::string: return "str";
    case Kind::list: return v.tuple ? "tuple" : "list";
    case Kind::dict: return "dict";
    case Kind::ns: return "Namespace";
    case Kind::callable: return "function";
  }
  return "?";
}

bool truthy(const Value& v) {
  switch (v.kind) {
    case Kind::undefined:
    case Kind::none: return false;
    case Kind::boolean: return v.boolean;
    case Kind::integer: return v.integer != 0;
    case Kind::floating: return v.floating != 0;
    case Kind::string: return !v.text.empty();
    case Kind::list: return !v.list->empty();
    case Kind::dict: return !v.dict->items.empty();
    case Kind::ns:
    case Kind::callable: return true;
  }
  return false;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Kind::floating && b.kind != Kind::floating) {
      return (a.kind == Kind::boolean ? a.boolean : a.integer) == (b.kind == Kind::boolean ? b.boolean : b.integer);
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Kind::undefined:
    case Kind::none: return true;
    case Kind::string: return a.text == b.text;
    case Kind::list: {
      if (a.list->size() != b.list->size() || a.tuple != b.tuple) return false;
      for (size_t i = 0; i < a.list->size(); ++i) {
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      }
      return true;
    }
    case Kind::dict: {
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [key, value] : a.dict->items) {
        const Value* other = b.dict->find(key);
        if (!other || !equals(value, *other)) return false;
      }
      return true;
    }
    case Kind::ns: return a.ns == b.ns;
    case Kind::callable: return a.callable == b.callable;
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.as_double() < b.as_double();
  if (a.is(Kind::string) && b.is(Kind::string)) return a.text < b.text;  // UTF-8 bytes sort as code points
  if (a.is(Kind::list) && b.is(Kind::list) && a.tuple == b.tuple) {  // a list and a tuple do not compare
    const List &x = *a.list, &y = *b.list;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return less(x[i], y[i]);
    }
    return x.size() < y.size();
  }
  throw TemplateError(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" +
                      type_name(b) + "'");
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto result = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  const std::string sci(buf, result.ptr);  // [-]d[.ddd]e[+-]xx, the shortest that round-trips
  const size_t e = sci.find('e');
  const bool negative = sci[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < e; ++i) {
    if (sci[i] != '.') digits += sci[i];
  }
  const int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out + exp;
}

namespace {

// Python's repr of a str: single quotes unless the text holds ' and no ", escapes for the quote,
// backslash and the characters Python does not print.
std::string string_repr(const std::string& text) {
  const bool double_quotes = text.find('\'') != std::string::npos && text.find('"') == std::string::npos;
  const char quote = double_quotes ? '"' : '\'';
  std::string out(1, quote);
  char buf[16];
  for (const char32_t c : decode_utf8(text)) {
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || (c >= 0x7f && c <= 0xa0) || c == 0xad) {
      std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      out += buf;
    } else if ((c >= 0xdc80 && c <= 0xdcff) || (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
               (c >= 0x2060 && c <= 0x2064) || c == 0xfeff) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += encode_utf8(std::u32string(1, c));
    }
  }
  return out + quote;
}

}  // namespace

std::string repr(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return "Undefined";
    case Kind::none: return "None";
    case Kind::boolean: return v.boolean ? "True" : "False";
    case Kind::integer: return std::to_string(v.integer);
    case Kind::floating: return float_repr(v.floating);
    case Kind::string: return string_repr(v.text);
    case Kind::list: {
      std::string out = v.tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) out += (i ? ", " : "") + repr((*v.list)[i]);
      return out + (v.tuple ? (v.list->size() == 1 ? ",)" : ")") : "]");
    }
    case Kind::dict:
    case Kind::ns: {
      const Dict& d = v.kind == Kind::dict ? *v.dict : *v.ns;
      std::string out = v.kind == Kind::ns ? "<Namespace {" : "{";
      for (size_t i = 0; i < d.items.size(); ++i) {
        out += (i ? ", " : "") + repr(d.items[i].first) + ": " + repr(d.items[i].second);
      }
      return out + (v.kind == Kind::ns ? "}>" : "}");
    }
    case Kind::callable: return "<function>";
  }
  return "";
}

std::string to_str(const Value& v) {
  if (v.is(Kind::string)) return v.text;
  if (v.is(Kind::undefined)) return "";
  return repr(v);
}

Value from_json(const nlohmann::ordered_json& json) {
  switch (json.type()) {
    case nlohmann::ordered_json::value_t::null: return Value::none();
    case nlohmann::ordered_json::value_t::boolean: return Value::of(json.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value::of(json.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      const uint64_t u = json.get<uint64_t>();
      return u > static_cast<uint64_t>(INT64_MAX) ? Value::of(static_cast<double>(u)) : Value::of(static_cast<int64_t>(u));
    }
    case nlohmann::ordered_json::value_t::number_float: return Value::of(json.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value::of(json.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List list;
      list.reserve(json.size());
      for (const auto& item : json) list.push_back(from_json(item));
      return Value::of(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      dict.items.reserve(json.size());
      for (const auto& [key, item] : json.items()) dict.items.emplace_back(Value::of(key), from_json(item));
      return Value::of(std::move(dict));
    }
    default: return Value::none();
  }
}

List items_of(const Value& v) {
  switch (v.kind) {
    case Kind::undefined: return {};
    case Kind::list: return *v.list;
    case Kind::dict: {
      List keys;
      for (const auto& item : v.dict->items) keys.push_back(item.first);
      return keys;
    }
    case Kind::string: {
      List chars;
      for (const char32_t c : decode_utf8(v.text)) chars.push_back(Value::of(encode_utf8(std::u32string(1, c))));
      return chars;
    }
    default: throw TemplateError(std::string("'") + type_name(v) + "' object is not iterable");
  }
}

}  // namespace st::jinja
