// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * rmsprop8.comp - rmsprop8 (abi/rmsprop.h): RMSprop with blockwise 8-bit
 * square_avg (the signed map, as bitsandbytes' RMSprop8bit), neither
 * momentum nor centered. A workgroup does spans of 8 blocks
 * (update.glsl's u8_span1): rmsprop.comp's update from the dequantized
 * state, then the block's absmax of the new state and its codes.
 */
#version 450
#include "common.glsl"
#include "abi/rmsprop.h"
#include "group.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
SCAL_BUF(5);
FLOAT_BUF(6, sabs);

#define GPO_U8_STATE
#define U8_ONE_STATE	2
#define PREC_QMAP_SHARED
#define PARAM_HALF_BUF	GPO_RMSPROP8_BUF_HALF
#include "update.glsl"

/* one element: the arithmetic of rmsprop.comp in its order */
float elem(float p0, float g0, uint code, float absmax, out float so)
{
	precise float pi, gi, si, avg;

	pi = p0;
	gi = g0 * gm + args.weight_decay * pi;
	si = u8_dequant(code, absmax, true) * args.alpha +
	     args.one_minus_alpha * gi * gi;
	avg = cr_sqrt(si) + args.eps;
	/* into a precise value first: no a * b + c fused */
	pi = pi - args.lr * cr_div(gi, avg);
	so = si;
	return pi;
}

void main()
{
	u8_main1();
}
