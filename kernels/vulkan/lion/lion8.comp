// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * lion8.comp - lion8 (abi/lion.h): Lion with blockwise 8-bit exp_avg
 * (the signed map). A workgroup does blocks group_index(), + q_groups,
 * ...: lion.comp's update from the dequantized state, then the block's
 * absmax of the new state and its codes (update.glsl's u8_* helpers).
 */
#version 450
#include "common.glsl"
#include "abi/lion.h"
#include "group.glsl"

FLOAT_BUF(0, p);
FLOAT_BUF(1, g);
SCAL_BUF(3);
FLOAT_BUF(4, mabs);

#define GPO_U8_STATE
#define PREC_QMAP_SHARED
#include "update.glsl"

U8_BUF(2, m);

void block(uint k)
{
	uint lid = gl_LocalInvocationID.x;
	uint first = k * WG_SIZE, e = first + lid, q = args.q_off + e;
	uint cnt = min(WG_SIZE, args.n - first), blk = args.q_blk + k;
	uint w = (args.q_off + first) / 4u + lid, word, unused;
	bool valid = lid < cnt, packs = lid < WG_SIZE / 4u && 4u * lid < cnt;
	precise float pi, gi, mi = 0.0, c;
	float ma, unused_f;

	if (valid) {
		float m0 = u8_dequant(u8_byte(mq[q >> 2], q), mabs[blk], true);

		gi = g[e] * gm;
		/* precise: sign(c) must flip nowhere the cpu's does not */
		c = m0 * args.beta1 + args.one_minus_beta1 * gi;
		/* into a precise value first: no a * b + c fused */
		pi = p[e];
		pi = pi * args.decay - args.lr * sign(c);
		p[e] = pi;
		mi = m0 * args.beta2 + args.one_minus_beta2 * gi;
	}
	u8_absmax(mi, 0.0, 1u, valid, ma, unused_f);
	if (lid == 0u)
		mabs[blk] = ma;
	if (u8_pack(valid ? quant8(mi, ma, true) : 0u, 0u, cnt,
		    packs ? mq[w] : 0u, 0u, word, unused))
		mq[w] = word;
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
