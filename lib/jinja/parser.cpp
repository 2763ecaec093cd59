#include "jinja/parser.h"

#include <set>

#include "jinja/builtins.h"
#include "jinja/expression_parser.h"
#include "jinja/lexer.h"
#include "jinja/template_error.h"

namespace st::jinja {
namespace {
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
        stmt->expr = parse_expression(in);
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
    TokenReader* end = nullptr;
    if (tag == "if") {
      stmt->kind = StmtKind::if_chain;
      ExprPtr condition = parse_tuple_or_expression(in, false);  // Jinja2: no inline if here
      in.expect_end();
      while (true) {
        Body branch = parse_body({"elif", "else", "endif"}, "if", line);
        stmt->branches.emplace_back(std::move(condition), std::move(branch));
        const std::string closing = take_end(end);
        if (closing == "elif") {
          condition = parse_tuple_or_expression(*end, false);
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
      stmt->expr = parse_tuple_or_expression(in, false);
      if (in.skip_name("if")) stmt->condition = parse_expression(in);
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
        auto target = std::make_unique<Expr>();
        target->kind = ExprKind::name;
        target->line = line;
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
        stmt->expr = parse_tuple_or_expression(in);
        in.expect_end();
      } else {
        if (stmt->target || stmt->names.size() != 1) in.fail("expected '='");
        stmt->kind = StmtKind::set_block;
        while (in.skip_op("|")) stmt->filters.push_back(parse_filter(in, nullptr));
        in.expect_end();
        stmt->body = parse_body({"endset"}, "set", line);
        take_end(end);
        end->expect_end();
      }
    } else if (tag == "macro") {
      stmt->kind = StmtKind::macro;
      stmt->text = in.expect_name();
      parameters(in, *stmt);
      in.expect_end();
      stmt->body = parse_body({"endmacro"}, "macro", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "call") {
      stmt->kind = StmtKind::call_block;
      if (in.is_op("(")) parameters(in, *stmt);
      stmt->expr = parse_expression(in);
      if (stmt->expr->kind != ExprKind::call) throw TemplateError("'{% call %}' needs a macro call", line);
      in.expect_end();
      stmt->body = parse_body({"endcall"}, "call", line);
      take_end(end);
      end->expect_end();
    } else if (tag == "filter") {
      stmt->kind = StmtKind::filter_block;
      do {
        stmt->filters.push_back(parse_filter(in, nullptr));
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

  void parameters(TokenReader& in, Stmt& stmt) {
    in.expect_op("(");
    while (!in.skip_op(")")) {
      if (!stmt.params.empty()) in.expect_op(",");
      if (in.skip_op(")")) break;
      const std::string name = in.expect_name();
      stmt.params.emplace_back(name, in.skip_op("=") ? parse_expression(in) : nullptr);
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
