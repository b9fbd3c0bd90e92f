// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * attn_fwd.comp - attn_fwd (abi/attention.h): y = softmax(scale q k^T,
 * causal) v and the rows' logsumexp l, one block of 64 queries a
 * workgroup, the key blocks 0 .. its own in order with an online
 * softmax (attention.glsl).
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
layout(set = 0, binding = 3, std430) writeonly buffer y_w1 { float y[]; };
layout(set = 0, binding = 4, std430) writeonly buffer l_w1 { float l[]; };

#include "attention/attention.glsl"

float ld(uint w, uint i)
{
	return w == ATT_Q ? q[i] : w == ATT_K ? k[i] : v[i];
}

void main()
{
	uint t = gl_LocalInvocationID.x, tx = t % 16u, ty = t / 16u;
	bool wide = attn_wide();
	uint z, qb, i0, n = args.t, hd = args.hd, mat;
	float m[4], sl[4];
	vec4 o[4], o2[4];

	if (!attn_group(z, qb))
		return;
	i0 = qb * AB;
	mat = z * n * hd;
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		m[r] = -f_inf();
		sl[r] = 0.0;
		o[r] = vec4(0.0);
		o2[r] = vec4(0.0);
	}
	for (uint kb = 0u; kb <= qb; kb++) {
		uint j0 = kb * AB;
		vec4 s[4];
		float mn[4];

		rows_dot(ATT_Q, args.off_q + mat + i0 * hd, n - i0, ATT_K,
			 args.off_k + mat + j0 * hd, n - j0, s);
		/* scaled, masked; each invocation's part of the row maxima */
		[[unroll]] for (uint r = 0u; r < 4u; r++) {
			uint i = i0 + 4u * ty + r;
			float mx = -f_inf();

			[[unroll]] for (uint c = 0u; c < 4u; c++) {
				uint j = j0 + 4u * tx + c;

				s[r][c] = j > i || j >= n ? -f_inf() :
					  args.scale * s[r][c];
				mx = max(mx, s[r][c]);
			}
			smw((4u * ty + r) * 16u + tx, mx);
		}
		group_sync();
		if (t < AB) {
			float mx = smr(t * 16u);

			[[unroll]] for (uint x = 1u; x < 16u; x++)
				mx = max(mx, smr(t * 16u + x));
			smw(ROW + t, mx);
		}
		group_sync();
		/* p = exp(s - the new max), into the block key-major */
		vec4 rm = sm_get4(ROW + 4u * ty);
		[[unroll]] for (uint r = 0u; r < 4u; r++) {
			float sum = 0.0;

			mn[r] = max(m[r], rm[r]);
			[[unroll]] for (uint c = 0u; c < 4u; c++) {
				float p = exp_acc(s[r][c] - mn[r]);

				sum += p;
				s[r][c] = p;
			}
			smw((4u * ty + r) * 16u + tx, sum);
		}
		[[unroll]] for (uint c = 0u; c < 4u; c++)
			ps_put(4u * tx + c, ty, vec4(s[0][c], s[1][c],
						     s[2][c], s[3][c]));
		group_sync();
		if (t < AB) {
			float sum = 0.0;

			[[unroll]] for (uint x = 0u; x < 16u; x++)
				sum += smr(t * 16u + x);
			smw(ROW + t, sum);
		}
		group_sync();
		rm = sm_get4(ROW + 4u * ty);
		[[unroll]] for (uint r = 0u; r < 4u; r++) {
			float al = exp_acc(m[r] - mn[r]);

			sl[r] = sl[r] * al + rm[r];
			m[r] = mn[r];
			o[r] *= al;
			o2[r] *= al;
		}
		block_mul(ATT_V, args.off_v + mat + j0 * hd, n - j0, o, o2);
	}
	[[unroll]] for (uint r = 0u; r < 4u; r++) {
		uint i = i0 + 4u * ty + r;

		if (i >= n)
			break;
		[[unroll]] for (uint c = 0u; c < 4u; c++) {
			uint col = 4u * tx + c, yo = args.off_y + mat + i * hd;

			if (col < hd)
				y[yo + col] = o[r][c] / sl[r];
			if (wide && col + 64u < hd)
				y[yo + col + 64u] = o2[r][c] / sl[r];
		}
		if (tx == 0u)
			l[args.off_l + z * n + i] = m[r] + log_acc(sl[r]);
	}
}
