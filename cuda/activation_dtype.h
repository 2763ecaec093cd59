/* The dtypes of the element-wise layer kernels (rms_norm, rope, swiglu): their math runs in
   fp32 (device_dtype.cuh), their tensors are one of these. */
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef enum StActivationDtype { ST_ACTIVATION_FP32 = 0, ST_ACTIVATION_BF16 = 1, ST_ACTIVATION_FP16 = 2 } StActivationDtype;

#ifdef __cplusplus
}
#endif
