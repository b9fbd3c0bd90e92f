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
#endif
