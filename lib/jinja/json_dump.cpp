// json.dumps as transformers' `tojson` filter calls it (ensure_ascii False by default, indent,
// separators, sort_keys), so that tool schemas and arguments print byte for byte as in Python.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/template_error.h"
#include "jinja/utf8_text.h"

namespace st::jinja {
namespace {

void escape_into(std::string& out, const std::string& text, bool ensure_ascii) {
  out += '"';
  char buf[16];
  for (const char32_t c : decode_utf8(text)) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || (ensure_ascii && c >= 0x7f)) {
          if (c >= 0x10000) {
            const char32_t v = c - 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", static_cast<unsigned>(0xd800 + (v >> 10)),
                          static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
          } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          }
          out += buf;
        } else {
          out += encode_utf8(std::u32string(1, c));
        }
    }
  }
  out += '"';
}

struct JsonStyle {
  bool ensure_ascii = false;
  bool pretty = false;
  std::string indent, item_separator = ", ", key_separator = ": ";
  bool sort_keys = false;
};

void dump(std::string& out, const Value& v, const JsonStyle& style, int level);

// A dict key as json.dumps writes it: a str as it is, an int, float, bool or None as its JSON
// text (1 -> "1", True -> "true", None -> "null"); any other key is a TypeError there.
std::string key_text(const Value& key, const JsonStyle& style) {
  if (key.is(Kind::string)) return key.text;
  if (!key.is(Kind::none) && !key.is(Kind::boolean) && !key.is_number()) {
    throw TemplateError(std::string("keys must be str, int, float, bool or None, not ") + type_name(key));
  }
  std::string text;
  dump(text, key, style, 0);
  return text;
}

void dump(std::string& out, const Value& v, const JsonStyle& style, int level) {
  if (level > 200) throw TemplateError("tojson: value nested too deeply");
  if (out.size() > (64u << 20)) throw TemplateError("tojson: output too large");
  auto newline = [&](int depth) {
    if (!style.pretty) return;
    out += '\n';
    for (int i = 0; i < depth; ++i) out += style.indent;
  };
  switch (v.kind) {
    case Kind::none: out += "null"; return;
    case Kind::boolean: out += v.boolean ? "true" : "false"; return;
    case Kind::integer: out += std::to_string(v.integer); return;
    case Kind::floating:
      if (std::isnan(v.floating)) {
        out += "NaN";
      } else if (std::isinf(v.floating)) {
        out += v.floating > 0 ? "Infinity" : "-Infinity";
      } else {
        out += float_repr(v.floating);
      }
      return;
    case Kind::string: escape_into(out, v.text, style.ensure_ascii); return;
    case Kind::list: {
      if (v.list->empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i) out += style.item_separator;
        newline(level + 1);
        dump(out, (*v.list)[i], style, level + 1);
      }
      newline(level);
      out += ']';
      return;
    }
    case Kind::dict: {
      if (v.dict->items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& item : v.dict->items) items.push_back(&item);
      if (style.sort_keys) {  // sorted by the keys themselves, as json.dumps sorts before converting them
        std::stable_sort(items.begin(), items.end(), [](const auto* a, const auto* b) { return less(a->first, b->first); });
      }
      out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i) out += style.item_separator;
        newline(level + 1);
        escape_into(out, key_text(items[i]->first, style), style.ensure_ascii);
        out += style.key_separator;
        dump(out, items[i]->second, style, level + 1);
      }
      newline(level);
      out += '}';
      return;
    }
    default:
      throw TemplateError(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string json_dump(const Value& v, bool ensure_ascii, const Value& indent, const Value& separators, bool sort_keys) {
  JsonStyle style;
  style.ensure_ascii = ensure_ascii;
  style.sort_keys = sort_keys;
  if (indent.is(Kind::integer) || indent.is(Kind::string)) {
    style.pretty = true;
    style.item_separator = ",";
    style.indent = indent.is(Kind::string) ? indent.text : std::string(static_cast<size_t>(std::clamp<int64_t>(indent.integer, 0, 64)), ' ');
  } else if (!indent.is(Kind::none) && !indent.is(Kind::undefined)) {
    throw TemplateError("tojson: indent must be None, an int or a str");
  }
  if (separators.is(Kind::list)) {
    if (separators.list->size() != 2 || !(*separators.list)[0].is(Kind::string) || !(*separators.list)[1].is(Kind::string)) {
      throw TemplateError("tojson: separators must be a pair of strings");
    }
    style.item_separator = (*separators.list)[0].text;
    style.key_separator = (*separators.list)[1].text;
  } else if (!separators.is(Kind::none) && !separators.is(Kind::undefined)) {
    throw TemplateError("tojson: separators must be None or a pair of strings");
  }
  std::string out;
  dump(out, v, style, 0);
  return out;
}

}  // namespace st::jinja
