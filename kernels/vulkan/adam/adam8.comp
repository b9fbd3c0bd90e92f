// SPDX-License-Identifier: MIT
// dtypes: f32 f16 bf16
// recorded: yes
/*
 * adam8.comp - adam8 (abi/adam.h): Adam and AdamW with blockwise 8-bit
 * state. A workgroup does spans of 8 blocks (update.glsl's u8_*): each
 * invocation its two quads of a block, dequantizing each element's
 * exp_avg (signed map) and exp_avg_sq (unsigned map), updating them and
 * p exactly as adam.comp does (p from the unrounded new state); then the
 * block's absmax of the new values and its words of codes. Half
 * parameters (abi.h GPO_UPD_PARAM_*) through update.glsl's param_*, in
 * the f16 and bf16 modules only.
 */
#version 450
#include "common.glsl"
#include "abi/adam.h"
#include "group.glsl"

FLOAT4_BUF(0, p);
FLOAT4_BUF(1, g);
SCAL_BUF(5);
FLOAT_BUF(6, mabs);
FLOAT_BUF(7, vabs);

#define GPO_U8_STATE
#define PREC_QMAP_SHARED
#define PARAM_HALF_BUF	GPO_ADAM8_BUF_HALF
#include "update.glsl"

U8_BUF(2, m);
U8_BUF(3, v);

float decay, l2;

/*
 * One element: the arithmetic of adam.comp in its order; p returned.
 * @fast (a constant at each call): the fast paths alone (u8_dequant_f,
 * cr_div_f, cr_sqrt_f), which clear @ok where they do not hold; else the
 * full functions. The same operations either way.
 */
float elem(float p0, float g0, uint mc, uint vc, float ma, float va,
	   bool fast, inout bool ok, out float mo, out float vo)
{
	precise float pi, mi, vi, gi, denom, s;

	pi = p0;
	gi = g0 * gm + l2 * pi;
	mi = (fast ? u8_dequant_f(mc, ma, true) : u8_dequant(mc, ma, true)) *
	     args.beta1 + args.one_minus_beta1 * gi;
	vi = (fast ? u8_dequant_f(vc, va, false) :
		     u8_dequant(vc, va, false)) * args.beta2 +
	     args.one_minus_beta2 * gi * gi;
	s = fast ? cr_sqrt_f(vi, ok) : cr_sqrt(vi);
	denom = (fast ? cr_div_f(s, args.bc2_sqrt, ok) :
			cr_div(s, args.bc2_sqrt)) + args.eps;
	/* into a precise value first: no a * b + c fused */
	pi = pi * decay - args.step_size * (fast ? cr_div_f(mi, denom, ok) :
						   cr_div(mi, denom));
	mo = mi;
	vo = vi;
	return pi;
}

void span(uint s, uint par, bool hp)
{
	uint k, first, cnt, blk, c[2], e[2], w[2], mw[2], vw[2];
	vec4 pv[2], mv[2], vv[2];
	uint mx = 0u, vx = 0u;
	float ma = 0.0, va = 0.0, na, nv, mr, vr;

	u8_block(s, k, first, cnt);
	blk = args.q_blk + k;
	if (cnt != 0u) {
		ma = mabs[blk];
		va = vabs[blk];
	}
	for (uint h = 0u; h < 2u; h++) {
		c[h] = u8_quad_cnt(cnt, h);
		e[h] = u8_quad_first(first, h);
		/* q_off is a multiple of 4: the quad's codes are one word */
		w[h] = (args.q_off + e[h]) / 4u;
		if (c[h] == 0u)
			continue;
		vec4 gv, p0;
		bool ok = prec_qv_fast(ma) && prec_qv_fast(va);

		u8_quad_load(hp, e[h] / 4u, c[h], pv[h], gv);
		mw[h] = mq[w[h]];
		vw[h] = vq[w[h]];
		p0 = pv[h];
		for (uint l = 0u; l < 4u; l++) {
			float mo = 0.0, vo = 0.0;

			if (l < c[h])
				pv[h][l] = elem(p0[l], gv[l],
						u8_byte(mw[h], l),
						u8_byte(vw[h], l), ma, va,
						true, ok, mo, vo);
			mv[h][l] = mo;
			vv[h][l] = vo;
		}
		/* what the fast paths could not do, again in full */
		if (!ok) {
			[[dont_unroll]] for (uint l = 0u; l < c[h]; l++) {
				float mo, vo;

				pv[h][l] = elem(p0[l], gv[l],
						u8_byte(mw[h], l),
						u8_byte(vw[h], l), ma, va,
						false, ok, mo, vo);
				mv[h][l] = mo;
				vv[h][l] = vo;
			}
		}
		u8_quad_store(hp, e[h] / 4u, c[h], pv[h]);
		mx = max(mx, u8_bits_max(mv[h], c[h]));
		vx = max(vx, u8_bits_max(vv[h], c[h]));
	}
	/* every invocation of the block has read mabs[blk] by now */
	u8_absmax(par, mx, vx, na, nv);
	if (cnt != 0u && u8_lid() % U8_LANES == 0u) {
		mabs[blk] = na;
		vabs[blk] = nv;
	}
	/* each block's factor once (prec_qrcp()), then its codes */
	mr = prec_qrcp(na);
	vr = prec_qrcp(nv);
	for (uint h = 0u; h < 2u; h++) {
		if (c[h] == 0u)
			continue;
		mq[w[h]] = u8_word(mv[h], c[h], mr, na, true, mw[h]);
		vq[w[h]] = u8_word(vv[h], c[h], vr, nv, false, vw[h]);
	}
}

void main()
{
	uint par = 0u;

	prec_qmap_load();
	barrier();
	/* every invocation reads the same scal: all return alike */
	if (!grad_mul())
		return;
	decay = FLAG(GPO_ADAM_DECOUPLED) ? args.decay : 1.0;
	l2 = FLAG(GPO_ADAM_DECOUPLED) ? 0.0 : args.weight_decay;
	/* param_half() is this module's constant (update.glsl) */
	for (uint s = group_index(); s < u8_spans(); s += args.q_groups) {
		span(s, par, param_half());
		par ^= 1u;
	}
}
