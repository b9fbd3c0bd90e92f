/* SPDX-License-Identifier: MIT */
/*
 * dtype_i.h - conversions between float32 and the 16-bit floats, for the
 * host side of the library (fills, tests); the kernels have their own
 */
#ifndef GPUOPT_DTYPE_I_H
#define GPUOPT_DTYPE_I_H

#include <stdint.h>

/*
 * gpo__f32_to_f16, gpo__f32_to_bf16 - round to nearest, ties to even, as
 * IEEE 754 and torch's .to(float16/bfloat16): too large gives inf, too
 * small a subnormal or a signed zero; a NaN stays a NaN (quiet, its sign
 * and top payload bits kept).
 * gpo__f16_to_f32, gpo__bf16_to_f32 - exact.
 */
uint16_t gpo__f32_to_f16(float f);
float gpo__f16_to_f32(uint16_t h);
uint16_t gpo__f32_to_bf16(float f);
float gpo__bf16_to_f32(uint16_t h);

#endif /* GPUOPT_DTYPE_I_H */
