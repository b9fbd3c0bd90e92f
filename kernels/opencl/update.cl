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

	if (cnt == 4) {
		ushort4 h = vload4(0, x + e);

		return (float4)(param_h2f(h.x, flags), param_h2f(h.y, flags),
				param_h2f(h.z, flags), param_h2f(h.w, flags));
	}
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
 * One element e of the same (LAMB's kernels do one a work-item): its
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
 * ---- u8_*: state in blockwise 8 bits (adam8, rmsprop8, adagrad8, lion8;
 * abi/adam.h ...) ----
 *
 * The design, and why (it is precision.glsl's and update.glsl's in
 * Vulkan). These kernels are bound by arithmetic, not memory: each
 * element's new state is quantized by a binary search of the 256-entry
 * dynamic map (quant8: 8 dependent lookups, then 2 more) after a
 * correctly rounded division, and dequantized by one more lookup.
 *  - The maps live in __local memory, copied once per work-group from
 *    the __constant array (u8_qmap_load()). Lookups by a per-work-item
 *    index in __constant memory are serialized by NVIDIA's constant
 *    cache (one address at a time per warp); __local memory serves 32
 *    banks at once.
 *  - A work-group does spans of GPO_U8_GROUP_BLOCKS (8) blocks of 256,
 *    spans get_group_id(0), + q_groups, ... (family_i.h launches one
 *    group per span, up to gpo__optim_u8_groups), 32 work-items a block
 *    (on NVIDIA one warp): each work-item owns two quads of its block,
 *    elements 4l .. 4l + 3 and 128 + 4l .. 128 + 4l + 3 (l: its lane),
 *    so that a warp's p and g accesses are float4s over 512 contiguous
 *    bytes and its code accesses 128 contiguous bytes, each quad's four
 *    codes one word, read and written whole by its owner (no staging,
 *    no byte stores: a partial last quad keeps the other bytes' bits).
 *  - A block's absmax: each work-item's max over its lanes into
 *    __local memory, one barrier, then each reads its block's 32
 *    partials (eight uint4 reads, the same addresses across the block:
 *    broadcasts). Two arrays taken in turn by successive spans, so that
 *    no second barrier is needed before the next span writes. A max by
 *    the bits is the same in any order: the codes and absmax are those
 *    of the cpu backend, byte for byte.
 *  - One barrier per span, nothing else synchronizes.
 * The update arithmetic is the f32 kernels' in float4 form (lane for
 * lane the scalar operations of the cpu backend, FP_CONTRACT off); lanes
 * past the quad's valid count compute on zeros and are never stored.
 *
 * Every work-item calls u8_qmap_load() and then barrier() before any can
 * return, and u8_absmax() once a span. The kernels' __local arrays:
 * uint qm[U8_QMAP] (the maps) and uint4 red[U8_RED] (the partials). The
 * code views are words, four codes a word (element 4i in the low byte).
 */
#define U8_LANES	32u	/* work-items a block */
#define U8_QMAP		512	/* the unsigned map, then the signed one */
#define U8_RED		GPO_WG_SIZE	/* [parity][state][work-item / 4] */

#if GPO_WG_SIZE / 32 != GPO_U8_GROUP_BLOCKS
#error "a work-group of the u8 kernels is GPO_U8_GROUP_BLOCKS blocks of 32"
#endif

static inline void u8_qmap_load(__local uint *qm)
{
	for (uint i = get_local_id(0); i < U8_QMAP; i += GPO_WG_SIZE)
		qm[i] = prec_qmap_bits[i];
}

/* the code of byte @e of a code view, from its word @w */
static inline uint u8_byte(uint w, uint e)
{
	return (w >> (8u * (e & 3u))) & 0xffu;
}

/* the spans of a group of @n elements */
static inline uint u8_spans(uint n)
{
	uint blocks = (n + 255u) / 256u;

	return (blocks + GPO_U8_GROUP_BLOCKS - 1u) / GPO_U8_GROUP_BLOCKS;
}

/*
 * This work-item's block in span @s of @n elements: its index @k (in the
 * group) and valid elements (the return: 0 past the group's last block)
 */
static inline uint u8_block(uint s, uint n, uint *k)
{
	uint blocks = (n + 255u) / 256u;

	*k = s * GPO_U8_GROUP_BLOCKS + get_local_id(0) / U8_LANES;
	return *k < blocks ? min(256u, n - *k * 256u) : 0u;
}

/* the first element of this work-item's quad @h (0 or 1) of block @k */
static inline uint u8_quad_first(uint k, uint h)
{
	return 256u * k + 128u * h + 4u * (get_local_id(0) % U8_LANES);
}

/* the valid elements (0 .. 4) of the quad at @e of a block of @cnt */
static inline uint u8_quad_cnt(uint k, uint cnt, uint e)
{
	uint at = e - 256u * k;

	return cnt > at ? min(cnt - at, 4u) : 0u;
}

/*
 * quant8() (precision.cl) with the maps in __local memory: the same
 * search, the same result. Not yet prec_qlocal()'s threshold table:
 * PoCL's LLVM 15 fails adam8 with it (some words of codes 0 with one
 * form of the table, a crash of the compiler with this one). lion8,
 * rmsprop8 and adagrad8 pass with it (the bucket table before crashed
 * the compiler on them too), and keep the search only so that the four
 * quantize one way.
 */
static inline uint u8_quant(__local const uint *qm, float x, float absmax,
			    bool is_signed)
{
	__local const uint *map = qm + (is_signed ? 256u : 0u);
	uint c = 0u;
	float v;

	if ((as_uint(absmax) & 0x7fffffffu) == 0u)
		return is_signed ? PREC_QZERO_S : PREC_QZERO_U;
#ifdef GPO_CR_DIVSQRT
	/*
	 * IEEE division and denormals: the plain product is quant8's (a
	 * NaN's bits do not matter: its code is 0.0's). Written this way,
	 * the reciprocal found here for each element, not once a block:
	 * PoCL (LLVM 15) gives adam8 codes of 0 with any other shape of it
	 * (prec_qv(), the factor passed in, the plain / in adam8) and
	 * crashes on lion8 with cr_div (tests/ops on opencl:0)
	 */
#ifdef U8_ONE_STATE
	v = x * (1.0f / absmax);
#else
	v = x * cr_div(1.0f, absmax);
#endif
#else
	v = prec_qv(x, cr_div(1.0f, absmax), absmax);
#endif
	/* by the bits: a compiler may assume there are no NaNs */
	if ((as_uint(v) & 0x7fffffffu) > 0x7f800000u)
		return is_signed ? PREC_QZERO_S : PREC_QZERO_U;
	if (v <= as_float(map[0]))
		return 0u;
	if (v >= as_float(map[255]))
		return 255u;
	for (uint step = 128u; step != 0u; step >>= 1)
		if (as_float(map[c + step]) <= v)
			c += step;
	return prec_qnear(v, as_float(map[c]), as_float(map[c + 1u]), c);
}

/*
 * The quad of word @w dequantized with @absmax: dequant8() with the
 * hardware's multiply where it is exact (the maps' least nonzero
 * magnitude is above 2^-22, so for a finite absmax >= 2^-100 every
 * product is a normal float, which OpenCL's multiply rounds correctly);
 * prec_mul's integer path only for the rest
 */
static inline float4 u8_dequant4(__local const uint *qm, uint w,
				 float absmax, bool is_signed)
{
	__local const uint *map = qm + (is_signed ? 256u : 0u);
	float4 r = (float4)(as_float(map[w & 0xffu]),
			    as_float(map[(w >> 8) & 0xffu]),
			    as_float(map[(w >> 16) & 0xffu]),
			    as_float(map[w >> 24]));

	if (absmax >= as_float(0x0d800000u) &&
	    absmax < as_float(0x7f800000u))
		return r * absmax;
	return (float4)(prec_mul(r.x, absmax), prec_mul(r.y, absmax),
			prec_mul(r.z, absmax), prec_mul(r.w, absmax));
}

/* max |x| of the first @c lanes, by the bits (a NaN is above inf) */
static inline uint u8_bits_max(float4 x, uint c)
{
	uint4 b = as_uint4(x) & 0x7fffffffu;
	uint m = b.x;

	if (c > 1u)
		m = max(m, b.y);
	if (c > 2u)
		m = max(m, b.z);
	if (c > 3u)
		m = max(m, b.w);
	return m;
}

/*
 * The block's max of @x and (with @two) @y, each work-item's
 * u8_bits_max()es: all in __local memory, one barrier, then each reads
 * its block's 32. @par alternates between spans, so that the next
 * span's stores never meet this one's loads (a barrier lies between).
 */
static inline void u8_absmax(__local uint4 *red, uint par, bool two, uint x,
			     uint y, float *mx, float *my)
{
	uint lid = get_local_id(0), at = (lid / U8_LANES) * (U8_LANES / 4u);
	__local uint4 *r0 = red + par * (GPO_WG_SIZE / 2);
	__local uint4 *r1 = r0 + GPO_WG_SIZE / 4;
	uint4 a = (uint4)(0u), b = (uint4)(0u);

	((__local uint *)r0)[lid] = x;
	if (two)
		((__local uint *)r1)[lid] = y;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint i = 0u; i < U8_LANES / 4u; i++) {
		a = max(a, r0[at + i]);
		if (two)
			b = max(b, r1[at + i]);
	}
	*mx = as_float(max(max(a.x, a.y), max(a.z, a.w)));
	*my = as_float(max(max(b.x, b.y), max(b.z, b.w)));
}

/*
 * The word of codes of the first @c lanes of @x quantized with @absmax
 * (quant8()), the other lanes keeping @old's bytes
 */
static inline uint u8_word(__local const uint *qm, float4 x, uint c,
			   float absmax, bool is_signed, uint old)
{
	uint w = u8_quant(qm, x.x, absmax, is_signed);

	w |= (c > 1u ? u8_quant(qm, x.y, absmax, is_signed) :
		       u8_byte(old, 1u)) << 8;
	w |= (c > 2u ? u8_quant(qm, x.z, absmax, is_signed) :
		       u8_byte(old, 2u)) << 16;
	w |= (c > 3u ? u8_quant(qm, x.w, absmax, is_signed) :
		       u8_byte(old, 3u)) << 24;
	return w;
}

/*
 * The u8 kernels' p and g: the quad at @e as f32 (master or half p,
 * f32 or half g: param_*). @hp (flags & GPO_UPD_PARAM_HALF) is uniform
 * over the launch; without it the accesses are plain float4s.
 */
static inline void u8_quad_load(bool hp, __global float *p,
				__global const float *g, uint e, uint c,
				const struct param_ctx *pc, float4 *pv,
				float4 *gv)
{
	if (hp) {
		*pv = param_ld4(p, e, c, pc);
		*gv = param_g4(g, e, c, pc);
		return;
	}
	*pv = ld4(p, e, c);
	*gv = ld4(g, e, c);
}

static inline void u8_quad_store(bool hp, __global float *p, uint e, uint c,
				 float4 pv, const struct param_ctx *pc)
{
	if (hp)
		param_st4(p, e, c, pv, pc);
	else
		st4(p, e, c, pv);
}

/*
 * The one-state kernels (rmsprop8, adagrad8, lion8: the signed map)
 * define U8_ONE_STATE as their argument struct before including this
 * file and define u8_elem1(): the update of a quad from its p, g and old
 * state (dequantized), returning p and the new state in *@so. u8_main1()
 * is then their whole kernel after the VIEW()s.
 */
#ifdef U8_ONE_STATE
static inline float4 u8_elem1(float4 p, float4 g, float4 s, float gm,
			      const U8_ONE_STATE *a, float4 *so);

static inline void u8_span1(uint sp, uint par, bool hp, __global float *p,
			    __global const float *g, __global uint *sq,
			    __global float *sabs, float gm,
			    const U8_ONE_STATE *a, const struct param_ctx *pc,
			    __local const uint *qm, __local uint4 *red)
{
	uint k, cnt, blk, c[2], e[2], w[2], sw[2], sx = 0u;
	float4 pv[2], gv[2], sv[2];
	float sa = 0.0f, na, unused;

	cnt = u8_block(sp, a->n, &k);
	blk = a->q_blk + k;
	if (cnt != 0u)
		sa = sabs[blk];
	for (uint h = 0u; h < 2u; h++) {
		e[h] = u8_quad_first(k, h);
		c[h] = u8_quad_cnt(k, cnt, e[h]);
		/* q_off is a multiple of 4: the quad's codes are one word */
		w[h] = (a->q_off + e[h]) / 4u;
		if (c[h] == 0u)
			continue;
		u8_quad_load(hp, p, g, e[h], c[h], pc, &pv[h], &gv[h]);
		sw[h] = sq[w[h]];
	}
	for (uint h = 0u; h < 2u; h++) {
		if (c[h] == 0u)
			continue;
		pv[h] = u8_elem1(pv[h], gv[h],
				 u8_dequant4(qm, sw[h], sa, true), gm, a,
				 &sv[h]);
		u8_quad_store(hp, p, e[h], c[h], pv[h], pc);
		sx = max(sx, u8_bits_max(sv[h], c[h]));
	}
	/* every work-item of the block has read sabs[blk] by now */
	u8_absmax(red, par, false, sx, 0u, &na, &unused);
	if (cnt != 0u && get_local_id(0) % U8_LANES == 0u)
		sabs[blk] = na;
	for (uint h = 0u; h < 2u; h++)
		if (c[h] != 0u)
			sq[w[h]] = u8_word(qm, sv[h], c[h], na, true, sw[h]);
}

static inline void u8_main1(__global float *p, __global const float *g,
			    __global uint *sq, __global float *sabs,
			    __global const float *scal, const U8_ONE_STATE *a,
			    const struct param_ctx *pc, __local uint *qm,
			    __local uint4 *red)
{
	uint par = 0u, spans = u8_spans(a->n);
	float gm;

	u8_qmap_load(qm);
	barrier(CLK_LOCAL_MEM_FENCE);
	/* every work-item reads the same scal: all return alike */
	if (!grad_mul(scal, a->flags, &gm))
		return;
	/*
	 * one loop: two (f32 and half parameters, @hp a constant in each)
	 * crash PoCL's LLVM 15 (InstCombine, with the barriers)
	 */
	for (uint s = get_group_id(0); s < spans; s += a->q_groups) {
		u8_span1(s, par, (a->flags & GPO_UPD_PARAM_HALF) != 0, p, g,
			 sq, sabs, gm, a, pc, qm, red);
		par ^= 1u;
	}
}
#endif

#endif
