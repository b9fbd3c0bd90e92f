// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * lion.comp - lion (Chen et al. 2023, as lion-pytorch):
 *   c = b1 * m + (1 - b1) * g
 *   p = p * (1 - lr * wd) - lr * sign(c)       (sign(0) = 0)
 *   m = b2 * m + (1 - b2) * g
 */
#version 450
#include "common.glsl"
#include "abi/lion.h"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, m);
SCAL_BUF(3);

#include "update.glsl"

bool begin()
{
	return grad_mul();
}

void lion(precise inout vec4 pi, vec4 g0, precise inout vec4 mi)
{
	float lr = args.lr, b1 = args.beta1, b2 = args.beta2;
	float decay = args.decay, ob1 = args.one_minus_beta1;
	float ob2 = args.one_minus_beta2;
	precise vec4 gi = g0 * gm;
	/*
	 * precise: no fma here, so c has the cpu's bits and sign(c) flips
	 * nowhere (a flip moves p by 2 lr)
	 */
	precise vec4 c = mi * b1 + ob1 * gi;

	/* GLSL's sign() is 0 at 0, as torch.sign */
	pi = pi * decay - lr * sign(c);
	mi = mi * b2 + ob2 * gi;
}

void update4(uint i)
{
	vec4 pi = p4[i], mi = m4[i];

	lion(pi, g4[i], mi);
	p4[i] = pi;
	m4[i] = mi;
}

void update1(uint i)
{
	vec4 pi = vec4(p[i]), mi = vec4(m[i]);

	lion(pi, vec4(g[i]), mi);
	p[i] = pi.x;
	m[i] = mi.x;
}

#include "element.glsl"
