/* SPDX-License-Identifier: MIT */
/*
 * quant_i.h - the precision library's C reference: 8-bit blockwise
 * quantization with bitsandbytes' dynamic map, stochastic rounding to
 * bfloat16 and the random bits it draws
 *
 * Every backend's kernels (kernels/vulkan/precision.glsl,
 * kernels/opencl/precision.cl) compute these same functions bit for bit;
 * the f16/bf16 round-to-nearest-even conversions are core/dtype_i.h's.
 */
#ifndef GPUOPT_QUANT_I_H
#define GPUOPT_QUANT_I_H

#include <stdint.h>

#define GPO_QBLOCK	256	/* elements per absmax block */
#define GPO_QZERO_U	0	/* the code of 0.0 in each map */
#define GPO_QZERO_S	127

/*
 * gpo__qmap - [0] unsigned, [1] signed: the 256 values of bitsandbytes'
 * dynamic map (create_dynamic_map(signed, 7, 8)), strictly ascending,
 * 0.0 and 1.0 among them; tools/qmap.py re-derives and checks them.
 */
extern const float gpo__qmap[2][256];

/*
 * gpo__quant8 - the code of the map value nearest to v = x * (1 / absmax),
 * the reciprocal and the product each correctly rounded (IEEE, subnormals
 * kept: an absmax below 2^-128 has an infinite reciprocal, and its block's
 * nonzero values the end codes); ties go to the lower code. absmax 0, or
 * a NaN v, gives the code of 0.0; beyond the ends, the end codes.
 *
 * The reciprocal, not the quotient, as bitsandbytes' blockwise kernels
 * do: a kernel divides once a block, not once an element, and multiplies
 * (one instruction) where a correctly rounded division costs dozens on a
 * device without one (kernels/vulkan/precision.glsl's cr_div).
 */
uint8_t gpo__quant8(float x, float absmax, int is_signed);

/* gpo__dequant8 - gpo__qmap[is_signed][q] * absmax */
float gpo__dequant8(uint8_t q, float absmax, int is_signed);

/*
 * gpo__f32_to_bf16_sr - stochastic rounding to bfloat16: the low 16 bits
 * of @rnd added to x's low 16 bits, then truncated, so x rounds up with
 * probability (its distance from the bf16 below) / (the bf16 step). A NaN
 * stays a NaN (quiet, as gpo__f32_to_bf16 gives it), +-inf stays; a
 * finite value may round up to inf from the largest bf16 below it.
 */
uint16_t gpo__f32_to_bf16_sr(float x, uint32_t rnd);

/*
 * gpo__round_bits - the stochastic-rounding bits of global element @i at
 * @step: word i % 4 of gpo__philox(seed, GPO_RNG_STREAM(GPO_RNG_ROUND,
 * step), i / 4), whatever the launch that rounds it.
 */
uint32_t gpo__round_bits(uint64_t seed, uint64_t step, uint64_t i);

#endif /* GPUOPT_QUANT_I_H */
