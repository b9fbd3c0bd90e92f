/* SPDX-License-Identifier: MIT */
/*
 * group.glsl - what the group kernels share: the group index and a
 * deterministic reduction.
 *
 * A launch of more groups than one dispatch dimension allows comes as a
 * 2D grid; the group index is rebuilt from it, and the surplus groups of
 * the last row return before any barrier (the whole workgroup alike).
 */
uint group_index()
{
	return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
}

shared float red_a[WG_SIZE];
shared float red_b[WG_SIZE];

/*
 * reduce2 - sum @a and @b over the workgroup; every invocation gets the
 * totals. A fixed tree over shared memory: the same inputs give the same
 * bits on every run, which is what makes the norm deterministic.
 */
void reduce2(inout float a, inout float b)
{
	uint t = gl_LocalInvocationID.x;

	red_a[t] = a;
	red_b[t] = b;
	memoryBarrierShared();
	barrier();
	for (uint s = WG_SIZE / 2u; s > 0u; s >>= 1) {
		if (t < s) {
			red_a[t] += red_a[t + s];
			red_b[t] += red_b[t + s];
		}
		memoryBarrierShared();
		barrier();
	}
	a = red_a[0];
	b = red_b[0];
}

/*
 * The range [*start, *end) of group @grp when groups cover args.aux1
 * elements each, clipped to args.n; written so that grp * aux1 cannot
 * wrap for the empty groups at the end.
 */
void group_range(uint grp, out uint start, out uint end)
{
	if (args.n == 0u || grp > (args.n - 1u) / args.aux1) {
		start = args.n;
		end = args.n;
		return;
	}
	start = grp * args.aux1;
	end = start + min(args.aux1, args.n - start);
}

/* inf or NaN: exponent all ones (a bit test no optimiser can drop) */
bool not_finite(float x)
{
	return (floatBitsToUint(x) & 0x7f800000u) == 0x7f800000u;
}
