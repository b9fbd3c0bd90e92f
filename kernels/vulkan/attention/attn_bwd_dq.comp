// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_bwd_dq.comp - attn_bwd_dq (abi/attention.h): one block of 64
 * queries a workgroup, the key blocks 0 .. its own in order: p again from
 * q, k and l, ds = p (dy v^T - d), dq (+)= scale ds k (attention.glsl).
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/attention.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, q);
FLOAT_IN(1, k);
FLOAT_IN(2, v);
FLOAT_IN(3, dy);
FLOAT_IN(4, l);
FLOAT_IN(5, d);
FLOAT_BUF(6, dq);

#include "attention/attention.glsl"

float ld(uint w, uint i)
{
	return w == ATT_Q ? q[i] : w == ATT_K ? k[i] :
	       w == ATT_V ? v[i] : dy[i];
}

void main()
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	bool wide = attn_wide();
	uint z, qb, i0, n = args.t, hd = args.hd, mat;
	vec4 o[4], o2[4];

	if (!attn_group(z, qb))
		return;
	i0 = qb * AB;
	mat = z * n * hd;
	ROWS_LD(i0, z);
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		o[r] = vec4(0.0);
		o2[r] = vec4(0.0);
	}
	for (uint kb = 0u; kb <= qb; kb++) {
		uint j0 = kb * AB;
		vec4 s[4], dp[4];

		rows_dot(ATT_Q, args.off_q + mat + i0 * hd, n - i0, ATT_K,
			 args.off_k + mat + j0 * hd, n - j0, s);
		rows_dot(ATT_DY, args.off_dy + mat + i0 * hd, n - i0, ATT_V,
			 args.off_v + mat + j0 * hd, n - j0, dp);
		vec4 lv = sm_get4(ROW + AB + 4u * ty);
		vec4 dv4 = sm_get4(ROW + 2u * AB + 4u * ty);

		/* ds = p (dp - d), into the block key-major */
		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint j = j0 + 4u * tx + c;
			vec4 dc;

			[[unroll]] for (uint r = 0u; r < 4u; r++) {
				uint i = i0 + 4u * ty + r;
				float e = exp_acc(args.scale * s[r][c] - lv[r]);
				float p = j > i || j >= n ? 0.0 : e;

				dc[r] = p * (dp[r][c] - dv4[r]);
			}
			ps_put(4u * tx + c, ty, dc);
		}
		group_sync();
		block_mul(ATT_K, args.off_k + mat + j0 * hd, n - j0, o, o2);
	}
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		uint i = i0 + 4u * ty + r;

		if (i >= n)
			break;
		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint col = 4u * tx + c, xo = args.off_dq + mat + i * hd;

			if (col < hd)
				STORE(dq, xo + col, args.scale * o[r][c]);
			if (wide && col + 64u < hd)
				STORE(dq, xo + col + 64u,
				      args.scale * o2[r][c]);
		}
	}
}
