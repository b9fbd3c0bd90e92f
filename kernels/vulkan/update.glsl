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

/*
 * State in bfloat16 (the families' GPO_xxx_STATE_BF16): a binding seen
 * as bfloat16 pairs, a float4 of them an uvec2 (element 4i + 0 in the low
 * half of .x). The views cover n rounded up to 4 elements; one invocation
 * does a whole float4, the tail's too, so no two write halves of a word.
 */
#define BF16X4_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_h4 \
		{ uvec2 name##h[]; }

vec4 bf16x4_load(uvec2 w)
{
	return vec4(bf16_to_f32(w.x & 0xffffu), bf16_to_f32(w.x >> 16),
		    bf16_to_f32(w.y & 0xffffu), bf16_to_f32(w.y >> 16));
}

/* @x rounded to nearest even, lanes from @cnt on keeping @old's bits */
uvec2 bf16x4_store(vec4 x, uvec2 old, uint cnt)
{
	uint h[4] = uint[4](f32_to_bf16(x.x), f32_to_bf16(x.y),
			    f32_to_bf16(x.z), f32_to_bf16(x.w));
	uint o[4] = uint[4](old.x & 0xffffu, old.x >> 16, old.y & 0xffffu,
			    old.y >> 16);

	for (uint k = cnt; k < 4u; k++)
		h[k] = o[k];
	return uvec2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));
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
