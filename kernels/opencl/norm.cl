/* SPDX-License-Identifier: MIT */
/*
 * norm.cl - the global gradient norm in two deterministic passes
 *
 * K_NORM_PARTIAL: group i sums g^2 over its chunk [i * aux1, (i + 1) *
 * aux1) and flags inf/NaN; K_NORM_FINAL: one group adds the partials in a
 * fixed order and turns them into the step's scalars (backend_i.h). The
 * work-item to element mapping and the reduction trees are fixed, so a
 * given input always gives the same bits.
 */

KERNEL void norm_partial(BUF(const float, g), BUF(float, part), KARGS)
{
	__local float2 tmp[WG_SIZE];
	uint grp = get_group_id(0), lid = get_local_id(0);
	uint start, end, mid;
	float4 acc = (float4)(0.0f);
	/* g * 0 is NaN exactly when g is inf or NaN, and NaN sticks */
	float4 bad = (float4)(0.0f);
	float2 r;

	VIEW(g);
	VIEW(part);
	group_range(grp, n, aux1, &start, &end);
	/* aux1 is a multiple of 4: start is float4-aligned */
	mid = start + ((end - start) & ~3u);
	for (uint i = start / 4 + lid; i < mid / 4; i += WG_SIZE) {
		float4 v = ld4(g, 4 * i, 4);

		acc += v * v;
		bad += v * 0.0f;
	}
	if (lid == 0 && mid < end) {
		float4 v = ld4(g, mid, end - mid);

		acc += v * v;
		bad += v * 0.0f;
	}
	r.x = (acc.x + acc.y) + (acc.z + acc.w);
	r.y = (bad.x + bad.y) + (bad.z + bad.w);
	r = wg_sum2(tmp, r);
	if (lid == 0) {
		part[2 * grp] = r.x;
		part[2 * grp + 1] = isnan(r.y) ? 1.0f : 0.0f;
	}
}

/*
 * One group over aux0 partials; s0 inv_scale, s1 clip_norm (0: none).
 * Work-item j adds partials j, j + 256, ... then the tree: a fixed order.
 */
KERNEL void norm_final(BUF(const float, part), BUF(float, scal), KARGS)
{
	__local float2 tmp[WG_SIZE];
	uint lid = get_local_id(0);
	float2 r = (float2)(0.0f);

	VIEW(part);
	VIEW(scal);
	for (uint i = lid; i < aux0; i += WG_SIZE) {
		r.x += part[2 * i];
		r.y += part[2 * i + 1] != 0.0f ? 1.0f : 0.0f;
	}
	r = wg_sum2(tmp, r);
	if (lid == 0) {
		float total = r.x, mul = s0, norm = sqrt(total) * s0;

		if (s1 > 0.0f) {
			float coef = s1 / (norm + 1e-6f);

			if (coef < 1.0f)
				mul *= coef;
		}
		scal[0] = mul;
		scal[1] = r.y != 0.0f && (flags & KF_CHECK_FINITE) ? 1.0f :
								       0.0f;
		scal[2] = norm;
		scal[3] = total;
	}
}
