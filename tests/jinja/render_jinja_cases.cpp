// render_jinja_cases <cases.jsonl>: renders each line's {"template", "variables"} with shardtune's
// Jinja interpreter and prints one JSON line each: {"text": ...} or {"error": ..., "raised":
// true|false} (a template that does not compile is an error too). jinja_differential.py compares
// it with Jinja2 in transformers' environment over thousands of generated templates.
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "jinja/template.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: render_jinja_cases CASES.jsonl\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << "render_jinja_cases: cannot open " << argv[1] << "\n";
    return 2;
  }
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const nlohmann::ordered_json c = nlohmann::ordered_json::parse(line);
    nlohmann::json row;
    try {
      const st::jinja::Template tmpl(c.at("template").get<std::string>());
      const st::jinja::Value variables = st::jinja::from_json(c.at("variables"));
      row["text"] = tmpl.render(*variables.dict, {}).text;
    } catch (const st::jinja::TemplateError& e) {
      row["error"] = e.located();
      row["raised"] = dynamic_cast<const st::jinja::TemplateRaised*>(&e) != nullptr;
    }
    std::cout << row.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return 0;
}
