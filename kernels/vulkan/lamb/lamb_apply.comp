// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * lamb_apply.comp - lamb_apply: workgroup i takes block
 * b = first_block + i and applies p = p - lr * trust[tensor] * r, r
 * recomputed from the m and v that lamb_prep left. Scalar accesses, as in
 * lamb_prep; exactly one workgroup per block of the group.
 */
#version 450
#include "common.glsl"
#include "abi/lamb.h"
#include "group.glsl"
#include "lamb.glsl"

FLOAT_BUF(0, p);
layout(set = 0, binding = 1, std430) readonly buffer m_f1 { float m[]; };
layout(set = 0, binding = 2, std430) readonly buffer v_f1 { float v[]; };
UINT_BUF(3, blocks);
layout(set = 0, binding = 4, std430) readonly buffer trust_f1
	{ float trust[]; };
SCAL_BUF(5);

#include "update.glsl"

void main()
{
	uint grp = group_index();
	float lr = args.lr, eps = args.eps, wd = args.weight_decay;
	float bc1 = args.bc1, bc2 = args.bc2;
	uint b, start, end;
	float step;

	if (step_skipped())
		return;
	b = args.first_block + grp;
	start = blocks[4u * b + 1u];
	end = start + blocks[4u * b + 2u];
	step = lr * trust[blocks[4u * b]];
	/* four elements a round, loads first, as in lamb_prep.comp */
	uint i = start + gl_LocalInvocationID.x;
	for (; i + 3u * WG_SIZE < end; i += 4u * WG_SIZE) {
		float pa[4], ma[4], va[4];

		for (uint k = 0u; k < 4u; k++) {
			uint j = i + k * WG_SIZE;

			pa[k] = p[j];
			ma[k] = m[j];
			va[k] = v[j];
		}
		for (uint k = 0u; k < 4u; k++)
			p[i + k * WG_SIZE] = pa[k] - step *
				lamb_r(ma[k], va[k], pa[k], bc1, bc2, eps, wd);
	}
	for (; i < end; i += WG_SIZE)
		p[i] = p[i] - step * lamb_r(m[i], v[i], p[i], bc1, bc2, eps,
					    wd);
}
