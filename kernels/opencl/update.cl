/* SPDX-License-Identifier: MIT */
/*
 * update.cl - what the update kernels share beyond common.cl: float4
 * forms of precision.cl's correctly rounded division and square root, so
 * that every update is bit for bit the cpu backend's on any device (with
 * FP_CONTRACT off, as common.cl sets it)
 */
#ifndef GPO_UPDATE_CL
#define GPO_UPDATE_CL
#include "precision.cl"

static inline float4 cr_div4(float4 a, float4 b)
{
	return (float4)(cr_div(a.x, b.x), cr_div(a.y, b.y), cr_div(a.z, b.z),
			cr_div(a.w, b.w));
}

static inline float4 cr_sqrt4(float4 a)
{
	return (float4)(cr_sqrt(a.x), cr_sqrt(a.y), cr_sqrt(a.z),
			cr_sqrt(a.w));
}

/*
 * State in bfloat16 (the families' GPO_xxx_STATE_BF16): @x points at
 * ushorts; lanes from @cnt on are neither read nor written
 */
static inline float4 bf16x4_ld(__global const ushort *x, uint e, uint cnt)
{
	float4 r = (float4)(0.0f);

	if (cnt == 4) {
		ushort4 h = vload4(0, x + e);

		return (float4)(bf16_to_f32(h.x), bf16_to_f32(h.y),
				bf16_to_f32(h.z), bf16_to_f32(h.w));
	}
	r.x = bf16_to_f32(x[e]);
	if (cnt > 1)
		r.y = bf16_to_f32(x[e + 1]);
	if (cnt > 2)
		r.z = bf16_to_f32(x[e + 2]);
	return r;
}

static inline void bf16x4_st(__global ushort *x, uint e, uint cnt, float4 v)
{
	if (cnt == 4) {
		vstore4((ushort4)((ushort)f32_to_bf16(v.x),
				  (ushort)f32_to_bf16(v.y),
				  (ushort)f32_to_bf16(v.z),
				  (ushort)f32_to_bf16(v.w)), 0, x + e);
		return;
	}
	x[e] = (ushort)f32_to_bf16(v.x);
	if (cnt > 1)
		x[e + 1] = (ushort)f32_to_bf16(v.y);
	if (cnt > 2)
		x[e + 2] = (ushort)f32_to_bf16(v.z);
}

#endif
