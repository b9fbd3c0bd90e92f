/* SPDX-License-Identifier: MIT */
/*
 * group.glsl - what the group kernels share: the group index and a
 * deterministic reduction.
 *
 * A launch of more groups than one dispatch dimension allows comes as
 * rows of GPO_GROUP_ROW groups (full rows in one dispatch, the rest in a
 * second one based at the next row), so exactly as many groups run as
 * the launch asked for. The row width is the device's: the backend sets
 * it as specialization constant 0 when it builds the pipeline.
 */
layout(constant_id = 0) const uint GPO_GROUP_ROW = 65535u;

uint group_index()
{
	return gl_WorkGroupID.y * GPO_GROUP_ROW + gl_WorkGroupID.x;
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
 * The range [*start, *end) of group @grp when groups cover @chunk
 * elements each, clipped to @n; written so that grp * chunk cannot wrap
 * for the empty groups at the end.
 */
void group_range(uint grp, uint n, uint chunk, out uint start, out uint end)
{
	if (n == 0u || grp > (n - 1u) / chunk) {
		start = n;
		end = n;
		return;
	}
	start = grp * chunk;
	end = start + min(chunk, n - start);
}

/* inf or NaN: exponent all ones (a bit test no optimiser can drop) */
bool not_finite(float x)
{
	return (floatBitsToUint(x) & 0x7f800000u) == 0x7f800000u;
}
