// The tree-walking renderer: statements write to an output buffer, expressions evaluate to
// Values. Scopes follow Jinja2: a for loop's body has its own (a `set` inside does not leak out;
// namespace() is the way out), if blocks share their parent's, a macro sees the template's
// top-level names and its arguments.
#include <cmath>
#include <unordered_map>

#include "jinja/ast.h"
#include "jinja/parser.h"
#include "jinja/python_float.h"
#include "jinja/template.h"

namespace st::jinja {

Value make_global(const std::string& name, const RenderOptions& options);  // globals.cpp

namespace {

struct Scope {
  std::unordered_map<std::string, Value> vars;
  const Scope* parent = nullptr;

  const Value* find(const std::string& name) const {
    for (const Scope* s = this; s; s = s->parent) {
      const auto it = s->vars.find(name);
      if (it != s->vars.end()) return &it->second;
    }
    return nullptr;
  }
};

enum class Flow { normal, loop_break, loop_continue };

// An int64 result, or TemplateError where Python's unbounded int would go past 64 bits.
template <typename Op>
Value integer_result(Op op, int64_t a, int64_t b, const char* name) {
  int64_t r = 0;
  if (op(a, b, &r)) throw TemplateError(std::string("integer overflow in '") + name + "'");
  return Value::of(r);
}
bool add_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); }
bool sub_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); }
bool mul_overflows(int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); }

bool is_integral(const Value& v) { return v.is(Kind::integer) || v.is(Kind::boolean); }
int64_t integral(const Value& v) { return v.is(Kind::boolean) ? v.boolean : v.integer; }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is(Kind::undefined) && !a.text.empty()) throw TemplateError(a.text);
  if (b.is(Kind::undefined) && !b.text.empty()) throw TemplateError(b.text);
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) + "'");
}

Value repeated(const Value& sequence, int64_t times, const SizeLimits& limits) {
  const size_t n = times > 0 ? static_cast<size_t>(times) : 0;
  if (sequence.is(Kind::string)) {
    if (n && sequence.text.size() * n / n != sequence.text.size()) throw TemplateError("string repetition too large");
    if (sequence.text.size() * n > limits.max_string_bytes) {
      throw TemplateError("string repetition past the size limit (" + std::to_string(limits.max_string_bytes) + " bytes)");
    }
    std::string out;
    out.reserve(sequence.text.size() * n);
    for (size_t i = 0; i < n; ++i) out += sequence.text;
    return Value::of(std::move(out));
  }
  if (n && sequence.list->size() * n > limits.max_list_items) throw TemplateError("list repetition past the size limit");
  List out;
  for (size_t i = 0; i < n; ++i) out.insert(out.end(), sequence.list->begin(), sequence.list->end());
  return sequence.tuple ? Value::tuple_of(std::move(out)) : Value::of(std::move(out));  // a tuple stays one
}

}  // namespace

Value arithmetic(const std::string& op, const Value& a, const Value& b, const SizeLimits& limits) {
  const bool numbers = a.is_number() && b.is_number();
  const bool integers = is_integral(a) && is_integral(b);
  if (op == "+") {
    if (integers) return integer_result(add_overflows, integral(a), integral(b), "+");
    if (numbers) return Value::of(a.as_double() + b.as_double());
    if (a.is(Kind::string) && b.is(Kind::string)) return Value::of(a.text + b.text);
    if (a.is(Kind::list) && b.is(Kind::list)) {
      if (a.tuple != b.tuple) {
        throw TemplateError(std::string("can only concatenate ") + type_name(a) + " (not \"" + type_name(b) + "\") to " +
                            type_name(a));
      }
      List out = *a.list;
      out.insert(out.end(), b.list->begin(), b.list->end());
      return a.tuple ? Value::tuple_of(std::move(out)) : Value::of(std::move(out));
    }
  } else if (op == "-") {
    if (integers) return integer_result(sub_overflows, integral(a), integral(b), "-");
    if (numbers) return Value::of(a.as_double() - b.as_double());
  } else if (op == "*") {
    if (integers) return integer_result(mul_overflows, integral(a), integral(b), "*");
    if (numbers) return Value::of(a.as_double() * b.as_double());
    if ((a.is(Kind::string) || a.is(Kind::list)) && is_integral(b)) return repeated(a, integral(b), limits);
    if ((b.is(Kind::string) || b.is(Kind::list)) && is_integral(a)) return repeated(b, integral(a), limits);
  } else if (op == "/") {
    if (numbers) {
      if (b.as_double() == 0) throw TemplateError("division by zero");
      return Value::of(a.as_double() / b.as_double());
    }
  } else if (op == "//" || op == "%") {
    if (integers) {
      const int64_t x = integral(a), y = integral(b);
      if (y == 0) throw TemplateError("integer division or modulo by zero");
      if (y == -1) {  // x % -1 is 0; INT64_MIN // -1 leaves int64
        if (op == "%") return Value::of(static_cast<int64_t>(0));
        if (x == INT64_MIN) throw TemplateError("integer overflow in '//'");
      }
      int64_t q = x / y, m = x % y;
      if (m != 0 && ((m < 0) != (y < 0))) {  // Python floors
        q -= 1;
        m += y;
      }
      return Value::of(op == "//" ? q : m);
    }
    if (numbers) {
      const double x = a.as_double(), y = b.as_double();
      if (y == 0) throw TemplateError("float division or modulo by zero");
      const FloatDivmod qm = python_float_divmod(x, y);
      return Value::of(op == "//" ? qm.quotient : qm.remainder);
    }
    if (op == "%" && a.is(Kind::string)) throw TemplateError("printf-style string formatting ('%') is not supported");
  } else if (op == "**") {
    if (integers && integral(b) >= 0) {
      const int64_t base = integral(a), exponent = integral(b);
      if (exponent == 0) return Value::of(static_cast<int64_t>(1));
      if (base == 0 || base == 1) return Value::of(base);
      if (base == -1) return Value::of(static_cast<int64_t>(exponent % 2 == 0 ? 1 : -1));
      int64_t result = 1;  // |base| >= 2: at most 63 products before an overflow
      for (int64_t e = exponent; e > 0; --e) {
        if (__builtin_mul_overflow(result, base, &result)) throw TemplateError("integer overflow in '**'");
      }
      return Value::of(result);
    }
    if (numbers) return Value::of(python_float_pow(a.as_double(), b.as_double()));
  }
  unsupported(op, a, b);
}

namespace {


bool compare(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return equals(a, b);
  if (op == "!=") return !equals(a, b);
  if (op == "<") return less(a, b);
  if (op == ">") return less(b, a);
  if (op == "<=") return !less(b, a);
  if (op == ">=") return !less(a, b);
  if (op == "in") return contains(b, a);
  return !contains(b, a);  // notin
}

class Renderer {
 public:
  Renderer(const RenderOptions& options, RenderedText& out) : options_(options), root_(out), out_(&out.text) {}

  void run(const Body& body, Scope& scope) {
    if (exec(body, scope) != Flow::normal) throw TemplateError("'break' or 'continue' outside a loop");
  }

 private:
  struct DepthGuard {
    DepthGuard(Renderer& r, int line) : renderer(r) {
      if (++renderer.depth_ > renderer.options_.limits.max_depth) {
        throw TemplateError("nested deeper than " + std::to_string(renderer.options_.limits.max_depth) +
                                " levels (a macro calling itself without end?)",
                            line);
      }
      if (++renderer.steps_ > renderer.options_.limits.max_steps) {
        throw TemplateError("ran more than " + std::to_string(renderer.options_.limits.max_steps) +
                                " steps (a loop without end?)",
                            line);
      }
    }
    ~DepthGuard() { --renderer.depth_; }
    Renderer& renderer;
  };

  void write(const std::string& text) {
    if (out_->size() + text.size() > options_.limits.sizes.max_string_bytes) {
      throw TemplateError("output past the size limit (" + std::to_string(options_.limits.sizes.max_string_bytes) +
                          " bytes)");
    }
    *out_ += text;
  }

  Flow exec(const Body& body, Scope& scope) {
    for (const StmtPtr& stmt : body) {
      const Flow flow = exec_located(*stmt, scope);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  Flow exec_located(const Stmt& stmt, Scope& scope) {
    try {
      DepthGuard guard(*this, stmt.line);
      return exec_one(stmt, scope);
    } catch (TemplateError& e) {
      e.set_line_if_unknown(stmt.line);
      throw;
    }
  }

  Flow exec_one(const Stmt& stmt, Scope& scope) {
    switch (stmt.kind) {
      case StmtKind::text: write(stmt.text); return Flow::normal;
      case StmtKind::output: write(to_str(eval(*stmt.expr, scope))); return Flow::normal;
      case StmtKind::if_chain:
        for (const auto& [condition, body] : stmt.branches) {
          if (truthy(eval(*condition, scope))) return exec(body, scope);
        }
        return exec(stmt.else_body, scope);
      case StmtKind::for_loop: return for_loop(stmt, scope);
      case StmtKind::set: {
        Value value = eval(*stmt.expr, scope);
        if (stmt.target) {
          const Value object = eval(*stmt.target, scope);
          if (!object.is(Kind::ns)) {
            throw TemplateError("cannot assign attribute '" + stmt.text + "' on a " + type_name(object) +
                                " (only a namespace() takes attributes)");
          }
          object.ns->set(stmt.text, std::move(value));
        } else {
          assign(stmt.names, std::move(value), scope);
        }
        return Flow::normal;
      }
      case StmtKind::set_block: {  // its body is a scope of its own, as a filter block's and a loop's
        Scope inner{{}, &scope};
        std::string text = captured(stmt.body, inner, stmt.filters);
        scope.vars[stmt.names[0]] = Value::of(std::move(text));
        return Flow::normal;
      }
      case StmtKind::macro: scope.vars[stmt.text] = macro_value(stmt, scope); return Flow::normal;
      case StmtKind::call_block: return call_block(stmt, scope);
      case StmtKind::filter_block: {
        Scope inner{{}, &scope};
        write(captured(stmt.body, inner, stmt.filters));
        return Flow::normal;
      }
      case StmtKind::loop_break: return Flow::loop_break;
      case StmtKind::loop_continue: return Flow::loop_continue;
      case StmtKind::generation: {
        const size_t begin = out_->size();
        const Flow flow = exec(stmt.body, scope);
        if (out_ == &root_.text) root_.generation.emplace_back(begin, out_->size());
        return flow;
      }
    }
    return Flow::normal;
  }

  void assign(const std::vector<std::string>& names, Value value, Scope& scope) {
    if (names.size() == 1) {
      scope.vars[names[0]] = std::move(value);
      return;
    }
    const List items = items_of(value);
    if (items.size() != names.size()) {
      throw TemplateError("cannot unpack " + std::to_string(items.size()) + " values into " +
                          std::to_string(names.size()) + " names");
    }
    for (size_t i = 0; i < names.size(); ++i) scope.vars[names[i]] = items[i];
  }

  // The body rendered into a string of its own, then through `filters` (set and filter blocks).
  std::string captured(const Body& body, Scope& scope, const std::vector<ExprPtr>& filters) {
    std::string buffer;
    std::string* saved = out_;
    out_ = &buffer;
    try {
      if (exec(body, scope) != Flow::normal) throw TemplateError("'break' or 'continue' outside a loop");
    } catch (...) {
      out_ = saved;
      throw;
    }
    out_ = saved;
    Value value = Value::of(std::move(buffer));
    for (const ExprPtr& filter : filters) value = apply_filter(filter->name, value, arguments(*filter, scope, 1), sizes());
    return to_str(value);
  }

  Flow for_loop(const Stmt& stmt, Scope& scope) {
    const List all = items_of(eval(*stmt.expr, scope));
    Scope inner{{}, &scope};
    List items;
    if (stmt.condition) {
      for (const Value& item : all) {
        assign(stmt.names, item, inner);
        if (truthy(eval(*stmt.condition, inner))) items.push_back(item);
      }
    } else {
      items = all;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    bool completed = false;
    for (int64_t i = 0; i < n; ++i) {
      // Each pass starts from the enclosing scope: what the body set in the last pass is gone
      // (Jinja2: `{% set c = c + 1 %}` in a loop gives 1 every pass).
      Scope pass{{}, &scope};
      assign(stmt.names, items[i], pass);
      Dict loop;
      loop.items = {{Value::of("index0"), Value::of(i)},
                    {Value::of("index"), Value::of(i + 1)},
                    {Value::of("revindex0"), Value::of(n - i - 1)},
                    {Value::of("revindex"), Value::of(n - i)},
                    {Value::of("first"), Value::of(i == 0)},
                    {Value::of("last"), Value::of(i == n - 1)},
                    {Value::of("length"), Value::of(n)},
                    {Value::of("depth"), Value::of(1)},
                    {Value::of("depth0"), Value::of(0)},
                    {Value::of("previtem"), i > 0 ? items[i - 1] : Value::undefined("there is no previous item")},
                    {Value::of("nextitem"), i + 1 < n ? items[i + 1] : Value::undefined("there is no next item")}};
      pass.vars["loop"] = Value::of(std::move(loop));
      const Flow flow = exec(stmt.body, pass);
      completed = completed || flow == Flow::normal;
      if (flow == Flow::loop_break) break;
    }
    // As Jinja2 compiles it: `else` runs unless some pass through the body reached its end (a
    // break or continue before the end of every pass leaves it to run too), in a scope of its own
    // (Jinja2's else frame: what it sets is gone after the loop).
    if (completed) return Flow::normal;
    Scope otherwise{{}, &scope};
    return exec(stmt.else_body, otherwise);
  }

  // A macro as a callable: its parameters bound from the call's arguments (defaults evaluated
  // in the macro's scope at the call), `caller` from a call block; returns what it wrote.
  // A macro sees the template's top level as it is when called, and the names of the scopes it
  // was defined in (a loop's item and `loop`) as they were then, as Jinja2's closures do.
  Value macro_value(const Stmt& macro, const Scope& defined_in) {
    auto enclosing = std::make_shared<Scope>();
    for (const Scope* s = &defined_in; s && s != globals_; s = s->parent) {
      for (const auto& [name, value] : s->vars) enclosing->vars.emplace(name, value);  // the innermost wins
    }
    enclosing->parent = globals_;
    return Value::function([this, &macro, enclosing](CallArgs& args) -> Value {
      Scope scope{{}, enclosing.get()};
      if (args.positional.size() > macro.params.size()) {
        throw TemplateError("macro '" + macro.text + "' takes " + std::to_string(macro.params.size()) +
                            " argument(s), " + std::to_string(args.positional.size()) + " given");
      }
      for (const auto& [key, value] : args.keywords) {
        bool known = key == "caller";
        for (const auto& param : macro.params) known = known || param.first == key;
        if (!known) throw TemplateError("macro '" + macro.text + "' has no parameter '" + key + "'");
      }
      scope.vars["caller"] = Value::undefined("'caller' is undefined (the macro was not called by {% call %})");
      for (const auto& [key, value] : args.keywords) {
        if (key == "caller") scope.vars["caller"] = value;
      }
      for (size_t i = 0; i < macro.params.size(); ++i) {
        const auto& [name, fallback] = macro.params[i];
        if (i < args.positional.size()) {
          scope.vars[name] = args.positional[i];
        } else if (const Value* given = args.get(static_cast<size_t>(-1), name.c_str())) {
          scope.vars[name] = *given;
        } else if (fallback) {
          scope.vars[name] = eval(*fallback, scope);
        } else {
          scope.vars[name] = Value::undefined("parameter '" + name + "' was not provided");
        }
      }
      return Value::of(captured(macro.body, scope, {}));
    });
  }

  Flow call_block(const Stmt& stmt, Scope& scope) {
    const Expr& call = *stmt.expr;
    const Value callee = eval(*call.children[0], scope);
    CallArgs args = arguments(call, scope, 1);
    // caller() renders the block's body in the scope of the call site, while that site runs.
    auto alive = std::make_shared<bool>(true);
    args.keywords.emplace_back("caller", Value::function([this, &stmt, &scope, alive](CallArgs& caller_args) -> Value {
      if (!*alive) throw TemplateError("caller() called after its {% call %} block ended");
      Scope inner{{}, &scope};
      for (size_t i = 0; i < stmt.params.size(); ++i) {
        const auto& [name, fallback] = stmt.params[i];
        const Value* given = caller_args.get(i, name.c_str());
        inner.vars[name] = given ? *given : fallback ? eval(*fallback, inner) : Value::undefined("'" + name + "' is undefined");
      }
      return Value::of(captured(stmt.body, inner, {}));
    }));
    Value result;
    try {
      result = call_value(callee, args);
    } catch (...) {
      *alive = false;
      throw;
    }
    *alive = false;
    write(to_str(result));
    return Flow::normal;
  }

  Value call_value(const Value& callee, CallArgs& args) {
    if (!callee.is(Kind::callable)) {
      if (callee.is(Kind::undefined) && !callee.text.empty()) throw TemplateError(callee.text);
      throw TemplateError(std::string("'") + type_name(callee) + "' object is not callable");
    }
    return (*callee.callable)(args);
  }

  CallArgs arguments(const Expr& e, Scope& scope, size_t first) {
    CallArgs args;
    for (size_t i = first; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i], scope));
    for (const auto& [key, value] : e.keywords) args.keywords.emplace_back(key, eval(*value, scope));
    return args;
  }

  const SizeLimits& sizes() const { return options_.limits.sizes; }

 public:
  Value eval(const Expr& e, Scope& scope) {
    try {
      DepthGuard guard(*this, e.line);
      Value v = eval_one(e, scope);
      check_size(v, sizes());
      // Building a long string or list is work too: charged, so that copying one in a loop
      // (s = s + s) runs out of steps long before it runs out of time.
      if (v.is(Kind::string)) steps_ += v.text.size() >> 8;
      if (v.is(Kind::list)) steps_ += v.list->size() >> 4;
      return v;
    } catch (TemplateError& error) {
      error.set_line_if_unknown(e.line);
      throw;
    }
  }

  const Scope* globals_ = nullptr;  // the template's top-level scope, which macros see

 private:
  Value eval_one(const Expr& e, Scope& scope) {
    switch (e.kind) {
      case ExprKind::literal: return e.value;
      case ExprKind::name: {
        if (const Value* v = scope.find(e.name)) return *v;
        Value global = make_global(e.name, options_);
        return global.is(Kind::undefined) ? Value::undefined("'" + e.name + "' is undefined") : global;
      }
      case ExprKind::list:
      case ExprKind::tuple: {
        List items;
        for (const ExprPtr& child : e.children) items.push_back(eval(*child, scope));
        return e.kind == ExprKind::tuple ? Value::tuple_of(std::move(items)) : Value::of(std::move(items));
      }
      case ExprKind::dict: {
        Dict dict;
        for (size_t i = 0; i + 1 < e.children.size(); i += 2) {
          const Value key = eval(*e.children[i], scope);
          dict.set(key, eval(*e.children[i + 1], scope));
        }
        return Value::of(std::move(dict));
      }
      case ExprKind::attribute: return get_attribute(eval(*e.children[0], scope), e.name);
      case ExprKind::item: return get_item(eval(*e.children[0], scope), eval(*e.children[1], scope));
      case ExprKind::slice: {
        const Value object = eval(*e.children[0], scope);
        Value bounds[3];
        for (int i = 0; i < 3; ++i) bounds[i] = e.children[i + 1] ? eval(*e.children[i + 1], scope) : Value::none();
        return slice_of(object, bounds[0], bounds[1], bounds[2]);
      }
      case ExprKind::call: {
        const Value callee = eval(*e.children[0], scope);
        CallArgs args = arguments(e, scope, 1);
        return call_value(callee, args);
      }
      case ExprKind::filter: return apply_filter(e.name, eval(*e.children[0], scope), arguments(e, scope, 1), sizes());
      case ExprKind::test: {
        const bool result = apply_test(e.name, eval(*e.children[0], scope), arguments(e, scope, 1));
        return Value::of(result != e.negated);
      }
      case ExprKind::unary: {
        const Value v = eval(*e.children[0], scope);
        if (e.name == "not") return Value::of(!truthy(v));
        if (!v.is_number()) unsupported("unary " + e.name, v, v);
        if (e.name == "+") return is_integral(v) ? Value::of(integral(v)) : v;
        if (is_integral(v)) return integer_result(sub_overflows, 0, integral(v), "-");
        return Value::of(-v.floating);
      }
      case ExprKind::binary: {
        const Value a = eval(*e.children[0], scope);
        if (e.name == "and") return truthy(a) ? eval(*e.children[1], scope) : a;
        if (e.name == "or") return truthy(a) ? a : eval(*e.children[1], scope);
        const Value b = eval(*e.children[1], scope);
        if (e.name == "~") return Value::of(to_str(a) + to_str(b));
        return arithmetic(e.name, a, b, sizes());
      }
      case ExprKind::compare: {
        Value left = eval(*e.children[0], scope);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1], scope);
          if (!compare(e.ops[i], left, right)) return Value::of(false);
          left = std::move(right);
        }
        return Value::of(true);
      }
      case ExprKind::conditional:
        if (truthy(eval(*e.children[0], scope))) return eval(*e.children[1], scope);
        return e.children[2] ? eval(*e.children[2], scope) : Value::undefined("the inline if has no else");
    }
    return Value::undefined();
  }

  const RenderOptions& options_;
  RenderedText& root_;
  std::string* out_;
  uint64_t steps_ = 0;
  int depth_ = 0;
};

bool has_generation_block(const Body& body) {
  for (const StmtPtr& stmt : body) {
    if (stmt->kind == StmtKind::generation || has_generation_block(stmt->body) || has_generation_block(stmt->else_body)) {
      return true;
    }
    for (const auto& branch : stmt->branches) {
      if (has_generation_block(branch.second)) return true;
    }
  }
  return false;
}

}  // namespace

Template::Template(const std::string& source) {
  body_ = std::make_shared<const Body>(parse_template(source));
  has_generation_ = has_generation_block(*body_);
}

RenderedText Template::render(const Dict& variables, const RenderOptions& options) const {
  RenderedText out;
  Scope top;
  for (const auto& [name, value] : variables.items) top.vars[to_str(name)] = value;
  Renderer renderer(options, out);
  renderer.globals_ = &top;
  renderer.run(*body_, top);
  return out;
}

bool contains(const Value& container, const Value& item) {
  switch (container.kind) {
    case Kind::string:
      if (!item.is(Kind::string)) {
        throw TemplateError(std::string("'in <string>' requires string as left operand, not ") + type_name(item));
      }
      return container.text.find(item.text) != std::string::npos;
    case Kind::list:
      for (const Value& v : *container.list) {
        if (equals(v, item)) return true;
      }
      return false;
    case Kind::dict:
      if (!hashable(item)) throw TemplateError(std::string("unhashable type: '") + type_name(item) + "'");
      return container.dict->find(item) != nullptr;
    case Kind::ns: return item.is(Kind::string) && container.ns->find(item.text) != nullptr;
    case Kind::undefined: return false;
    default: throw TemplateError(std::string("argument of type '") + type_name(container) + "' is not iterable");
  }
}

void fail_if_undefined(const Value& v) {
  if (v.is(Kind::undefined)) throw TemplateError(v.text.empty() ? "an undefined value where one is needed" : v.text);
}

}  // namespace st::jinja
