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

/*
 * ---- param_*: half-precision parameters (abi.h GPO_UPD_PARAM_*) ----
 *
 * With GPO_UPD_PARAM_F16/BF16 the gradients are half words (read
 * exactly); with a master copy @p stays the f32 master and @hcopy gets it
 * rounded to nearest even; with GPO_UPD_PARAM_SR @p holds the bf16
 * parameters, stored with stochastic rounding (round_bits() of the
 * element's global index). One work-item does a float4 (the tail too), so
 * no two write halves of one word. The kernels declare the half buffer
 * as uint words (VIEW() counts 4-byte words) and pass this context.
 */
struct param_ctx {
	__global ushort *hcopy;
	uint flags, base, seed_lo, seed_hi, step_lo, step_hi;
};

#define PARAM_CTX(pc, a, h) \
	struct param_ctx pc = { (__global ushort *)(h), (a).flags, \
				(a).p_base, (a).p_seed_lo, (a).p_seed_hi, \
				(a).p_step_lo, (a).p_step_hi }

static inline float param_h2f(uint h, uint flags)
{
	return (flags & GPO_UPD_PARAM_F16) ? f16_to_f32(h) : bf16_to_f32(h);
}

static inline float4 param_half_ld(__global const ushort *x, uint e, uint cnt,
				   uint flags)
{
	float4 r = (float4)(0.0f);

	r.x = param_h2f(x[e], flags);
	if (cnt > 1)
		r.y = param_h2f(x[e + 1], flags);
	if (cnt > 2)
		r.z = param_h2f(x[e + 2], flags);
	if (cnt > 3)
		r.w = param_h2f(x[e + 3], flags);
	return r;
}

static inline float4 param_ld4(__global float *p, uint e, uint cnt,
			       const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_SR)
		return param_half_ld((__global const ushort *)p, e, cnt,
				     pc->flags);
	return ld4(p, e, cnt);
}

static inline float4 param_g4(__global const float *g, uint e, uint cnt,
			      const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_HALF)
		return param_half_ld((__global const ushort *)g, e, cnt,
				     pc->flags);
	return ld4(g, e, cnt);
}

static inline ushort param_round(float x, uint e, const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_SR)
		return (ushort)f32_to_bf16_sr(x, round_bits(pc->seed_lo,
					pc->seed_hi, pc->step_lo, pc->step_hi,
					pc->base + e, 0));
	return (ushort)((pc->flags & GPO_UPD_PARAM_F16) ? f32_to_f16(x) :
							   f32_to_bf16(x));
}

static inline void param_st4(__global float *p, uint e, uint cnt, float4 v,
			     const struct param_ctx *pc)
{
	__global ushort *h = pc->hcopy;
	float x[4] = { v.x, v.y, v.z, v.w };

	if (!(pc->flags & GPO_UPD_PARAM_SR)) {
		st4(p, e, cnt, v);
		if (!(pc->flags & GPO_UPD_PARAM_HALF))
			return;
	} else {
		h = (__global ushort *)p;
		if (cnt == 4) {
			/* base + e is a multiple of 4: one Philox block */
			uint4 w = prec_philox((uint2)(pc->seed_lo, pc->seed_hi),
					      (uint4)((pc->base + e) >> 2, 0,
						      pc->step_lo,
						      (pc->step_hi & 0xffffu) |
						      (4u << 16)));

			vstore4((ushort4)((ushort)f32_to_bf16_sr(v.x, w.x),
					  (ushort)f32_to_bf16_sr(v.y, w.y),
					  (ushort)f32_to_bf16_sr(v.z, w.z),
					  (ushort)f32_to_bf16_sr(v.w, w.w)),
				0, h + e);
			return;
		}
	}
	for (uint k = 0; k < cnt; k++)
		h[e + k] = param_round(x[k], e + k, pc);
}

/*
 * One element e of the same (the u8 kernels do one a work-item): its
 * parameter as f32 (master or bf16 p), its gradient, its new value stored
 * (master and half copy, or bf16 p with stochastic rounding)
 */
static inline float param_ld1(__global float *p, uint e,
			      const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_SR)
		return bf16_to_f32(((__global const ushort *)p)[e]);
	return p[e];
}

static inline float param_g1(__global const float *g, uint e,
			     const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_HALF)
		return param_h2f(((__global const ushort *)g)[e], pc->flags);
	return g[e];
}

static inline void param_st1(__global float *p, uint e, float x,
			     const struct param_ctx *pc)
{
	if (pc->flags & GPO_UPD_PARAM_SR) {
		((__global ushort *)p)[e] = param_round(x, e, pc);
		return;
	}
	p[e] = x;
	if (pc->flags & GPO_UPD_PARAM_HALF)
		pc->hcopy[e] = param_round(x, e, pc);
}

/*
 * State in blockwise 8 bits (the u8 kernels: adam8 ...; abi/adam.h): a
 * work-group does blocks of 256 elements (get_group_id(0), + q_groups,
 * ...), one element a work-item; every work-item calls each u8_*
 * function (they hold barriers). @red and @codes are the kernel's
 * __local arrays of 2 * GPO_WG_SIZE uints. Code views are words, four
 * codes a word (element 4i in the low byte).
 */
static inline uint u8_byte(uint w, uint e)
{
	return (w >> (8u * (e & 3u))) & 0xffu;
}

/*
 * dequant8() with the hardware's multiply where it is exact: the maps'
 * least nonzero magnitude is above 2^-22, so for a finite absmax >=
 * 2^-100 every product is a normal float, which OpenCL's multiply rounds
 * correctly; prec_mul's integer path only for the rest
 */
static inline float u8_dequant(uint q, float absmax, bool is_signed)
{
	if (absmax >= as_float(0x0d800000u) &&
	    absmax < as_float(0x7f800000u))
		return prec_qmap(is_signed ? 256u : 0u, q) * absmax;
	return dequant8(q, absmax, is_signed);
}

/*
 * The block's max |x| and |y| over the valid lanes (@ny: 1 or 2), by the
 * bits: a NaN wins. A max is the same in any order: deterministic.
 */
static inline void u8_absmax(__local uint *red, float x, float y, uint ny,
			     bool valid, float *mx, float *my)
{
	uint lid = get_local_id(0);

	red[lid] = valid ? (as_uint(x) & 0x7fffffffu) : 0u;
	red[GPO_WG_SIZE + lid] = valid ? (as_uint(y) & 0x7fffffffu) : 0u;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = GPO_WG_SIZE / 2; s > 0; s >>= 1) {
		if (lid < s) {
			red[lid] = max(red[lid], red[lid + s]);
			if (ny > 1)
				red[GPO_WG_SIZE + lid] =
					max(red[GPO_WG_SIZE + lid],
					    red[GPO_WG_SIZE + lid + s]);
		}
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	*mx = as_float(red[0]);
	*my = as_float(red[GPO_WG_SIZE]);
	/* everyone has read red before the next block writes it */
	barrier(CLK_LOCAL_MEM_FENCE);
}

/*
 * Each work-item's codes @c0 (and @c1 with @nq 2) staged; work-item w <
 * 64 then stores the words of the block's codes 4w .. 4w + 3 at @q0
 * (@q1), the block's first word, lanes from @cnt (its valid elements) on
 * keeping their bits
 */
static inline void u8_pack(__local uint *codes, __global uint *q0,
			   __global uint *q1, uint nq, uint c0, uint c1,
			   uint cnt)
{
	uint lid = get_local_id(0);

	codes[lid] = c0;
	codes[GPO_WG_SIZE + lid] = c1;
	barrier(CLK_LOCAL_MEM_FENCE);
	if (lid < GPO_WG_SIZE / 4 && 4u * lid < cnt) {
		uint o0 = q0[lid], o1 = nq > 1 ? q1[lid] : 0u, w0 = 0, w1 = 0;

		for (uint j = 0; j < 4u; j++) {
			bool in = 4u * lid + j < cnt;

			w0 |= (in ? codes[4u * lid + j] : u8_byte(o0, j)) <<
			      (8u * j);
			w1 |= (in ? codes[GPO_WG_SIZE + 4u * lid + j] :
				    u8_byte(o1, j)) << (8u * j);
		}
		q0[lid] = w0;
		if (nq > 1)
			q1[lid] = w1;
	}
	/* everyone has read codes before the next block writes it */
	barrier(CLK_LOCAL_MEM_FENCE);
}

#endif
