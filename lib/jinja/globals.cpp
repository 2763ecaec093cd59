// The names every template sees besides its variables: Jinja2's range, namespace and dict, and
// the two transformers adds, raise_exception and strftime_now.
#include <ctime>

#include "jinja/template.h"

namespace st::jinja {

Value make_global(const std::string& name, const RenderOptions& options) {
  if (name == "raise_exception") {
    return Value::function([](CallArgs& args) -> Value {
      const Value* message = args.get(0, "message");
      throw TemplateRaised(message ? to_str(*message) : "the template raised an exception");
    });
  }
  if (name == "strftime_now") {
    return Value::function([&options](CallArgs& args) -> Value {
      const Value* format = args.get(0, "format");
      if (!format || !format->is(Kind::string)) throw TemplateError("strftime_now(format) needs a format string");
      std::tm when{};
      if (options.fixed_time) {
        when = *options.fixed_time;
      } else {
        const std::time_t now = std::time(nullptr);
        localtime_r(&now, &when);
      }
      char buffer[512];
      const size_t n = format->text.size() < 200 ? std::strftime(buffer, sizeof buffer, format->text.c_str(), &when) : 0;
      if (n == 0 && !format->text.empty()) throw TemplateError("strftime_now: format too long or empty result");
      return Value::of(std::string(buffer, n));
    });
  }
  if (name == "range") {
    return Value::function([&options](CallArgs& args) -> Value {
      args.allow(3, {}, "range()");
      int64_t start = 0, stop = 0, step = 1;
      for (const Value& v : args.positional) {
        if (!v.is(Kind::integer) && !v.is(Kind::boolean)) {
          throw TemplateError(std::string("range() takes integers, not ") + type_name(v));
        }
      }
      auto at = [&](size_t i) { return args.positional[i].is(Kind::boolean) ? args.positional[i].boolean : args.positional[i].integer; };
      switch (args.positional.size()) {
        case 1: stop = at(0); break;
        case 2: start = at(0), stop = at(1); break;
        case 3: start = at(0), stop = at(1), step = at(2); break;
        default: throw TemplateError("range() takes 1 to 3 arguments");
      }
      if (step == 0) throw TemplateError("range() arg 3 must not be zero");
      const double count = step > 0 ? std::max(0.0, (static_cast<double>(stop) - start) / step)
                                    : std::max(0.0, (static_cast<double>(start) - stop) / -step);
      if (count > static_cast<double>(options.limits.sizes.max_list_items)) {
        throw TemplateError("range() past the size limit (" + std::to_string(options.limits.sizes.max_list_items) + " items)");
      }
      List out;
      for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
        out.push_back(Value::of(i));
        if (step > 0 ? i > INT64_MAX - step : i < INT64_MIN - step) break;
      }
      return Value::of(std::move(out));
    });
  }
  if (name == "namespace" || name == "dict") {
    const bool is_namespace = name == "namespace";
    return Value::function([is_namespace](CallArgs& args) -> Value {
      Dict attributes;
      for (const Value& initial : args.positional) {
        if (!initial.is(Kind::dict)) {
          throw TemplateError(std::string(is_namespace ? "namespace" : "dict") + "() takes a dict or keywords");
        }
        for (const auto& [key, value] : initial.dict->items) attributes.set(key, value);
      }
      for (const auto& [key, value] : args.keywords) attributes.set(key, value);
      return is_namespace ? Value::namespace_of(std::move(attributes)) : Value::of(std::move(attributes));
    });
  }
  return Value::undefined();
}

}  // namespace st::jinja
