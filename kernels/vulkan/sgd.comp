// SPDX-License-Identifier: MIT
/*
 * sgd.comp - K_SGD, torch 1.13's SGD:
 *   d = g + wd * p
 *   with momentum: b = first ? d : mom * b + (1 - dampening) * d
 *                  d = nesterov ? d + mom * b : b
 *   p = p - lr * d
 * The momentum buffer is bound only with KF_MOMENTUM.
 */
#version 450
#include "common.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, buf);
SCAL_BUF(3);

#include "update.glsl"

bool begin()
{
	return grad_mul();
}

/* s0 lr, s1 weight_decay, s2 momentum, s4 1 - dampening (from double) */
void sgd(inout vec4 pi, vec4 gi, inout vec4 bi)
{
	float lr = args.s[0], wd = args.s[1], mom = args.s[2];
	float damp = args.s[4];
	vec4 d = gi * gm + wd * pi;

	if (FLAG(KF_MOMENTUM)) {
		vec4 b = FLAG(KF_FIRST) ? d : mom * bi + damp * d;

		bi = b;
		d = FLAG(KF_NESTEROV) ? d + mom * b : b;
	}
	pi = pi - lr * d;
}

void update4(uint i)
{
	vec4 pi = p4[i];
	vec4 bi = FLAG(KF_MOMENTUM) && !FLAG(KF_FIRST) ? buf4[i] : vec4(0.0);

	sgd(pi, g4[i], bi);
	p4[i] = pi;
	if (FLAG(KF_MOMENTUM))
		buf4[i] = bi;
}

void update1(uint i)
{
	vec4 pi = vec4(p[i]);
	vec4 bi = vec4(FLAG(KF_MOMENTUM) && !FLAG(KF_FIRST) ? buf[i] : 0.0);

	sgd(pi, vec4(g[i]), bi);
	p[i] = pi.x;
	if (FLAG(KF_MOMENTUM))
		buf[i] = bi.x;
}

#include "element.glsl"
