// SPDX-License-Identifier: MIT
/*
 * lion.comp - K_LION (Chen et al. 2023, as lion-pytorch):
 *   c = b1 * m + (1 - b1) * g
 *   p = p * (1 - lr * wd) - lr * sign(c)       (sign(0) = 0)
 *   m = b2 * m + (1 - b2) * g
 */
#version 450
#include "common.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, m);
SCAL_BUF(3);

#include "update.glsl"

bool begin()
{
	return grad_mul();
}

/*
 * s0 lr, s1 beta1, s2 beta2, s3 decay (1 - lr * wd), s4 1 - beta1,
 * s5 1 - beta2
 */
void lion(inout vec4 pi, vec4 g0, inout vec4 mi)
{
	float lr = args.s[0], b1 = args.s[1], b2 = args.s[2];
	float decay = args.s[3], ob1 = args.s[4], ob2 = args.s[5];
	vec4 gi = g0 * gm;
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
