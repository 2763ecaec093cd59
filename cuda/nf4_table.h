/* bitsandbytes' NF4 table (functional.py get_4bit_type("nf4"); kernels.cu
   nf4_dequantization_lut), as an initializer: lib/model/nf4.h holds it on the host and
   nf4_dequantize.cu in constant memory, from this one list. Plain C: built with or without CUDA. */
#pragma once

#define ST_NF4_CODE_VALUES                                                                              \
  {                                                                                                      \
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f, -0.28444138169288635f,    \
        -0.18477343022823334f, -0.09105003625154495f, 0.0f, 0.07958029955625534f, 0.16093020141124725f, \
        0.24611230194568634f, 0.33791524171829224f, 0.44070982933044434f, 0.5626170039176941f,         \
        0.7229568362236023f, 1.0f                                                                        \
  }
