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

#include "update.glsl"

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

void update4(uint i)
{
	vec4 pi = p4[i], si = sum4[i];

	adagrad(pi, g4[i], si);
	p4[i] = pi;
	sum4[i] = si;
}

void update1(uint i)
{
	vec4 pi = vec4(p[i]), si = vec4(sum[i]);

	adagrad(pi, vec4(g[i]), si);
	p[i] = pi.x;
	sum[i] = si.x;
}

#include "element.glsl"
