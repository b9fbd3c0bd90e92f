/* SPDX-License-Identifier: MIT */
/*
 * norm.glsl - what the norm kernels share; include it after group.glsl
 * and precision.glsl.
 *
 * With NORM_G defined (the kernel's g is FLOAT4_BUF(0, g)): norm_exact(),
 * a group's sum of squares in the order abi/norm.h gives for
 * GPO_NORM_EXACT, over f32 or half gradients (GPO_NORM_HALF: f16 words,
 * bf16 ones with GPO_NORM_BF16, widened exactly). With NORM_SCAL (the
 * kernel's binding 1 is scal, read and written): put_scal().
 */
#ifdef NORM_G
/* g seen as quads of half words, and as words (element 2i low) */
layout(set = 0, binding = 0, std430) readonly buffer norm_g_h4
	{ uvec2 g_h4[]; };
layout(set = 0, binding = 0, std430) readonly buffer norm_g_w
	{ uint g_w[]; };

float norm_h2f(uint h)
{
	return FLAG(GPO_NORM_BF16) ? bf16_to_f32(h) : f16_to_f32(h);
}

/* elements 4q .. 4q + 3 as f32 */
vec4 norm_quad(uint q)
{
	uvec2 w;

	if (!FLAG(GPO_NORM_HALF))
		return g4[q];
	w = g_h4[q];
	return vec4(norm_h2f(w.x & 0xffffu), norm_h2f(w.x >> 16),
		    norm_h2f(w.y & 0xffffu), norm_h2f(w.y >> 16));
}

float norm_elem(uint e)
{
	if (!FLAG(GPO_NORM_HALF))
		return g[e];
	return norm_h2f((g_w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu);
}

/*
 * (x0^2 + x1^2) + (x2^2 + x3^2): the products of half values are exact,
 * so a fused multiply-add gives the same bits
 */
float norm_sq4(vec4 x)
{
	precise float s = (x.x * x.x + x.y * x.y) + (x.z * x.z + x.w * x.w);

	return s;
}

bool norm_bad4(vec4 x)
{
	return not_finite(x.x) || not_finite(x.y) || not_finite(x.z) ||
	       not_finite(x.w);
}

/*
 * This invocation's part of the sum over [start, end) (start a multiple
 * of 4): its quads in turn, then invocation 0 the tail as a quad padded
 * with zeros; @bad 1 if any of them is not finite. reduce2() then.
 */
void norm_exact(uint start, uint end, out float sum, out float bad)
{
	uint t = gl_LocalInvocationID.x;
	uint mid = start + ((end - start) & ~3u);
	precise float acc = 0.0;
	vec4 x;

	bad = 0.0;
	for (uint q = start / 4u + t; q < mid / 4u; q += WG_SIZE) {
		x = norm_quad(q);
		acc = acc + norm_sq4(x);
		if (norm_bad4(x))
			bad = 1.0;
	}
	if (t == 0u && mid < end) {
		x = vec4(0.0);
		for (uint k = 0u; k < end - mid; k++)
			x[k] = norm_elem(mid + k);
		acc = acc + norm_sq4(x);
		if (norm_bad4(x))
			bad = 1.0;
	}
	sum = acc;
}
#endif

#ifdef NORM_SCAL
/*
 * the step's scalars (abi/norm.h), the loss scale's update last; sqrt
 * and / correctly rounded with GPO_NORM_EXACT
 */
void put_scal(float total, bool bad)
{
	float inv = args.inv_scale, mul, norm, coef;

	if (FLAG(GPO_NORM_LOSS_SCALE))
		inv *= scal[GPO_SCAL_LS_INV];
	mul = inv;
	norm = (FLAG(GPO_NORM_EXACT) ? cr_sqrt(total) : sqrt(total)) * inv;
	if (args.clip_norm > 0.0) {
		if (FLAG(GPO_NORM_EXACT))
			coef = cr_div(args.clip_norm, norm + 1e-6);
		else
			coef = args.clip_norm / (norm + 1e-6);
		if (coef < 1.0)
			mul *= coef;
	}
	scal[GPO_SCAL_MUL] = mul;
	scal[GPO_SCAL_SKIP] = bad && FLAG(GPO_NORM_CHECK_FINITE) ? 1.0 : 0.0;
	scal[GPO_SCAL_NORM] = norm;
	scal[GPO_SCAL_TOTAL] = total;
	if (!FLAG(GPO_NORM_DYNAMIC))
		return;
	/* GradScaler's update, after the old scale unscaled this step */
	if (bad) {
		scal[GPO_SCAL_LS] *= 0.5;
		scal[GPO_SCAL_LS_INV] *= 2.0;
		scal[GPO_SCAL_LS_GOOD] = 0.0;
	} else if (scal[GPO_SCAL_LS_GOOD] + 1.0 >=
		   float(args.growth_interval)) {
		if (!not_finite(scal[GPO_SCAL_LS] * 2.0)) {
			scal[GPO_SCAL_LS] *= 2.0;
			scal[GPO_SCAL_LS_INV] *= 0.5;
		}
		scal[GPO_SCAL_LS_GOOD] = 0.0;
	} else {
		scal[GPO_SCAL_LS_GOOD] += 1.0;
	}
}
#endif
