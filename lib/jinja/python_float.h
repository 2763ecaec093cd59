// Python's float arithmetic where it is not C's: CPython's floor division and modulo, and its
// power (float_divmod, float_pow), for the renderer's operators on numbers.
#pragma once

namespace st::jinja {

// Python's float // and %, as CPython's float_divmod computes them: the quotient from fmod's
// exact remainder (3 // 1e-05 is 299999.0, not floor(3 / 1e-05) = 300000.0) and a zero
// remainder signed as the divisor (4.0 % -2.0 is -0.0).
struct FloatDivmod {
  double quotient, remainder;
};
FloatDivmod python_float_divmod(double x, double y);

// Python's float ** where it is not C's pow: 0.0 to a negative power and a finite result too large
// throw TemplateError; so does a negative number to a fractional power, complex in Python, a type
// lib/jinja does not have (jinja_differential.py holds Jinja2 to the same bound).
double python_float_pow(double x, double y);

}  // namespace st::jinja
