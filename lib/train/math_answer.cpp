#include "train/math_answer.h"

#include <cctype>
#include <cstdint>
#include <numeric>
#include <vector>

#include "util/text.h"

namespace st {
namespace {

// The text inside the braces that open at `open` (the index of '{'), or none when unbalanced.
std::optional<std::string> braced(const std::string& text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == '{') ++depth;
    if (text[i] == '}' && --depth == 0) return text.substr(open + 1, i - open - 1);
  }
  return std::nullopt;
}

// What follows the last `marker` up to the end of its line.
std::optional<std::string> after_last(const std::string& text, const std::string& marker) {
  const size_t at = text.rfind(marker);
  if (at == std::string::npos) return std::nullopt;
  const size_t start = at + marker.size();
  const size_t end = text.find('\n', start);
  std::string rest = trimmed(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
  if (rest.empty()) return std::nullopt;
  return rest;
}

void erase_all(std::string& text, const std::string& what) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what)) text.erase(at, what.size());
}

void replace_all(std::string& text, const std::string& what, const std::string& with) {
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size())) {
    text.replace(at, what.size(), with);
  }
}

// "\text{cm}" and the like: units and words after a value carry no answer.
void drop_text_groups(std::string& text) {
  for (const std::string command : {"\\text{", "\\mbox{", "\\mathrm{"}) {
    for (size_t at = text.find(command); at != std::string::npos; at = text.find(command)) {
      const auto inside = braced(text, at + command.size() - 1);
      if (!inside) break;
      text.erase(at, command.size() + inside->size() + 1);
    }
  }
}

struct Rational {
  int64_t numerator = 0, denominator = 1;
  bool operator==(const Rational& o) const { return numerator == o.numerator && denominator == o.denominator; }
};

std::optional<Rational> reduced(int64_t numerator, int64_t denominator) {
  if (denominator == 0) return std::nullopt;
  if (denominator < 0) numerator = -numerator, denominator = -denominator;
  const int64_t g = std::gcd(numerator < 0 ? -numerator : numerator, denominator);  // >= 1: denominator > 0
  return Rational{numerator / g, denominator / g};
}

// A signed integer or decimal ("-12", "3.50", ".5"); at most 15 digits (exact in int64).
std::optional<Rational> decimal(const std::string& text) {
  size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';
  int64_t value = 0, scale = 1;
  int digits = 0;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !point) {
      point = true;
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(c)) || ++digits > 15) return std::nullopt;
    value = value * 10 + (c - '0');
    if (point) scale *= 10;
  }
  if (digits == 0) return std::nullopt;
  return reduced(negative ? -value : value, scale);
}

std::optional<Rational> rational(const std::string& text) {
  if (auto value = decimal(text)) return value;
  std::string body = text;
  bool negative = false;
  if (!body.empty() && body[0] == '-') negative = true, body.erase(0, 1);
  std::optional<Rational> top, bottom;
  if (starts_with(body, "\\frac{")) {
    const auto first = braced(body, 5);
    if (!first) return std::nullopt;
    const size_t second_open = 5 + first->size() + 2;
    const auto second = second_open < body.size() && body[second_open] == '{' ? braced(body, second_open) : std::nullopt;
    if (!second || second_open + second->size() + 2 != body.size()) return std::nullopt;
    top = decimal(*first), bottom = decimal(*second);
  } else if (const size_t slash = body.find('/'); slash != std::string::npos) {
    top = decimal(body.substr(0, slash)), bottom = decimal(body.substr(slash + 1));
  }
  if (!top || !bottom || bottom->numerator == 0) return std::nullopt;
  // (a/b) / (c/d) = ad / bc: small enough for the answers this reads (15 digits each, reduced).
  const __int128 n = static_cast<__int128>(top->numerator) * bottom->denominator;
  const __int128 d = static_cast<__int128>(top->denominator) * bottom->numerator;
  const __int128 limit = INT64_MAX;
  if (n > limit || n < -limit || d > limit || d < -limit) return std::nullopt;
  return reduced(static_cast<int64_t>(negative ? -n : n), static_cast<int64_t>(d));
}

}  // namespace

std::optional<std::string> final_answer(const std::string& text) {
  const size_t boxed = text.rfind("\\boxed{");
  if (boxed != std::string::npos) {
    if (auto inside = braced(text, boxed + 6)) return inside;
  }
  if (auto marked = after_last(text, "####")) return marked;
  return after_last(text, "Answer:");
}

std::string normalised_answer(const std::string& answer) {
  std::string text = answer;
  drop_text_groups(text);
  for (const char* what : {"\\left", "\\right", "\\!", "\\,", "\\;", "\\$", "$", " ", "\t", "\n"}) erase_all(text, what);
  replace_all(text, "\\dfrac", "\\frac");
  replace_all(text, "\\tfrac", "\\frac");
  while (!text.empty() && text.back() == '.') text.pop_back();
  // Thousands separators: "1,234,567" (a comma between digits followed by exactly three).
  const auto digit = [&text](size_t i) { return i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    const bool separator =
        text[i] == ',' && i > 0 && digit(i - 1) && digit(i + 1) && digit(i + 2) && digit(i + 3) && !digit(i + 4);
    if (!separator) out += text[i];
  }
  return out;
}

double math_answer_reward(const std::string& completion, const std::string& reference) {
  const auto answer = final_answer(completion);
  if (!answer) return 0.0;
  const std::string gold = normalised_answer(final_answer(reference).value_or(reference));
  const std::string mine = normalised_answer(*answer);
  if (mine.empty()) return 0.0;
  const auto a = rational(mine), b = rational(gold);
  if (a && b) return *a == *b ? 1.0 : 0.0;
  return mine == gold ? 1.0 : 0.0;
}

}  // namespace st
