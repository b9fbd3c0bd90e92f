// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * lamb_trust.comp - lamb_trust: for each of ntensors tensors, sum its block
 * partials and write
 *   trust = (|p| > 0 && |r| > 0) ? |p| / |r| : 1
 * tensors: {first block, block count} per tensor.
 *
 * One workgroup per tensor (launched with work = ntensors groups): a
 * tensor of 2^24 elements has 4096 blocks, and one invocation summing
 * them in a row waits on 8192 dependent loads. The
 * invocations take blocks in a fixed stride and the tree of reduce2()
 * adds them up: a fixed order, so the result is deterministic.
 */
#version 450
#include "common.glsl"
#include "abi/lamb.h"
#include "group.glsl"

UINT_BUF(0, tensors);
/* a block's two partials side by side: one 8-byte load */
layout(set = 0, binding = 1, std430) readonly buffer part_v2
	{ vec2 part[]; };
FLOAT_BUF(2, trust);
SCAL_BUF(3);

#include "update.glsl"

void main()
{
	uint t = group_index(), first, count;
	float pn = 0.0, rn = 0.0;

	if (t >= args.ntensors || step_skipped())
		return;
	first = tensors[2u * t];
	count = tensors[2u * t + 1u];
	/*
	 * Eight blocks a round, loads first: a 2^28-element tensor has
	 * 65536 blocks, 256 for each invocation, and one load in flight at
	 * a time would cost more than the whole lamb_apply pass saves.
	 */
	uint b = gl_LocalInvocationID.x;
	for (; b + 7u * WG_SIZE < count; b += 8u * WG_SIZE) {
		vec2 x[8];

		for (uint k = 0u; k < 8u; k++)
			x[k] = part[first + b + k * WG_SIZE];
		for (uint k = 0u; k < 8u; k++) {
			pn += x[k].x;
			rn += x[k].y;
		}
	}
	for (; b < count; b += WG_SIZE) {
		pn += part[first + b].x;
		rn += part[first + b].y;
	}
	reduce2(pn, rn);
	if (gl_LocalInvocationID.x == 0u) {
		pn = cr_sqrt(pn);
		rn = cr_sqrt(rn);
		trust[t] = pn > 0.0 && rn > 0.0 ? cr_div(pn, rn) : 1.0;
	}
}
