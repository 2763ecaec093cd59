#include "jinja/python_float.h"

#include <cmath>

#include "jinja/template_error.h"

namespace st::jinja {

FloatDivmod python_float_divmod(double x, double y) {
  double mod = std::fmod(x, y);
  double div = (x - mod) / y;
  if (mod != 0) {
    if ((y < 0) != (mod < 0)) {
      mod += y;
      div -= 1.0;
    }
  } else {
    mod = std::copysign(0.0, y);
  }
  double floordiv = std::copysign(0.0, x / y);
  if (div != 0) {
    floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
  }
  return {floordiv, mod};
}

// C's pow already gives Python's answer for the infinite and NaN operands Python checks before
// these.
double python_float_pow(double x, double y) {
  const bool finite = std::isfinite(x) && std::isfinite(y);
  if (y == 0) return 1.0;
  if (x == 0 && y < 0 && finite) throw TemplateError("0.0 cannot be raised to a negative power");
  if (x < 0 && finite && std::floor(y) != y) {
    throw TemplateError("a negative number to a fractional power is complex, which lib/jinja does not support");
  }
  const double result = std::pow(x, y);
  if (std::isinf(result) && finite) throw TemplateError("float ** result out of range");
  return result;
}

}  // namespace st::jinja
