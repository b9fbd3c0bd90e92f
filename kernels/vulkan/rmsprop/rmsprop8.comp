// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * rmsprop8.comp - rmsprop8 (abi/rmsprop.h): RMSprop with blockwise 8-bit
 * square_avg (the signed map, as bitsandbytes' RMSprop8bit), neither
 * momentum nor centered. A workgroup does blocks group_index(), +
 * q_groups, ...: rmsprop.comp's update from the dequantized state, then
 * the block's absmax of the new state and its codes.
 */
#version 450
#include "common.glsl"
#include "abi/rmsprop.h"
#include "group.glsl"

FLOAT_BUF(0, p);
FLOAT_BUF(1, g);
SCAL_BUF(5);
FLOAT_BUF(6, sabs);

#define GPO_U8_STATE
#define PREC_QMAP_SHARED
#include "update.glsl"

U8_BUF(2, s);

void block(uint k)
{
	uint lid = gl_LocalInvocationID.x;
	uint first = k * WG_SIZE, e = first + lid, q = args.q_off + e;
	uint cnt = min(WG_SIZE, args.n - first), blk = args.q_blk + k;
	uint w = (args.q_off + first) / 4u + lid, word, unused;
	bool valid = lid < cnt, packs = lid < WG_SIZE / 4u && 4u * lid < cnt;
	precise float pi, gi, si = 0.0, avg;
	float sa, unused_f;

	if (valid) {
		pi = p[e];
		gi = g[e] * gm + args.weight_decay * pi;
		si = u8_dequant(u8_byte(sq[q >> 2], q), sabs[blk], true) *
		     args.alpha + args.one_minus_alpha * gi * gi;
		avg = cr_sqrt(si) + args.eps;
		/* into a precise value first: no a * b + c fused */
		pi = pi - args.lr * cr_div(gi, avg);
		p[e] = pi;
	}
	u8_absmax(si, 0.0, 1u, valid, sa, unused_f);
	if (lid == 0u)
		sabs[blk] = sa;
	if (u8_pack(valid ? quant8(si, sa, true) : 0u, 0u, cnt,
		    packs ? sq[w] : 0u, 0u, word, unused))
		sq[w] = word;
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
