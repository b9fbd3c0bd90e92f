// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * rmsprop.comp - rmsprop, torch 1.13's RMSprop:
 *   g = g + wd * p
 *   sq = alpha * sq + (1 - alpha) * g^2
 *   centered: ga = alpha * ga + (1 - alpha) * g; avg = sqrt(sq - ga^2) + eps
 *   else avg = sqrt(sq) + eps
 *   momentum: b = mom * b + g / avg; p = p - lr * b
 *   else p = p - lr * g / avg
 */
#version 450
#include "common.glsl"
#include "abi/rmsprop.h"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
FLOAT4_BUF(2, sq);
FLOAT4_BUF(3, buf);
FLOAT4_BUF(4, ga);
SCAL_BUF(5);

#define PARAM_HALF_BUF GPO_RMSPROP_BUF_HALF
#include "update.glsl"

/* GPO_RMSPROP_STATE_BF16: the state as bfloat16 */
BF16X4_BUF(2, sq);
BF16X4_BUF(3, buf);
BF16X4_BUF(4, ga);

bool begin()
{
	return grad_mul();
}

void rmsprop(precise inout vec4 pi, vec4 g0, precise inout vec4 si,
	     precise inout vec4 bi, precise inout vec4 gai)
{
	float lr = args.lr, alpha = args.alpha, eps = args.eps;
	float wd = args.weight_decay, mom = args.momentum;
	float oa = args.one_minus_alpha;
	precise vec4 gi = g0 * gm + wd * pi;
	/*
	 * precise: sq - ga^2 must not become fma(-ga, ga, sq), which is
	 * negative (and sqrt NaN) where the cpu gets 0, e.g. with alpha 0
	 */
	precise vec4 s;
	precise vec4 avg;

	si = si * alpha + oa * gi * gi;
	s = si;
	if (FLAG(GPO_RMSPROP_CENTERED)) {
		gai = gai * alpha + oa * gi;
		s = s - gai * gai;
	}
	avg = cr_sqrt4(s) + eps;
	if (FLAG(GPO_RMSPROP_MOMENTUM)) {
		bi = bi * mom + cr_div4(gi, avg);
		pi = pi - lr * bi;
	} else {
		pi = pi - lr * cr_div4(gi, avg);
	}
}

/* elements 4i .. 4i + cnt - 1 with bfloat16 state, one invocation */
void update_bf16(uint i, uint cnt)
{
	bool mom = FLAG(GPO_RMSPROP_MOMENTUM), cen = FLAG(GPO_RMSPROP_CENTERED);
	uvec2 sw = sqh[i], bw = mom ? bufh[i] : uvec2(0u);
	uvec2 gaw = cen ? gah[i] : uvec2(0u);
	vec4 si = bf16x4_load(sw), bi = bf16x4_load(bw);
	vec4 gai = bf16x4_load(gaw), pi = vec4(0.0), gi = vec4(0.0);

	pi = param_load(i, cnt);
	gi = param_grad(i, cnt);
	rmsprop(pi, gi, si, bi, gai);
	param_store(i, cnt, pi);
	sqh[i] = bf16x4_store(si, sw, cnt);
	if (mom)
		bufh[i] = bf16x4_store(bi, bw, cnt);
	if (cen)
		gah[i] = bf16x4_store(gai, gaw, cnt);
}

void update4(uint i)
{
	if (FLAG(GPO_RMSPROP_STATE_BF16)) {
		update_bf16(i, 4u);
		return;
	}
	vec4 pi = param_load(i, 4u), si = sq4[i];
	vec4 bi = FLAG(GPO_RMSPROP_MOMENTUM) ? buf4[i] : vec4(0.0);
	vec4 gai = FLAG(GPO_RMSPROP_CENTERED) ? ga4[i] : vec4(0.0);

	rmsprop(pi, param_grad(i, 4u), si, bi, gai);
	param_store(i, 4u, pi);
	sq4[i] = si;
	if (FLAG(GPO_RMSPROP_MOMENTUM))
		buf4[i] = bi;
	if (FLAG(GPO_RMSPROP_CENTERED))
		ga4[i] = gai;
}

void update1(uint i)
{
	if (FLAG(GPO_RMSPROP_STATE_BF16)) {
		/* the first tail invocation does the whole tail */
		if ((i & 3u) == 0u)
			update_bf16(i >> 2, args.n & 3u);
		return;
	}
	vec4 pi = vec4(param_load1(i)), si = vec4(sq[i]);
	vec4 bi = vec4(FLAG(GPO_RMSPROP_MOMENTUM) ? buf[i] : 0.0);
	vec4 gai = vec4(FLAG(GPO_RMSPROP_CENTERED) ? ga[i] : 0.0);

	rmsprop(pi, vec4(param_grad1(i)), si, bi, gai);
	param_store1(i, pi.x);
	sq[i] = si.x;
	if (FLAG(GPO_RMSPROP_MOMENTUM))
		buf[i] = bi.x;
	if (FLAG(GPO_RMSPROP_CENTERED))
		ga[i] = gai.x;
}

#include "element.glsl"
