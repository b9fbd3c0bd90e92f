// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * adam8.comp - adam8 (abi/adam.h): Adam and AdamW with blockwise 8-bit
 * state. A workgroup does blocks group_index(), + q_groups, ...: each
 * invocation dequantizes its element's exp_avg (signed map) and
 * exp_avg_sq (unsigned map), updates them and p exactly as adam.comp
 * does (p from the unrounded new state), then the block's absmax of the
 * new values is reduced and the codes packed (update.glsl's u8_*).
 */
#version 450
#include "common.glsl"
#include "abi/adam.h"
#include "group.glsl"

FLOAT_BUF(0, p);
FLOAT_BUF(1, g);
SCAL_BUF(5);
FLOAT_BUF(6, mabs);
FLOAT_BUF(7, vabs);

#define GPO_U8_STATE
#define PREC_QMAP_SHARED
#include "update.glsl"

U8_BUF(2, m);
U8_BUF(3, v);

void block(uint k)
{
	uint lid = gl_LocalInvocationID.x;
	uint first = k * WG_SIZE, e = first + lid, q = args.q_off + e;
	uint cnt = min(WG_SIZE, args.n - first), blk = args.q_blk + k;
	uint w = (args.q_off + first) / 4u + lid, mw, vw;
	bool valid = lid < cnt, packs = lid < WG_SIZE / 4u && 4u * lid < cnt;
	bool decoupled = FLAG(GPO_ADAM_DECOUPLED);
	float decay = decoupled ? args.decay : 1.0;
	float l2 = decoupled ? 0.0 : args.weight_decay;
	precise float pi, mi = 0.0, vi = 0.0, gi, denom;
	float ma, va;

	if (valid) {
		pi = p[e];
		gi = g[e] * gm + l2 * pi;
		mi = u8_dequant(u8_byte(mq[q >> 2], q), mabs[blk], true) *
		     args.beta1 + args.one_minus_beta1 * gi;
		vi = u8_dequant(u8_byte(vq[q >> 2], q), vabs[blk], false) *
		     args.beta2 + args.one_minus_beta2 * gi * gi;
		denom = cr_div(cr_sqrt(vi), args.bc2_sqrt) + args.eps;
		/* into a precise value first: no a * b + c fused */
		pi = pi * decay - args.step_size * cr_div(mi, denom);
		p[e] = pi;
	}
	u8_absmax(mi, vi, 2u, valid, ma, va);
	if (lid == 0u) {
		mabs[blk] = ma;
		vabs[blk] = va;
	}
	/* q_off is a multiple of 4: the block's codes are whole words */
	if (u8_pack(valid ? quant8(mi, ma, true) : 0u,
		    valid ? quant8(vi, va, false) : 0u, cnt,
		    packs ? mq[w] : 0u, packs ? vq[w] : 0u, mw, vw)) {
		mq[w] = mw;
		vq[w] = vw;
	}
}

void main()
{
	prec_qmap_load();
	barrier();
	/* every invocation reads the same scal: all return alike */
	if (!grad_mul())
		return;
	for (uint k = group_index(); k < u8_blocks(); k += args.q_groups)
		block(k);
}
