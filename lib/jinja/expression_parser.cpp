#include "jinja/expression_parser.h"

#include "jinja/parser.h"

namespace st::jinja {
namespace {

ExprPtr node(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// A finished node: its height from its children's, bounded so that rendering (which recurses
// down the tree) and freeing it cannot run out of stack, however long a chain like a.b.c... is.
ExprPtr sealed(ExprPtr e) {
  for (const ExprPtr& child : e->children) {
    if (child) e->height = std::max(e->height, child->height + 1);
  }
  for (const auto& keyword : e->keywords) e->height = std::max(e->height, keyword.second->height + 1);
  if (e->height > kMaxNesting) throw TemplateError("expression nested too deeply", e->line);
  return e;
}

Value integer_literal(const std::string& digits, int line) {
  try {
    return Value::of(static_cast<int64_t>(std::stoll(digits)));
  } catch (const std::exception&) {
    throw TemplateError("number out of range: " + digits, line);
  }
}

class ExpressionParser {
 public:
  explicit ExpressionParser(TokenReader& in) : in_(in) {}

  ExprPtr expression() {
    Depth guard(*this);
    ExprPtr e = or_expr();
    while (in_.is_name("if")) {
      const int line = in_.next().line;
      auto c = node(ExprKind::conditional, line);
      c->children.push_back(or_expr());
      c->children.push_back(std::move(e));
      c->children.push_back(in_.skip_name("else") ? expression() : nullptr);
      e = sealed(std::move(c));
    }
    return e;
  }

  // A comma-separated run without brackets (`for a, b in`, `set x = 1, 2`): a tuple if more than
  // one. Without `conditional`, an `if` ends it (a for loop's filter: `for x in l if x`).
  ExprPtr tuple_or_expression(bool conditional = true) {
    const int line = in_.peek().line;
    auto item = [&] {
      if (conditional) return expression();
      Depth guard(*this);
      return or_expr();
    };
    ExprPtr first = item();
    if (!in_.is_op(",")) return first;
    auto t = node(ExprKind::tuple, line);
    t->children.push_back(std::move(first));
    while (in_.skip_op(",")) {
      if (in_.at_end() || in_.is_op("=") || in_.is_op(")") || in_.is_name("if")) break;
      t->children.push_back(item());
    }
    return sealed(std::move(t));
  }

  // A filter (after '|'): its name and arguments, applied to `subject` (null in a filter block).
  ExprPtr filter(ExprPtr subject) {
    auto f = node(ExprKind::filter, in_.peek().line);
    f->name = in_.expect_name();
    while (in_.skip_op(".")) f->name += "." + in_.expect_name();
    f->children.push_back(std::move(subject));
    if (in_.is_op("(")) call_arguments(*f);
    return sealed(std::move(f));
  }

 private:
  struct Depth {
    explicit Depth(ExpressionParser& p) : parser(p) {
      if (++parser.depth_ > kMaxNesting) throw TemplateError("expression nested too deeply", parser.in_.peek().line);
    }
    ~Depth() { --parser.depth_; }
    ExpressionParser& parser;
  };

  ExprPtr binary_left(ExprPtr left, const std::string& op, ExprPtr right) {
    auto b = node(ExprKind::binary, left->line);
    b->name = op;
    b->children.push_back(std::move(left));
    b->children.push_back(std::move(right));
    return sealed(std::move(b));
  }

  ExprPtr or_expr() {
    ExprPtr e = and_expr();
    while (in_.is_name("or")) {
      in_.next();
      ExprPtr right = and_expr();
      e = binary_left(std::move(e), "or", std::move(right));
    }
    return e;
  }
  ExprPtr and_expr() {
    ExprPtr e = not_expr();
    while (in_.is_name("and")) {
      in_.next();
      ExprPtr right = not_expr();
      e = binary_left(std::move(e), "and", std::move(right));
    }
    return e;
  }
  ExprPtr not_expr() {
    if (in_.is_name("not")) {
      Depth guard(*this);
      auto u = node(ExprKind::unary, in_.next().line);
      u->name = "not";
      u->children.push_back(not_expr());
      return sealed(std::move(u));
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr first = math1();
    ExprPtr c;
    while (true) {
      std::string op;
      if (in_.peek().kind == TokenKind::op) {
        const std::string& t = in_.peek().text;
        if (t == "==" || t == "!=" || t == "<" || t == "<=" || t == ">" || t == ">=") op = t;
      }
      if (op.empty() && in_.is_name("in")) op = "in";
      if (op.empty() && in_.is_name("not") && in_.is_name("in", 1)) op = "notin";
      if (op.empty()) break;
      in_.next();
      if (op == "notin") in_.next();
      if (!c) {
        c = node(ExprKind::compare, first->line);
        c->children.push_back(std::move(first));
      }
      c->ops.push_back(op);
      c->children.push_back(math1());
    }
    return c ? sealed(std::move(c)) : std::move(first);
  }
  ExprPtr math1() {
    ExprPtr e = concat();
    while (in_.is_op("+") || in_.is_op("-")) {
      const std::string op = in_.next().text;
      ExprPtr right = concat();
      e = binary_left(std::move(e), op, std::move(right));
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = math2();
    while (in_.is_op("~")) {
      in_.next();
      ExprPtr right = math2();
      e = binary_left(std::move(e), "~", std::move(right));
    }
    return e;
  }
  ExprPtr math2() {
    ExprPtr e = power();
    while (in_.is_op("*") || in_.is_op("/") || in_.is_op("//") || in_.is_op("%")) {
      const std::string op = in_.next().text;
      ExprPtr right = power();
      e = binary_left(std::move(e), op, std::move(right));
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary(true);
    while (in_.is_op("**")) {
      in_.next();
      ExprPtr right = unary(true);
      e = binary_left(std::move(e), "**", std::move(right));
    }
    return e;
  }
  ExprPtr unary(bool with_filter) {
    Depth guard(*this);
    ExprPtr e;
    if (in_.is_op("-") || in_.is_op("+")) {
      auto u = node(ExprKind::unary, in_.peek().line);
      u->name = in_.next().text;
      u->children.push_back(unary(false));
      e = sealed(std::move(u));
    } else {
      e = primary();
    }
    e = postfix(std::move(e));
    return with_filter ? filters_and_tests(std::move(e)) : std::move(e);
  }

  ExprPtr primary() {
    const Token& t = in_.peek();
    const int line = t.line;
    if (t.kind == TokenKind::name) {
      const std::string name = in_.next().text;
      auto e = node(ExprKind::literal, line);
      if (name == "true" || name == "True") {
        e->value = Value::of(true);
      } else if (name == "false" || name == "False") {
        e->value = Value::of(false);
      } else if (name == "none" || name == "None") {
        e->value = Value::none();
      } else {
        e->kind = ExprKind::name;
        e->name = name;
      }
      return e;
    }
    if (t.kind == TokenKind::string) {
      std::string text;
      while (in_.peek().kind == TokenKind::string) text += in_.next().text;  // adjacent literals join
      auto e = node(ExprKind::literal, line);
      e->value = Value::of(std::move(text));
      return e;
    }
    if (t.kind == TokenKind::integer || t.kind == TokenKind::floating) {
      auto e = node(ExprKind::literal, line);
      const std::string digits = in_.next().text;
      if (t.kind == TokenKind::integer) {
        e->value = integer_literal(digits, line);
      } else {
        try {
          e->value = Value::of(std::stod(digits));
        } catch (const std::exception&) {
          throw TemplateError("number out of range: " + digits, line);
        }
      }
      return e;
    }
    if (in_.skip_op("(")) {
      if (in_.skip_op(")")) return node(ExprKind::tuple, line);
      ExprPtr first = expression();
      if (in_.skip_op(")")) return first;
      auto tuple = node(ExprKind::tuple, line);
      tuple->children.push_back(std::move(first));
      while (in_.skip_op(",")) {
        if (in_.is_op(")")) break;
        tuple->children.push_back(expression());
      }
      in_.expect_op(")");
      return sealed(std::move(tuple));
    }
    if (in_.skip_op("[")) {
      auto list = node(ExprKind::list, line);
      while (!in_.skip_op("]")) {
        if (!list->children.empty()) in_.expect_op(",");
        if (in_.skip_op("]")) break;
        list->children.push_back(expression());
      }
      return sealed(std::move(list));
    }
    if (in_.skip_op("{")) {
      auto dict = node(ExprKind::dict, line);
      while (!in_.skip_op("}")) {
        if (!dict->children.empty()) in_.expect_op(",");
        if (in_.skip_op("}")) break;
        dict->children.push_back(expression());
        in_.expect_op(":");
        dict->children.push_back(expression());
      }
      return sealed(std::move(dict));
    }
    in_.fail("expected an expression");
  }

  ExprPtr postfix(ExprPtr e) {
    while (true) {
      const int line = in_.peek().line;
      if (in_.skip_op(".")) {
        if (in_.peek().kind == TokenKind::integer) {
          auto item = node(ExprKind::item, line);
          item->children.push_back(std::move(e));
          auto index = node(ExprKind::literal, line);
          index->value = integer_literal(in_.next().text, line);
          item->children.push_back(std::move(index));
          e = sealed(std::move(item));
        } else {
          auto attribute = node(ExprKind::attribute, line);
          attribute->name = in_.expect_name();
          attribute->children.push_back(std::move(e));
          e = sealed(std::move(attribute));
        }
      } else if (in_.skip_op("[")) {
        e = subscript(std::move(e), line);
      } else if (in_.is_op("(")) {
        auto call = node(ExprKind::call, line);
        call->children.push_back(std::move(e));
        call_arguments(*call);
        e = sealed(std::move(call));
      } else {
        return e;
      }
    }
  }

  ExprPtr subscript(ExprPtr subject, int line) {
    ExprPtr parts[3];
    int colons = 0;
    while (!in_.is_op("]")) {
      if (in_.skip_op(":")) {
        if (++colons > 2) in_.fail("a slice has at most two ':'");
        continue;
      }
      if (parts[colons]) in_.fail("expected ':' or ']'");
      parts[colons] = expression();
    }
    in_.expect_op("]");
    if (colons == 0) {
      if (!parts[0]) in_.fail("empty subscript");
      auto item = node(ExprKind::item, line);
      item->children.push_back(std::move(subject));
      item->children.push_back(std::move(parts[0]));
      return sealed(std::move(item));
    }
    auto slice = node(ExprKind::slice, line);
    slice->children.push_back(std::move(subject));
    for (ExprPtr& part : parts) slice->children.push_back(std::move(part));
    return sealed(std::move(slice));
  }

  void call_arguments(Expr& call) {
    in_.expect_op("(");
    bool first = true;
    while (!in_.skip_op(")")) {
      if (!first) in_.expect_op(",");
      first = false;
      if (in_.skip_op(")")) break;
      if (in_.is_op("*") || in_.is_op("**")) in_.fail("*args and **kwargs in calls are not supported");
      if (in_.peek().kind == TokenKind::name && in_.is_op("=", 1)) {
        const std::string key = in_.next().text;
        in_.next();
        call.keywords.emplace_back(key, expression());
      } else {
        if (!call.keywords.empty()) in_.fail("a positional argument follows a keyword argument");
        call.children.push_back(expression());
      }
    }
  }

  ExprPtr filters_and_tests(ExprPtr e) {
    while (true) {
      if (in_.skip_op("|")) {
        e = filter(std::move(e));
      } else if (in_.is_name("is")) {
        auto test = node(ExprKind::test, in_.next().line);
        test->negated = in_.skip_name("not");
        test->name = in_.expect_name();
        test->children.push_back(std::move(e));
        const Token& t = in_.peek();
        if (in_.is_op("(")) {
          call_arguments(*test);
        } else if ((t.kind == TokenKind::name || t.kind == TokenKind::string || t.kind == TokenKind::integer ||
                    t.kind == TokenKind::floating || in_.is_op("[") || in_.is_op("{")) &&
                   !in_.is_name("else") && !in_.is_name("or") && !in_.is_name("and")) {
          // As Jinja2: any other name is the test's argument (`x is defined if y` fails there too).
          Depth guard(*this);
          test->children.push_back(postfix(primary()));
        }
        e = sealed(std::move(test));
      } else if (in_.is_op("(")) {
        auto call = node(ExprKind::call, in_.peek().line);
        call->children.push_back(std::move(e));
        call_arguments(*call);
        e = sealed(std::move(call));
      } else {
        return e;
      }
    }
  }

  TokenReader& in_;
  int depth_ = 0;
};

}  // namespace

ExprPtr parse_expression(TokenReader& in) { return ExpressionParser(in).expression(); }
ExprPtr parse_tuple_or_expression(TokenReader& in, bool conditional) {
  return ExpressionParser(in).tuple_or_expression(conditional);
}
ExprPtr parse_filter(TokenReader& in, ExprPtr subject) { return ExpressionParser(in).filter(std::move(subject)); }

}  // namespace st::jinja
