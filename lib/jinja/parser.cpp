#include "jinja/parser.h"

#include <set>

#include "jinja/builtins.h"
#include "jinja/lexer.h"
#include "jinja/template_error.h"

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

// One tag's tokens, read left to right.
class TokenReader {
 public:
  explicit TokenReader(const std::vector<Token>& tokens) : tokens_(tokens) {}
  const Token& peek(size_t ahead = 0) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }
  const Token& next() {
    const Token& t = peek();
    if (at_ < tokens_.size() - 1) ++at_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const { return peek(ahead).kind == TokenKind::op && peek(ahead).text == op; }
  bool is_name(const char* name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::name && peek(ahead).text == name;
  }
  bool skip_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  void expect_op(const char* op) {
    if (!skip_op(op)) fail(std::string("expected '") + op + "'");
  }
  std::string expect_name() {
    if (peek().kind != TokenKind::name) fail("expected a name");
    return next().text;
  }
  bool at_end() const { return peek().kind == TokenKind::end; }
  void expect_end() {
    if (!at_end()) fail("unexpected '" + peek().text + "'");
  }
  [[noreturn]] void fail(const std::string& what) const {
    const Token& t = peek();
    const std::string found = t.kind == TokenKind::end ? "the end of the tag" : "'" + t.text + "'";
    throw TemplateError(what + ", found " + found, t.line);
  }

 private:
  const std::vector<Token>& tokens_;
  size_t at_ = 0;
};

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
                   !in_.is_name("else") && !in_.is_name("or") && !in_.is_name("and") && !in_.is_name("if")) {
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

// Statements: segments into a tree, a block's body up to its end tag.
class StatementParser {
 public:
  explicit StatementParser(std::vector<Segment> segments) : segments_(std::move(segments)) {}

  Body run() {
    Body body = parse_body({});
    if (at_ < segments_.size()) {
      const Segment& s = segments_[at_];
      throw TemplateError("unexpected '{% " + s.tokens[0].text + " %}'", s.line);
    }
    return body;
  }

 private:
  // Statements up to (not including) a statement tag named in `ends`; at the end of the source
  // when `ends` is empty, else TemplateError naming the block left open.
  Body parse_body(const std::set<std::string>& ends, const std::string& open_tag = "", int open_line = 0) {
    if (++depth_ > kMaxNesting) throw TemplateError("blocks nested too deeply", open_line);
    Body body;
    while (at_ < segments_.size()) {
      const Segment& s = segments_[at_];
      if (s.kind == SegmentKind::text) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::text;
        stmt->line = s.line;
        stmt->text = s.text;
        body.push_back(std::move(stmt));
        ++at_;
        continue;
      }
      TokenReader in(s.tokens);
      if (s.kind == SegmentKind::expression) {
        auto stmt = std::make_unique<Stmt>();
        stmt->kind = StmtKind::output;
        stmt->line = s.line;
        stmt->expr = ExpressionParser(in).expression();
        in.expect_end();
        body.push_back(std::move(stmt));
        ++at_;
        continue;
      }
      if (in.peek().kind != TokenKind::name) in.fail("expected a statement name");
      const std::string tag = in.peek().text;
      if (ends.count(tag)) {
        --depth_;
        return body;
      }
      if (tag.compare(0, 3, "end") == 0 || tag == "elif" || tag == "else") {
        throw TemplateError("unexpected '{% " + tag + " %}'" +
                                (open_tag.empty() ? std::string()
                                                  : " inside '{% " + open_tag + " %}' of line " + std::to_string(open_line)),
                            s.line);
      }
      ++at_;
      body.push_back(statement(in, tag, s.line));
    }
    if (!ends.empty()) {
      throw TemplateError("'{% " + open_tag + " %}' is never closed (expected '{% " + *ends.rbegin() + " %}')",
                          open_line);
    }
    --depth_;
    return body;
  }

  // The end tag that parse_body stopped at: its name, consumed.
  std::string take_end(TokenReader*& reader) {
    const Segment& s = segments_[at_++];
    end_reader_ = std::make_unique<TokenReader>(s.tokens);
    reader = end_reader_.get();
    return reader->next().text;
  }

  StmtPtr statement(TokenReader& in, const std::string& tag, int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->line = line;
    in.next();
    ExpressionParser expr(in);
    TokenReader* end = nullptr;
    if (tag == "if") {
      stmt->kind = StmtKind::if_chain;
      ExprPtr condition = expr.tuple_or_expression();
      in.expect_end();
      while (true) {
        Body branch = parse_body({"elif", "else", "endif"}, "if", line);
        stmt->branches.emplace_back(std::move(condition), std::move(branch));
        const std::string closing = take_end(end);
        if (closing == "elif") {
          condition = ExpressionParser(*end).tuple_or_expression();
          end->expect_end();
          continue;
        }
        end->expect_end();
        if (closing == "else") {
          stmt->else_body = parse_body({"endif"}, "if", line);
          take_end(end);
          end->expect_end();
        }
        break;
      }
    } else if (tag == "for") {
      stmt->kind = StmtKind::for_loop;
      const bool parenthesized = in.skip_op("(");
      do {
        stmt->names.push_back(in.expect_name());
      } while (in.skip_op(","));
      if (parenthesized) in.expect_op(")");
      if (!in.skip_name("in")) in.fail("expected 'in'");
      stmt->expr = expr.tuple_or_expression(false);
      if (in.skip_name("if")) stmt->condition = expr.expression();
      if (in.is_name("recursive")) in.fail("recursive loops are not supported");
      in.expect_end();
      stmt->body = parse_body({"else", "endfor"}, "for", line);
      if (take_end(end) == "else") {
        end->expect_end();
        stmt->else_body = parse_body({"endfor"}, "for", line);
        take_end(end);
      }
      end->expect_end();
    } else if (tag == "set") {
      if (in.peek().kind == TokenKind::name && in.is_op(".", 1)) {
        stmt->kind = StmtKind::set;
        auto target = node(ExprKind::name, line);
        target->name = in.next().text;
        in.next();
        stmt->target = std::move(target);
        stmt->text = in.expect_name();
      } else {
        const bool parenthesized = in.skip_op("(");
        do {
          stmt->names.push_back(in.expect_name());
        } while (in.skip_op(","));
        if (parenthesized) in.expect_op(")");
      }
      if (in.skip_op("=")) {
        stmt->kind = StmtKind::set;
        stmt->expr = expr.tuple_or_expression();
        in.expect_end();
      } else {
        if (stmt->target || stmt->names.size() != 1) in.fail("expected '='");
        stmt->kind = StmtKind::set_block;
        while (in.skip_op("|")) stmt->filters.push_back(expr.filter(nullptr));
        in.expect_end();
        stmt->body = parse_body({"endset"}, "set", line);
        take_end(end);
        end->expect_end();
      }
    } else if (tag == "macro") {
      stmt->kind = StmtKind::macro;
      stmt->text = in.expect_name();
      parameters(in, expr, *stmt);
      in.expect_end();
      stmt->body = parse_body({"endmacro"}, "macro", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "call") {
      stmt->kind = StmtKind::call_block;
      if (in.is_op("(")) parameters(in, expr, *stmt);
      stmt->expr = expr.expression();
      if (stmt->expr->kind != ExprKind::call) throw TemplateError("'{% call %}' needs a macro call", line);
      in.expect_end();
      stmt->body = parse_body({"endcall"}, "call", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "filter") {
      stmt->kind = StmtKind::filter_block;
      do {
        stmt->filters.push_back(expr.filter(nullptr));
      } while (in.skip_op("|"));
      in.expect_end();
      stmt->body = parse_body({"endfilter"}, "filter", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "generation") {
      stmt->kind = StmtKind::generation;
      in.expect_end();
      stmt->body = parse_body({"endgeneration"}, "generation", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "break" || tag == "continue") {
      stmt->kind = tag == "break" ? StmtKind::loop_break : StmtKind::loop_continue;
      in.expect_end();
    } else {
      const bool known = tag == "include" || tag == "import" || tag == "from" || tag == "extends" || tag == "block" ||
                         tag == "with" || tag == "do" || tag == "autoescape" || tag == "trans";
      throw TemplateError(known ? "'{% " + tag + " %}' is not supported in chat templates"
                                : "unknown statement '{% " + tag + " %}'",
                          line);
    }
    return stmt;
  }

  void parameters(TokenReader& in, ExpressionParser& expr, Stmt& stmt) {
    in.expect_op("(");
    while (!in.skip_op(")")) {
      if (!stmt.params.empty()) in.expect_op(",");
      if (in.skip_op(")")) break;
      const std::string name = in.expect_name();
      stmt.params.emplace_back(name, in.skip_op("=") ? expr.expression() : nullptr);
    }
  }

  std::vector<Segment> segments_;
  size_t at_ = 0;
  int depth_ = 0;
  std::unique_ptr<TokenReader> end_reader_;
};

// Jinja2 refuses a filter or test it does not know when compiling, except inside an if
// statement or an inline if (a "soft" frame), where it fails only if reached.
void check_names(const Expr& e, bool soft) {
  soft = soft || e.kind == ExprKind::conditional;
  if (!soft && e.kind == ExprKind::filter && !has_filter(e.name)) throw TemplateError("no filter named '" + e.name + "'", e.line);
  if (!soft && e.kind == ExprKind::test && !has_test(e.name)) throw TemplateError("no test named '" + e.name + "'", e.line);
  for (const ExprPtr& child : e.children) {
    if (child) check_names(*child, soft);
  }
  for (const auto& keyword : e.keywords) check_names(*keyword.second, soft);
}

void check_names(const Body& body, bool soft) {
  for (const StmtPtr& stmt : body) {
    const bool inner = soft || stmt->kind == StmtKind::if_chain;
    for (const ExprPtr* e : {&stmt->expr, &stmt->condition, &stmt->target}) {
      if (*e) check_names(**e, inner);
    }
    for (const ExprPtr& filter : stmt->filters) check_names(*filter, inner);
    for (const auto& param : stmt->params) {
      if (param.second) check_names(*param.second, inner);
    }
    for (const auto& [condition, branch] : stmt->branches) {
      check_names(*condition, inner);
      check_names(branch, inner);
    }
    check_names(stmt->body, inner);
    check_names(stmt->else_body, inner);
  }
}

}  // namespace

Body parse_template(const std::string& source) {
  Body body = StatementParser(lex_template(source)).run();
  check_names(body, false);
  return body;
}

}  // namespace st::jinja
