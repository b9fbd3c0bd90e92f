// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * sgd.comp - sgd, torch 1.13's SGD:
 *   d = g + wd * p
 *   with momentum: b = first ? d : mom * b + (1 - dampening) * d
 *                  d = nesterov ? d + mom * b : b
 *   p = p - lr * d
 * The momentum buffer is bound only with GPO_SGD_MOMENTUM.
 */
#version 450
#include "common.glsl"
#include "abi/sgd.h"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, buf);
SCAL_BUF(3);

#define PARAM_HALF_BUF GPO_SGD_BUF_HALF
#include "update.glsl"

bool begin()
{
	return grad_mul();
}

/* one_minus_dampening: 1 - dampening, from double */
void sgd(precise inout vec4 pi, vec4 gi, precise inout vec4 bi)
{
	float lr = args.lr, wd = args.weight_decay, mom = args.momentum;
	float damp = args.one_minus_dampening;
	precise vec4 d = gi * gm + wd * pi;

	if (FLAG(GPO_SGD_MOMENTUM)) {
		precise vec4 b = FLAG(GPO_SGD_FIRST) ? d : mom * bi + damp * d;

		bi = b;
		d = FLAG(GPO_SGD_NESTEROV) ? d + mom * b : b;
	}
	pi = pi - lr * d;
}

void update4(uint i)
{
	vec4 pi = param_load(i, 4u);
	vec4 bi = FLAG(GPO_SGD_MOMENTUM) && !FLAG(GPO_SGD_FIRST) ?
		  buf4[i] : vec4(0.0);

	sgd(pi, param_grad(i, 4u), bi);
	param_store(i, 4u, pi);
	if (FLAG(GPO_SGD_MOMENTUM))
		buf4[i] = bi;
}

void update1(uint i)
{
	vec4 pi = vec4(param_load1(i));
	vec4 bi = vec4(FLAG(GPO_SGD_MOMENTUM) && !FLAG(GPO_SGD_FIRST) ?
		       buf[i] : 0.0);

	sgd(pi, vec4(param_grad1(i)), bi);
	param_store1(i, pi.x);
	if (FLAG(GPO_SGD_MOMENTUM))
		buf[i] = bi.x;
}

#include "element.glsl"
