/* SPDX-License-Identifier: MIT */
/*
 * update.glsl - the gradient multiplier of the update kernels; include it
 * after SCAL_BUF() and the family header.
 *
 * gm = scal[GPO_SCAL_MUL] (unscale and clip factor) when the norm pass
 * ran, else 1, negated for maximize. With GPO_UPD_USE_SCAL and
 * scal[GPO_SCAL_SKIP] != 0 the step is skipped: every invocation reads
 * the same scal, so all return alike.
 *
 * Every update is bit for bit the cpu backend's: / and sqrt are
 * precision.glsl's correctly rounded cr_div and cr_sqrt (Vulkan's are
 * 2.5 ulp), and the update functions' results are `precise`, so no
 * a * b + c is fused where the cpu rounds twice.
 */
#include "precision.glsl"

float gm;

vec4 cr_div4(vec4 a, vec4 b)
{
	return vec4(cr_div(a.x, b.x), cr_div(a.y, b.y), cr_div(a.z, b.z),
		    cr_div(a.w, b.w));
}

vec4 cr_sqrt4(vec4 a)
{
	return vec4(cr_sqrt(a.x), cr_sqrt(a.y), cr_sqrt(a.z), cr_sqrt(a.w));
}

bool grad_mul()
{
	float m = 1.0;

	if (FLAG(GPO_UPD_USE_SCAL)) {
		if (scal[GPO_SCAL_SKIP] != 0.0)
			return false;
		m = scal[GPO_SCAL_MUL];
	}
	gm = FLAG(GPO_UPD_MAXIMIZE) ? -m : m;
	return true;
}

/* lamb_trust and lamb_apply skip like the others but never negate */
bool step_skipped()
{
	return FLAG(GPO_UPD_USE_SCAL) && scal[GPO_SCAL_SKIP] != 0.0;
}
