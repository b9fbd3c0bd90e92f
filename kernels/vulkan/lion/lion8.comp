// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * lion8.comp - lion8 (abi/lion.h): Lion with blockwise 8-bit exp_avg
 * (the signed map). A workgroup does spans of 8 blocks (update.glsl's
 * u8_span1): lion.comp's update from the dequantized state, then the
 * block's absmax of the new state and its codes.
 */
#version 450
#include "common.glsl"
#include "abi/lion.h"
#include "group.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
SCAL_BUF(3);
FLOAT_BUF(4, sabs);

#define GPO_U8_STATE
#define U8_ONE_STATE	2
#define PREC_QMAP_SHARED
#define PARAM_HALF_BUF	GPO_LION8_BUF_HALF
#include "update.glsl"

/* one element: the arithmetic of lion.comp in its order */
float elem(float p0, float g0, uint code, float absmax, out float so)
{
	float m0 = u8_dequant(code, absmax, true);
	precise float pi, gi, mi, c;

	gi = g0 * gm;
	/* precise: sign(c) must flip nowhere the cpu's does not */
	c = m0 * args.beta1 + args.one_minus_beta1 * gi;
	/* into a precise value first: no a * b + c fused */
	pi = p0;
	pi = pi * args.decay - args.lr * sign(c);
	mi = m0 * args.beta2 + args.one_minus_beta2 * gi;
	so = mi;
	return pi;
}

void main()
{
	u8_main1();
}
