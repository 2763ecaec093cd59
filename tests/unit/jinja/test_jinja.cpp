// The Jinja interpreter: every case of cases.json (whose expectations tests/jinja/check_cases.py
// proves against transformers' own environment) and what that file cannot hold: the line a
// failure names, the limits, generation spans, the fixed clock.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "jinja/template.h"

namespace st::jinja {
namespace {

using Json = nlohmann::ordered_json;

Dict variables_of(const Json& json) { return json.empty() ? Dict{} : *from_json(json).dict; }

std::string render(const std::string& source, const Json& variables = Json::object(), const RenderOptions& options = {}) {
  return Template(source).render(variables_of(variables), options).text;
}

// The located message of the TemplateError that rendering (or parsing) throws; "" if none.
std::string failure(const std::string& source, const Json& variables = Json::object(), const RenderOptions& options = {}) {
  try {
    render(source, variables, options);
  } catch (const TemplateError& e) {
    return e.located();
  }
  return "";
}

TEST(Jinja, EveryCaseRendersAsTransformersDoes) {
  std::ifstream in(ST_JINJA_CASES);
  ASSERT_TRUE(in) << ST_JINJA_CASES;
  const Json cases = Json::parse(in);
  ASSERT_GT(cases.size(), 80u);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Json& c = cases[i];
    const std::string source = c["template"].get<std::string>();
    SCOPED_TRACE("case " + std::to_string(i) + ": " + source);
    const std::string kind = c.value("error", "");
    std::string got, error_kind, message;
    try {
      const Template parsed(source);
      try {
        got = parsed.render(variables_of(c["variables"])).text;
      } catch (const TemplateRaised& e) {
        error_kind = "raised";
        message = e.message();
      } catch (const TemplateError& e) {
        error_kind = "failed";
        message = e.message();
      }
    } catch (const TemplateError& e) {
      error_kind = "syntax";
      message = e.message();
    }
    EXPECT_EQ(error_kind, kind) << message;
    if (kind.empty()) {
      EXPECT_EQ(got, c["text"].get<std::string>());
    } else {
      EXPECT_NE(message.find(c["says"].get<std::string>()), std::string::npos) << message;
    }
  }
}

TEST(Jinja, FailuresNameTheLine) {
  EXPECT_EQ(failure("a\nb\n{{ x.y }}"), "line 3: 'x' is undefined");
  EXPECT_EQ(failure("{% for m in messages %}\n{% if m.role == 'system' %}\n{{ raise_exception('no system') }}\n"
                    "{% endif %}{% endfor %}",
                    {{"messages", Json::array({{{"role", "system"}}})}}),
            "line 3: no system");
  EXPECT_EQ(failure("{% if x %}\n\n{% endfor %}"), "line 3: unexpected '{% endfor %}' inside '{% if %}' of line 1");
  EXPECT_EQ(failure("\n{{ x | nope }}"), "line 2: no filter named 'nope'");
  EXPECT_EQ(failure("x\n{% if y %}"), "line 2: '{% if %}' is never closed (expected '{% endif %}')");
}

TEST(Jinja, RaiseExceptionIsItsOwnKind) {
  try {
    render("{{ raise_exception('roles must alternate') }}");
    FAIL() << "no exception";
  } catch (const TemplateRaised& e) {
    EXPECT_EQ(e.message(), "roles must alternate");
  }
}

TEST(Jinja, EveryRenderingIsBounded) {
  RenderOptions small;
  small.limits.max_steps = 10000;
  EXPECT_NE(failure("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", {}, small)
                .find("ran more than 10000 steps"),
            std::string::npos);
  EXPECT_NE(failure("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nested deeper than"), std::string::npos);
  RenderOptions tight;
  tight.limits.sizes.max_string_bytes = 1 << 20;
  EXPECT_NE(failure("{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
                    {}, tight)
                .find("size limit"),
            std::string::npos);
  EXPECT_NE(failure("{{ 'x' * 100000000 }}").find("size limit"), std::string::npos);
  EXPECT_NE(failure("{{ range(100000000) | length }}").find("size limit"), std::string::npos);
  EXPECT_NE(failure("{{ [1] * 10000000 }}").find("size limit"), std::string::npos);
  EXPECT_NE(failure("{{ " + std::string(1000, '(') + "1" + std::string(1000, ')') + " }}").find("nested too deeply"), std::string::npos);
  std::string chain = "{{ x";
  for (int i = 0; i < 1000; ++i) chain += ".a";
  EXPECT_NE(failure(chain + " }}").find("nested too deeply"), std::string::npos);
  std::string blocks;
  for (int i = 0; i < 1000; ++i) blocks += "{% if true %}";
  EXPECT_NE(failure(blocks).find("nested too deeply"), std::string::npos);
  EXPECT_NE(failure("{{ 9223372036854775807 + 1 }}").find("integer overflow"), std::string::npos);
}

TEST(Jinja, GenerationSpansAreByteRangesOfTheOutput) {
  const RenderedText out =
      Template("{% for m in messages %}<{{ m.role }}>{% if m.role == 'assistant' %}{% generation %}{{ m.content }}"
               "</s>{% endgeneration %}{% else %}{{ m.content }}{% endif %}{% endfor %}")
          .render(variables_of({{"messages", Json::array({{{"role", "user"}, {"content", "hé"}},
                                                          {{"role", "assistant"}, {"content", "yo"}},
                                                          {{"role", "assistant"}, {"content", "ü"}}})}}));
  EXPECT_EQ(out.text, "<user>hé<assistant>yo</s><assistant>ü</s>");
  ASSERT_EQ(out.generation.size(), 2u);
  EXPECT_EQ(out.text.substr(out.generation[0].first, out.generation[0].second - out.generation[0].first), "yo</s>");
  EXPECT_EQ(out.text.substr(out.generation[1].first, out.generation[1].second - out.generation[1].first), "ü</s>");
  EXPECT_TRUE(Template("{% generation %}{% endgeneration %}").has_generation());
  EXPECT_FALSE(Template("{{ 'generation' }}").has_generation());
}

TEST(Jinja, StrftimeNowUsesTheFixedDayWhenGiven) {
  RenderOptions options;
  std::tm day{};
  day.tm_year = 2024 - 1900;
  day.tm_mon = 6;
  day.tm_mday = 26;
  options.fixed_time = day;
  EXPECT_EQ(render("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y-%m-%d') }}|{{ strftime_now('%B %d, %Y') }}", {},
                   options),
            "26 Jul 2024|2024-07-26|July 26, 2024");
  EXPECT_EQ(render("{{ strftime_now('%Y') | length }}"), "4");
}

TEST(Jinja, ValuesPrintAsPythonDoes) {
  EXPECT_EQ(float_repr(0.1), "0.1");
  EXPECT_EQ(float_repr(1e22), "1e+22");
  EXPECT_EQ(float_repr(123456789012345678.0), "1.2345678901234568e+17");
  EXPECT_EQ(float_repr(0.0001), "0.0001");
  EXPECT_EQ(float_repr(-0.0), "-0.0");
  EXPECT_EQ(float_repr(100.0), "100.0");
  EXPECT_EQ(render("{{ s }}", {{"s", Json::array({"it's", "a\"b", "tab\t", "\x01"})}}),
            "[\"it's\", 'a\"b', 'tab\\t', '\\x01']");
}

}  // namespace
}  // namespace st::jinja
