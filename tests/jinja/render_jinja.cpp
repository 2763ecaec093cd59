// render_jinja <template file> <contexts.jsonl> [--date YYYY-MM-DD]: renders the template once
// per line (a JSON object: the template's variables) with shardtune's Jinja interpreter and
// prints one JSON line each: {"text": ..., "generation": [[begin, end], ...]} in code points,
// or {"error": "line N: ...", "raised": true|false}. jinja_parity.sh compares it with
// transformers' own rendering (jinja_reference.py).
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>

#include "jinja/template.h"
#include "jinja/utf8_text.h"

int main(int argc, char** argv) {
  if (argc != 3 && argc != 5) {
    std::cerr << "usage: render_jinja TEMPLATE CONTEXTS.jsonl [--date YYYY-MM-DD]\n";
    return 2;
  }
  std::ifstream file(argv[1], std::ios::binary);
  std::stringstream source;
  source << file.rdbuf();
  st::jinja::RenderOptions options;
  if (argc == 5) {
    std::tm when{};
    if (!strptime(argv[4], "%Y-%m-%d", &when)) {
      std::cerr << "render_jinja: --date wants YYYY-MM-DD\n";
      return 2;
    }
    options.fixed_time = when;
  }
  try {
    const st::jinja::Template tmpl(source.str());
    std::ifstream in(argv[2]);
    for (std::string line; std::getline(in, line);) {
      if (line.empty()) continue;
      const st::jinja::Value context = st::jinja::from_json(nlohmann::ordered_json::parse(line));
      nlohmann::json row;
      try {
        const st::jinja::RenderedText out = tmpl.render(*context.dict, options);
        row["text"] = out.text;
        nlohmann::json spans = nlohmann::json::array();
        for (const auto& [begin, end] : out.generation) {
          spans.push_back({st::jinja::code_point_count(out.text.substr(0, begin)),
                           st::jinja::code_point_count(out.text.substr(0, end))});
        }
        row["generation"] = spans;
      } catch (const st::jinja::TemplateError& e) {
        row["error"] = e.located();
        row["raised"] = dynamic_cast<const st::jinja::TemplateRaised*>(&e) != nullptr;
      }
      std::cout << row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    }
  } catch (const st::jinja::TemplateError& e) {
    std::cerr << "render_jinja: " << argv[1] << ": " << e.located() << "\n";
    return 1;
  }
  return 0;
}
