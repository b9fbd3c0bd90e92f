// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * adam.comp - adam, torch 1.13's Adam and AdamW:
 *   Adam:  g = g + wd * p          AdamW: p = p * (1 - lr * wd) first
 *   m = b1 * m + (1 - b1) * g
 *   v = b2 * v + (1 - b2) * g^2
 *   amsgrad: vmax = max(vmax, v), used in place of v
 *   p = p - step_size * m / (sqrt(v) / sqrt(bc2) + eps)
 * with step_size = lr / bc1 and sqrt(bc2) computed in double on the host.
 */
#version 450
#include "common.glsl"
#include "abi/adam.h"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, m);
FLOAT4_BUF(3, v);
FLOAT4_BUF(4, vmax);
SCAL_BUF(5);

#define PARAM_HALF_BUF GPO_ADAM_BUF_HALF
#include "update.glsl"

/* GPO_ADAM_STATE_BF16: the state as bfloat16 */
BF16X4_BUF(2, m);
BF16X4_BUF(3, v);
BF16X4_BUF(4, vmax);

bool begin()
{
	return grad_mul();
}

/*
 * one_minus_beta1/2 come from double on the host: 1.0f - 0.999f is off
 * by 1e-5
 */
void adam(precise inout vec4 pi, vec4 g0, precise inout vec4 mi,
	  precise inout vec4 vi, precise inout vec4 vmi)
{
	float b1 = args.beta1, b2 = args.beta2, eps = args.eps;
	float step_size = args.step_size, bc2_sqrt = args.bc2_sqrt;
	float ob1 = args.one_minus_beta1, ob2 = args.one_minus_beta2;
	bool decoupled = FLAG(GPO_ADAM_DECOUPLED);
	float decay = decoupled ? args.decay : 1.0;
	float l2 = decoupled ? 0.0 : args.weight_decay;
	precise vec4 gi = g0 * gm + l2 * pi;
	precise vec4 denom;

	mi = mi * b1 + ob1 * gi;
	vi = vi * b2 + ob2 * gi * gi;
	denom = vi;
	if (FLAG(GPO_ADAM_AMSGRAD)) {
		vmi = max(vmi, vi);
		denom = vmi;
	}
	denom = cr_div4(cr_sqrt4(denom), vec4(bc2_sqrt)) + eps;
	pi = pi * decay - step_size * cr_div4(mi, denom);
}

/*
 * Elements 4i .. 4i + cnt - 1 with bfloat16 state: one invocation does
 * the whole float4 (the tail too, so no two write halves of one word)
 */
void update_bf16(uint i, uint cnt)
{
	bool ams = FLAG(GPO_ADAM_AMSGRAD);
	uvec2 mw = mh[i], vw = vh[i], vmw = ams ? vmaxh[i] : uvec2(0u);
	vec4 pi, gi;
	vec4 mi = bf16x4_load(mw), vi = bf16x4_load(vw);
	vec4 vmi = bf16x4_load(vmw);

	pi = param_load(i, cnt);
	gi = param_grad(i, cnt);
	adam(pi, gi, mi, vi, vmi);
	param_store(i, cnt, pi);
	mh[i] = bf16x4_store(mi, mw, cnt);
	vh[i] = bf16x4_store(vi, vw, cnt);
	if (ams)
		vmaxh[i] = bf16x4_store(vmi, vmw, cnt);
}

void update4(uint i)
{
	if (FLAG(GPO_ADAM_STATE_BF16)) {
		update_bf16(i, 4u);
		return;
	}
	vec4 pi = param_load(i, 4u), mi = m4[i], vi = v4[i];
	vec4 vmi = FLAG(GPO_ADAM_AMSGRAD) ? vmax4[i] : vec4(0.0);

	adam(pi, param_grad(i, 4u), mi, vi, vmi);
	param_store(i, 4u, pi);
	m4[i] = mi;
	v4[i] = vi;
	if (FLAG(GPO_ADAM_AMSGRAD))
		vmax4[i] = vmi;
}

void update1(uint i)
{
	if (FLAG(GPO_ADAM_STATE_BF16)) {
		/* the first tail invocation does the whole tail */
		if ((i & 3u) == 0u)
			update_bf16(i >> 2, args.n & 3u);
		return;
	}
	vec4 pi = vec4(param_load1(i)), mi = vec4(m[i]), vi = vec4(v[i]);
	vec4 vmi = vec4(FLAG(GPO_ADAM_AMSGRAD) ? vmax[i] : 0.0);

	adam(pi, vec4(param_grad1(i)), mi, vi, vmi);
	param_store1(i, pi.x);
	m[i] = mi.x;
	v[i] = vi.x;
	if (FLAG(GPO_ADAM_AMSGRAD))
		vmax[i] = vmi.x;
}

#include "element.glsl"
