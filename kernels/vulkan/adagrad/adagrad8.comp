// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * adagrad8.comp - adagrad8 (abi/adagrad.h): Adagrad with blockwise 8-bit
 * sum (the signed map, as bitsandbytes' one-state optimizers). A
 * workgroup does spans of 8 blocks (update.glsl's u8_span1):
 * adagrad.comp's update from the dequantized sum, then the block's
 * absmax of the new sum and its codes.
 */
#version 450
#include "common.glsl"
#include "abi/adagrad.h"
#include "group.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
SCAL_BUF(3);
FLOAT_BUF(4, sabs);

#define GPO_U8_STATE
#define U8_ONE_STATE	2
#define PREC_QMAP_SHARED
#define PARAM_HALF_BUF	GPO_ADAGRAD8_BUF_HALF
#include "update.glsl"

/* one element: the arithmetic of adagrad.comp in its order */
float elem(float p0, float g0, uint code, float absmax, out float so)
{
	precise float pi, gi, si;

	pi = p0;
	gi = g0 * gm + args.weight_decay * pi;
	si = u8_dequant(code, absmax, true) + gi * gi;
	/* into a precise value first: no a * b + c fused */
	pi = pi - args.clr * cr_div(gi, cr_sqrt(si) + args.eps);
	so = si;
	return pi;
}

void main()
{
	u8_main1();
}
