// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * adagrad.comp - adagrad, torch 1.13's Adagrad:
 *   g = g + wd * p
 *   sum = sum + g^2
 *   p = p - clr * g / (sqrt(sum) + eps)
 * with clr = lr / (1 + (step - 1) * lr_decay) from the host.
 */
#version 450
#include "common.glsl"
#include "abi/adagrad.h"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, sum);
SCAL_BUF(3);

#define PARAM_HALF_BUF GPO_ADAGRAD_BUF_HALF
#include "update.glsl"

/* GPO_ADAGRAD_STATE_BF16: sum as bfloat16 */
BF16X4_BUF(2, sum);

bool begin()
{
	return grad_mul();
}

void adagrad(precise inout vec4 pi, vec4 g0, precise inout vec4 si)
{
	float clr = args.clr, wd = args.weight_decay, eps = args.eps;
	precise vec4 gi = g0 * gm + wd * pi;

	si = si + gi * gi;
	pi = pi - clr * cr_div4(gi, cr_sqrt4(si) + eps);
}

/* elements 4i .. 4i + cnt - 1 with bfloat16 state, one invocation */
void update_bf16(uint i, uint cnt)
{
	uvec2 sw = sumh[i];
	vec4 si = bf16x4_load(sw), pi = vec4(0.0), gi = vec4(0.0);

	pi = param_load(i, cnt);
	gi = param_grad(i, cnt);
	adagrad(pi, gi, si);
	param_store(i, cnt, pi);
	sumh[i] = bf16x4_store(si, sw, cnt);
}

void update4(uint i)
{
	if (FLAG(GPO_ADAGRAD_STATE_BF16)) {
		update_bf16(i, 4u);
		return;
	}
	vec4 pi = param_load(i, 4u), si = sum4[i];

	adagrad(pi, param_grad(i, 4u), si);
	param_store(i, 4u, pi);
	sum4[i] = si;
}

void update1(uint i)
{
	if (FLAG(GPO_ADAGRAD_STATE_BF16)) {
		/* the first tail invocation does the whole tail */
		if ((i & 3u) == 0u)
			update_bf16(i >> 2, args.n & 3u);
		return;
	}
	vec4 pi = vec4(param_load1(i)), si = vec4(sum[i]);

	adagrad(pi, vec4(param_grad1(i)), si);
	param_store1(i, pi.x);
	sum[i] = si.x;
}

#include "element.glsl"
