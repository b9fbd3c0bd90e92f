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

#define PARAM_HALF_BUF GPO_LION_BUF_HALF
#include "update.glsl"

/* GPO_LION_STATE_BF16: exp_avg as bfloat16 */
BF16X4_BUF(2, m);

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

/* elements 4i .. 4i + cnt - 1 with bfloat16 state, one invocation */
void update_bf16(uint i, uint cnt)
{
	uvec2 mw = mh[i];
	vec4 mi = bf16x4_load(mw), pi = vec4(0.0), gi = vec4(0.0);

	pi = param_load(i, cnt);
	gi = param_grad(i, cnt);
	lion(pi, gi, mi);
	param_store(i, cnt, pi);
	mh[i] = bf16x4_store(mi, mw, cnt);
}

void update4(uint i)
{
	if (FLAG(GPO_LION_STATE_BF16)) {
		update_bf16(i, 4u);
		return;
	}
	vec4 pi = param_load(i, 4u), mi = m4[i];

	lion(pi, param_grad(i, 4u), mi);
	param_store(i, 4u, pi);
	m4[i] = mi;
}

void update1(uint i)
{
	if (FLAG(GPO_LION_STATE_BF16)) {
		/* the first tail invocation does the whole tail */
		if ((i & 3u) == 0u)
			update_bf16(i >> 2, args.n & 3u);
		return;
	}
	vec4 pi = vec4(param_load1(i)), mi = vec4(m[i]);

	lion(pi, vec4(param_grad1(i)), mi);
	param_store1(i, pi.x);
	m[i] = mi.x;
}

#include "element.glsl"
