// The values a chat template computes with, as Jinja2 under Python sees them: None, bool, int,
// float, str (UTF-8, indexed by code point), list, dict (insertion-ordered; any hashable key), a
// namespace (the one mutable object), a callable (macro, global, bound method) and Undefined
// (a missing name or key: prints empty, is false, iterates empty; anything else with it fails).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace st::jinja {

struct Value;
using List = std::vector<Value>;
// Insertion-ordered like a Python dict; lookups are linear (template dicts are small). Keys are
// strings mostly, and whatever Python hashes: ints, floats, bools, None, tuples of those; 1, 1.0
// and True are one key, as in Python.
struct Dict {
  std::vector<std::pair<Value, Value>> items;
  const Value* find(const std::string& key) const;
  const Value* find(const Value& key) const;
  void set(const std::string& key, Value value);
  void set(const Value& key, Value value);  // TemplateError for an unhashable key (a list, a dict)
};

struct CallArgs;
using Function = std::function<Value(CallArgs&)>;

enum class Kind { undefined, none, boolean, integer, floating, string, list, dict, ns, callable };

struct Value {
  Kind kind = Kind::undefined;
  bool boolean = false;
  int64_t integer = 0;
  double floating = 0;
  std::string text;  // string; undefined: the name that was missing (for messages)
  bool tuple = false;  // a list that Python holds as a tuple: prints (a, b), never equals a list
  std::shared_ptr<const List> list;
  std::shared_ptr<const Dict> dict;
  std::shared_ptr<Dict> ns;  // namespace(): attributes assignable by `set ns.x = ...`
  std::shared_ptr<const Function> callable;

  static Value undefined(std::string name = "") {
    Value v;
    v.text = std::move(name);
    return v;
  }
  static Value none() { return make(Kind::none); }
  static Value of(bool b) {
    Value v = make(Kind::boolean);
    v.boolean = b;
    return v;
  }
  static Value of(int64_t i) {
    Value v = make(Kind::integer);
    v.integer = i;
    return v;
  }
  static Value of(int i) { return of(static_cast<int64_t>(i)); }
  static Value of(double d) {
    Value v = make(Kind::floating);
    v.floating = d;
    return v;
  }
  static Value of(std::string s) {
    Value v = make(Kind::string);
    v.text = std::move(s);
    return v;
  }
  static Value of(const char* s) { return of(std::string(s)); }
  static Value of(List l) {
    Value v = make(Kind::list);
    v.list = std::make_shared<const List>(std::move(l));
    return v;
  }
  static Value tuple_of(List l) {
    Value v = of(std::move(l));
    v.tuple = true;
    return v;
  }
  static Value of(Dict d) {
    Value v = make(Kind::dict);
    v.dict = std::make_shared<const Dict>(std::move(d));
    return v;
  }
  static Value function(Function f) {
    Value v = make(Kind::callable);
    v.callable = std::make_shared<const Function>(std::move(f));
    return v;
  }
  static Value namespace_of(Dict d) {
    Value v = make(Kind::ns);
    v.ns = std::make_shared<Dict>(std::move(d));
    return v;
  }

  bool is(Kind k) const { return kind == k; }
  bool is_number() const { return kind == Kind::integer || kind == Kind::floating || kind == Kind::boolean; }
  // Python's int(x) for bool and int, the float for float.
  double as_double() const;

 private:
  static Value make(Kind k) {
    Value v;
    v.kind = k;
    return v;
  }
};

// Python's hash() accepts it: not a list, dict or namespace (a tuple of hashable items is).
bool hashable(const Value& v);

// Python's type name of a value ("str", "list", "dict", "NoneType", ...), for messages.
const char* type_name(const Value& v);
// Python's bool(v).
bool truthy(const Value& v);
// Python's ==: 1 == 1.0 == True, lists and dicts compared deeply.
bool equals(const Value& a, const Value& b);
// Python's <: numbers, strings by code point, lists element by element; TemplateError otherwise.
bool less(const Value& a, const Value& b);
// Python's str(v) (Undefined prints as ""), and repr(v) as `| string` of a list writes items.
std::string to_str(const Value& v);
std::string repr(const Value& v);
// A float as Python's repr writes it: 1.0, 0.1, 1e-05, 1e+16, inf, nan.
std::string float_repr(double d);

// A JSON document (the messages, tools, kwargs) as template values, key order kept.
Value from_json(const nlohmann::ordered_json& json);

// Where an iterable's items come from: a list's items, a dict's keys, a string's characters,
// nothing for Undefined; TemplateError for anything else.
List items_of(const Value& v);

}  // namespace st::jinja
