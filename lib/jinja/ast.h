// A parsed template: statements holding expressions. One node type each, with the meaning of
// its fields per kind given below, so that the parser and the renderer read as two switches.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/value.h"

namespace st::jinja {

enum class ExprKind {
  literal,      // value
  name,         // name
  list,         // children: items
  tuple,        // children: items (a list at run time)
  dict,         // children: key, value, key, value ...
  attribute,    // children[0].name
  item,         // children[0][children[1]]
  slice,        // children[0][children[1]:children[2]:children[3]] (each may be null)
  call,         // children[0](children[1..], keywords)
  filter,       // children[0] | name(children[1..], keywords); children[0] null in a filter block
  test,         // children[0] is [not] name(children[1..]); negated
  unary,        // name ("not", "-", "+") children[0]
  binary,       // children[0] name children[1]: + - * / // % ** ~ and or
  compare,      // children[0] ops[0] children[1] ops[1] children[2] ...: == != < <= > >= in notin
  conditional,  // children[1] if children[0] else children[2] (null: Undefined)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind = ExprKind::literal;
  int line = 0;
  Value value;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  std::vector<std::string> ops;
  bool negated = false;
  int height = 1;  // of the tree below: the renderer recurses this deep
};

enum class StmtKind {
  text,          // text
  output,        // {{ expr }}
  if_chain,      // branches: (condition, body) ...; else_body
  for_loop,      // for names in expr [if condition] body [else else_body]
  set,           // set names = expr, or set target.attribute = expr (target non-null)
  set_block,     // {% set names[0] | filters %} body {% endset %}
  macro,         // {% macro name(params) %} body
  call_block,    // {% call(params) expr %} body: expr called with caller() rendering body
  filter_block,  // {% filter filters %} body
  loop_break,
  loop_continue,
  generation,    // {% generation %} body: the assistant's text (transformers' AssistantTracker)
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  StmtKind kind = StmtKind::text;
  int line = 0;
  std::string text;                  // text; macro: its name; set: the attribute of `target`
  std::vector<std::string> names;    // for and set targets
  ExprPtr expr;                      // output, for (iterable), set (value), call_block (the call)
  ExprPtr condition;                 // for ... if condition
  ExprPtr target;                    // set target.attribute = ...
  std::vector<ExprPtr> filters;      // set_block, filter_block: filter nodes with a null subject
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro and caller parameters (default or null)
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body body, else_body;
};

}  // namespace st::jinja
