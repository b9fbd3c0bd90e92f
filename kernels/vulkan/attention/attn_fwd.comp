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
		/*
		 * Each row's 16 parts of its maximum, then of its sum, in
		 * the staging buffers (AB * 16 floats each): the maxima in
		 * the one block_mul stores first, after the second barrier
		 * below; the sums, written after the first, in the one the
		 * last step of rows_dot read, which block_mul stores after
		 * its first barrier.
		 */
		uint rmax = stage_buf(att_ph), rsum = stage_buf(att_ph + 1u);

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
			smw(rmax + (4u * ty + r) * 16u + tx, mx);
		}
		group_sync();
		/*
		 * p = exp(s - the new max), into the block key-major; each
		 * invocation takes its rows' 16 parts in order itself
		 */
		[[unroll]] for (uint r = 0u; r < 4u; r++) {
			uint o4 = (rmax + (4u * ty + r) * 16u) / 4u;
			float sum = 0.0, mx = sm4[o4].x;

			mx = max(mx, sm4[o4].y);
			mx = max(mx, sm4[o4].z);
			mx = max(mx, sm4[o4].w);
			[[unroll]] for (uint x = 1u; x < 4u; x++) {
				vec4 pv = sm4[o4 + x];

				mx = max(mx, pv.x);
				mx = max(mx, pv.y);
				mx = max(mx, pv.z);
				mx = max(mx, pv.w);
			}
			mn[r] = max(m[r], mx);
			[[unroll]] for (uint c = 0u; c < 4u; c++) {
				float p = exp_acc(s[r][c] - mn[r]);

				sum += p;
				s[r][c] = p;
			}
			smw(rsum + (4u * ty + r) * 16u + tx, sum);
		}
		[[unroll]] for (uint c = 0u; c < 4u; c++)
			ps_put(4u * tx + c, ty, vec4(s[0][c], s[1][c],
						     s[2][c], s[3][c]));
		group_sync();
		[[unroll]] for (uint r = 0u; r < 4u; r++) {
			uint o4 = (rsum + (4u * ty + r) * 16u) / 4u;
			float al = exp_acc(m[r] - mn[r]), sum = 0.0;

			[[unroll]] for (uint x = 0u; x < 4u; x++) {
				vec4 pv = sm4[o4 + x];

				sum += pv.x;
				sum += pv.y;
				sum += pv.z;
				sum += pv.w;
			}
			sl[r] = sl[r] * al + sum;
			m[r] = mn[r];
			o[r] *= al;
			o2[r] *= al;
		}
		/* the next rows_dot's first barrier comes before ps changes */
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
