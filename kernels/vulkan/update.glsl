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

/*
 * State in blockwise 8 bits (the u8 kernels, adam8 ...; abi/adam.h). A
 * workgroup does U8_GROUP_BLOCKS blocks of 256 at a time (its "span"
 * s: blocks s U8_GROUP_BLOCKS + 0 .. 7), U8_LANES invocations a block;
 * lane j of a block owns the block's element quads j and j + 32
 * (elements 4j .. 4j + 3 and 128 + 4j .. 128 + 4j + 3), which are the
 * code words j and j + 32 of the block: it reads and writes whole words
 * itself, p and g as vec4s, and neighbouring lanes touch neighbouring
 * words. The block's absmax is one shared-memory exchange (u8_absmax),
 * one barrier a span. A kernel defines GPO_U8_STATE, PREC_QMAP_SHARED
 * and PARAM_HALF_BUF (its half copy's binding) before including this
 * file, calls prec_qmap_load() and barrier() first, and calls
 * u8_absmax() from all its invocations.
 * A code view is the whole slot as words, four codes a word (element 4i
 * in the low byte).
 */
#ifdef GPO_U8_STATE
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#extension GL_EXT_control_flow_attributes : require
#define U8_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_q \
		{ uint name##q[]; }

#define U8_LANES	32u
#define U8_GROUP_BLOCKS	uint(GPO_U8_GROUP_BLOCKS)

/*
 * Specialization constant 2: the device's subgroups are 32 wide, with
 * subgroupMax in compute (backend/vulkan/device.c's u8_subgroups()).
 * Modules of SPIR-V 1.3 run with the device's one subgroup size, so the
 * workgroup is WG_SIZE / 32 whole subgroups.
 *
 * There (the NVIDIA GPUs) a block's 32 lanes are one subgroup: its
 * absmax is a subgroupMax, with no shared memory and no barrier, so the
 * warps of a workgroup stream on their own. Elsewhere (lavapipe's 8 or
 * 16, AMD's 64) a block is 32 consecutive local invocations and the
 * absmax goes through shared memory. Which invocation does which element
 * changes nothing in the results: each is computed alone, and a max is
 * the same in any order.
 */
layout(constant_id = 2) const bool GPO_U8_SG = false;

/*
 * Specialization constant 6: is every quad of the launch whole (its n a
 * multiple of 4: backend/vulkan/pipeline.c's quads())? Then p and g go
 * as vec4s only, with no element-by-element path beside them: on an H200
 * (2026-11-30, bench/results/issue12-h200-2026-11-30.txt) that took
 * 8-bit AdamW at 256M from 3.22 to 2.67 ms, RMSprop from 2.45 to 2.00
 * and Lion from 1.43 to 1.26.
 */
layout(constant_id = 6) const bool GPO_U8_QUADS = false;

/*
 * [span parity][state][invocation / 4]: no barrier to reuse it. Where
 * subgroups do the exchange (GPO_U8_SG) one slot, never used, and the
 * one-state kernels hold one state's: every KB of shared memory a
 * workgroup holds slows these kernels on an H200 (precision.glsl).
 */
#ifdef U8_ONE_STATE
#define U8_STATES	1
#else
#define U8_STATES	2
#endif
const uint U8_RED = GPO_U8_SG ? 1u : WG_SIZE / 4u;
shared uvec4 u8_red[2][U8_STATES][U8_RED];

/* this invocation's place in the span: block u8_lid() / 32, lane % 32 */
uint u8_lid()
{
	if (GPO_U8_SG)
		return gl_SubgroupID * U8_LANES + gl_SubgroupInvocationID;
	return gl_LocalInvocationID.x;
}

/* the code of byte @e of a code view, from its word @w */
uint u8_byte(uint w, uint e)
{
	return (w >> (8u * (e & 3u))) & 0xffu;
}

/*
 * dequant8() with the hardware's multiply where it is exact: the maps'
 * least nonzero magnitude is above 2^-22, so for a finite absmax >=
 * 2^-100 every product is a normal float, which Vulkan's multiply
 * rounds correctly; prec_mul's integer path only for the rest
 */
float u8_dequant(uint q, float absmax, bool is_signed)
{
	precise float v;

	if (absmax >= uintBitsToFloat(0x0d800000u) &&
	    absmax < uintBitsToFloat(0x7f800000u)) {
		v = prec_qmap(is_signed ? 256u : 0u, q) * absmax;
		return v;
	}
	return dequant8(q, absmax, is_signed);
}

/*
 * u8_dequant()'s fast path alone, for a block whose absmax passes
 * prec_qv_fast() (which implies its range)
 */
float u8_dequant_f(uint q, float absmax, bool is_signed)
{
	precise float v = prec_qmap(is_signed ? 256u : 0u, q) * absmax;

	return v;
}

/* the spans of this workgroup: group_index(), + args.q_groups, ... */
uint u8_spans()
{
	uint blocks = (args.n + 255u) / 256u;

	return (blocks + U8_GROUP_BLOCKS - 1u) / U8_GROUP_BLOCKS;
}

/*
 * This invocation's block in span @s: its index @k (in the group), first
 * element @first and valid elements @cnt (0 past the group's last block)
 */
void u8_block(uint s, out uint k, out uint first, out uint cnt)
{
	uint blocks = (args.n + 255u) / 256u;

	k = s * U8_GROUP_BLOCKS + u8_lid() / U8_LANES;
	first = k * 256u;
	cnt = k < blocks ? min(256u, args.n - first) : 0u;
}

/* the valid elements (0 .. 4) of this invocation's quad @h (0 or 1) */
uint u8_quad_cnt(uint cnt, uint h)
{
	uint at = 128u * h + 4u * (u8_lid() % U8_LANES);

	return cnt > at ? min(cnt - at, 4u) : 0u;
}

/* the first element of quad @h in the block at @first */
uint u8_quad_first(uint first, uint h)
{
	return first + 128u * h + 4u * (u8_lid() % U8_LANES);
}

/* max |x| of the first @c lanes, by the bits (a NaN is above inf) */
uint u8_bits_max(vec4 x, uint c)
{
	uvec4 b = floatBitsToUint(x) & 0x7fffffffu;
	uint m = 0u;

	for (uint l = 0u; l < 4u; l++)
		if (l < c)
			m = max(m, b[l]);
	return m;
}

/*
 * The block's max of @x and @y (u8_bits_max() of each lane's quads):
 * each invocation's in shared memory, one barrier, then each reads its
 * block's 32. A max is the same in any order: the same bits whatever
 * the grouping. @par alternates between spans, so the next span's
 * stores never meet this one's loads (a barrier lies between). The
 * one-state kernels' @my is 0, whatever @y.
 */
void u8_absmax(uint par, uint x, uint y, out float mx, out float my)
{
	uint lid = u8_lid(), at = (lid / U8_LANES) * 8u;
	uvec4 a = uvec4(0u), b = uvec4(0u);

	if (GPO_U8_SG) {
		mx = uintBitsToFloat(subgroupMax(x));
		my = uintBitsToFloat(subgroupMax(y));
		return;
	}

	u8_red[par][0][lid >> 2][lid & 3u] = x;
#if U8_STATES == 2
	u8_red[par][1][lid >> 2][lid & 3u] = y;
#endif
	memoryBarrierShared();
	barrier();
	for (uint i = 0u; i < 8u; i++) {
		a = max(a, u8_red[par][0][at + i]);
#if U8_STATES == 2
		b = max(b, u8_red[par][1][at + i]);
#endif
	}
	mx = uintBitsToFloat(max(max(a.x, a.y), max(a.z, a.w)));
	my = uintBitsToFloat(max(max(b.x, b.y), max(b.z, b.w)));
}

/*
 * The word of codes quant8_r(@x[l], @r, @absmax) for the first @c lanes
 * (@r the block's factor: prec_qrcp(@absmax)), the rest keeping @old's
 * bytes
 */
uint u8_word(vec4 x, uint c, float r, float absmax, bool is_signed,
	     uint old)
{
	precise vec4 v;
	uint w = 0u;

	/*
	 * The values quant8_r() finds codes of: 0 for a zero absmax. A
	 * block whose absmax is in [2^-100, 2^126) (prec_qv_fast()) has its
	 * codes dequantized and quantized by the hardware's multiply
	 * (u8_dequant_f(), prec_qv()). The kernels take the fast paths for
	 * such blocks, unrolled, and the full functions for the rest in a
	 * loop, so that the integer paths are in the code once, not once an
	 * element (precision.glsl's cr_div_f says what their copies cost).
	 */
	if (prec_qv_fast(absmax)) {
		v = x * r;
	} else {
		[[dont_unroll]] for (uint l = 0u; l < 4u; l++)
			v[l] = (floatBitsToUint(absmax) & 0x7fffffffu) == 0u ?
			       0.0 : prec_qv(x[l], r, absmax);
	}
	for (uint l = 0u; l < 4u; l++)
		w |= (l < c ? quant8_v(v[l], is_signed) :
			      u8_byte(old, l)) << (8u * l);
	return w;
}

#endif

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

/*
 * ---- param_*: half-precision parameters (abi.h GPO_UPD_PARAM_*) ----
 *
 * A kernel that defines PARAM_HALF_BUF (its family's GPO_xxx_BUF_HALF)
 * before including this file gets them; p and g are its bindings 0 and 1. With
 * GPO_UPD_PARAM_F16/BF16 the gradients are half words (read exactly); with
 * a master copy, binding 0 stays the f32 master and PARAM_HALF_BUF gets
 * it rounded to nearest even; with GPO_UPD_PARAM_SR binding 0 holds the
 * bf16 parameters, stored with stochastic rounding. A float4 of half
 * words is an uvec2 (element 4i + 0 in the low half of .x); single
 * elements (the tail) are stored with atomics on their 32-bit word, so
 * two invocations never lose each other's half.
 */
#ifdef PARAM_HALF_BUF
layout(set = 0, binding = 0, std430) buffer param_p_h4 { uvec2 param_p2[]; };
layout(set = 0, binding = 0, std430) buffer param_p_w { uint param_pw[]; };
layout(set = 0, binding = 1, std430) buffer param_g_h4 { uvec2 param_g2[]; };
layout(set = 0, binding = 1, std430) buffer param_g_w { uint param_gw[]; };
layout(set = 0, binding = PARAM_HALF_BUF, std430) buffer param_c_h4
	{ uvec2 param_c2[]; };
layout(set = 0, binding = PARAM_HALF_BUF, std430) buffer param_c_w
	{ uint param_cw[]; };

/*
 * A kernel built once per parameter dtype (its dtypes line "f32 f16
 * bf16": the Makefile adds -DGPO_HALF_VARIANTS to each of its modules)
 * knows the kind when compiled: its f32 module has no half path and its
 * f16 and bf16 ones no other, so none holds registers for code it never
 * runs (the 8-bit kernels' f32 path ran 5-10 % slower on an H100 with
 * the half loop beside it). The host picks the module by the parameter
 * dtype (optim.c's gpo__optim_param_call) and sets the flags as well,
 * which the other kernels read at run time.
 */
#if defined(GPO_DTYPE_F16)
#define PARAM_IS_HALF	true
#define PARAM_IS_F16	true
#elif defined(GPO_DTYPE_BF16)
#define PARAM_IS_HALF	true
#define PARAM_IS_F16	false
#elif defined(GPO_HALF_VARIANTS)
#define PARAM_IS_HALF	false
#define PARAM_IS_F16	false
#else
#define PARAM_IS_HALF	FLAG(GPO_UPD_PARAM_HALF)
#define PARAM_IS_F16	FLAG(GPO_UPD_PARAM_F16)
#endif

bool param_half()
{
	return PARAM_IS_HALF;
}

float param_h2f(uint h)
{
	return PARAM_IS_F16 ? f16_to_f32(h) : bf16_to_f32(h);
}

uint param_f2h(float x)
{
	return PARAM_IS_F16 ? f32_to_f16(x) : f32_to_bf16(x);
}

uint param_word16(uint w, uint e)
{
	return (w >> ((e & 1u) * 16u)) & 0xffffu;
}

/* elements 4i .. 4i + cnt - 1 of an uvec2/uint view */
vec4 param_unpack(uvec2 w)
{
	return vec4(param_h2f(w.x & 0xffffu), param_h2f(w.x >> 16),
		    param_h2f(w.y & 0xffffu), param_h2f(w.y >> 16));
}

/* the parameters of elements 4i .. 4i + cnt - 1 as f32 (master or p) */
vec4 param_load(uint i, uint cnt)
{
	vec4 r = vec4(0.0);

	if (FLAG(GPO_UPD_PARAM_SR)) {
		if (cnt == 4u)
			return param_unpack(param_p2[i]);
		for (uint k = 0u; k < cnt; k++) {
			uint e = 4u * i + k;

			r[k] = param_h2f(param_word16(param_pw[e >> 1], e));
		}
		return r;
	}
	if (cnt == 4u)
		return p4[i];
	for (uint k = 0u; k < cnt; k++)
		r[k] = p[4u * i + k];
	return r;
}

vec4 param_grad(uint i, uint cnt)
{
	vec4 r = vec4(0.0);

	if (!param_half()) {
		if (cnt == 4u)
			return g4[i];
		for (uint k = 0u; k < cnt; k++)
			r[k] = g[4u * i + k];
		return r;
	}
	if (cnt == 4u)
		return param_unpack(param_g2[i]);
	for (uint k = 0u; k < cnt; k++)
		r[k] = param_h2f(param_word16(param_gw[(4u * i + k) >> 1],
					      4u * i + k));
	return r;
}

float param_load1(uint e)
{
	if (FLAG(GPO_UPD_PARAM_SR))
		return param_h2f(param_word16(param_pw[e >> 1], e));
	return p[e];
}

float param_grad1(uint e)
{
	if (param_half())
		return param_h2f(param_word16(param_gw[e >> 1], e));
	return g[e];
}

/* element e's half word @h into its 32-bit word, the other half kept */
void param_put16(uint e, uint h)
{
	uint sh = (e & 1u) * 16u, keep = ~(0xffffu << sh);

	if (FLAG(GPO_UPD_PARAM_SR)) {
		atomicAnd(param_pw[e >> 1], keep);
		atomicOr(param_pw[e >> 1], h << sh);
	} else {
		atomicAnd(param_cw[e >> 1], keep);
		atomicOr(param_cw[e >> 1], h << sh);
	}
}

/* x rounded for element e: nearest even, or stochastically (SR) */
uint param_round(float x, uint e)
{
	if (!FLAG(GPO_UPD_PARAM_SR))
		return param_f2h(x);
	return f32_to_bf16_sr(x, round_bits(args.p_seed_lo, args.p_seed_hi,
					    args.p_step_lo, args.p_step_hi,
					    args.p_base + e, 0u));
}

/* store the new parameters of elements 4i .. 4i + cnt - 1 */
void param_store(uint i, uint cnt, vec4 x)
{
	if (!FLAG(GPO_UPD_PARAM_SR)) {
		if (cnt == 4u) {
			p4[i] = x;
		} else {
			for (uint k = 0u; k < cnt; k++)
				p[4u * i + k] = x[k];
		}
		if (!param_half())
			return;
	}
	if (cnt == 4u) {
		uint h[4];

		if (FLAG(GPO_UPD_PARAM_SR)) {
			/* p_base + 4i is a multiple of 4: one Philox block */
			uint e = args.p_base + 4u * i;
			uvec4 w = prec_philox(uvec2(args.p_seed_lo,
						    args.p_seed_hi),
					      uvec4(e >> 2, 0u, args.p_step_lo,
						    (args.p_step_hi & 0xffffu) |
						    (4u << 16)));

			for (uint k = 0u; k < 4u; k++)
				h[k] = f32_to_bf16_sr(x[k], w[k]);
		} else {
			for (uint k = 0u; k < 4u; k++)
				h[k] = param_f2h(x[k]);
		}
		uvec2 v = uvec2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));

		if (FLAG(GPO_UPD_PARAM_SR))
			param_p2[i] = v;
		else
			param_c2[i] = v;
		return;
	}
	for (uint k = 0u; k < cnt; k++)
		param_put16(4u * i + k, param_round(x[k], 4u * i + k));
}

void param_store1(uint e, float x)
{
	if (!FLAG(GPO_UPD_PARAM_SR)) {
		p[e] = x;
		if (!param_half())
			return;
	}
	param_put16(e, param_round(x, e));
}
#endif /* PARAM_HALF_BUF */

#ifdef GPO_U8_STATE
/*
 * The u8 kernels' p and g: quad @q (elements 4q .. 4q + c - 1 of the
 * group) as f32. @hp is param_half(), a constant of each module (the
 * u8 kernels are built per parameter dtype), so the f32 module's are
 * plain vec4 loads and stores.
 */
void u8_quad_load(bool hp, uint q, uint c, out vec4 pv, out vec4 gv)
{
	if (hp) {
		pv = param_load(q, c);
		gv = param_grad(q, c);
		return;
	}
	if (GPO_U8_QUADS || c == 4u) {
		pv = p4[q];
		gv = g4[q];
	} else {
		for (uint l = 0u; l < c; l++) {
			pv[l] = p[4u * q + l];
			gv[l] = g[4u * q + l];
		}
	}
}

void u8_quad_store(bool hp, uint q, uint c, vec4 pv)
{
	if (hp) {
		param_store(q, c, pv);
	} else if (GPO_U8_QUADS || c == 4u) {
		p4[q] = pv;
	} else {
		for (uint l = 0u; l < c; l++)
			p[4u * q + l] = pv[l];
	}
}

/*
 * The one-state kernels (rmsprop8, adagrad8, lion8: the signed map)
 * define U8_ONE_STATE as the binding of their codes (sq here), declare
 * p and g (FLOAT4_BUF) and their absmax as sabs before including this
 * file, and define elem(): one element's update from its p, g, code and
 * the block's old absmax, returning p and the new state in @so.
 * u8_span1() is then a whole span of theirs, u8_main1() all of them.
 */
#ifdef U8_ONE_STATE
U8_BUF(U8_ONE_STATE, s);

float elem(float p0, float g0, uint code, float absmax, out float so);

void u8_span1(uint sp, uint par, bool hp)
{
	uint k, first, cnt, blk, c[2], e[2], w[2], sw[2];
	vec4 pv[2], sv[2];
	uint sx = 0u;
	float sa = 0.0, na, unused, sr;

	u8_block(sp, k, first, cnt);
	blk = args.q_blk + k;
	if (cnt != 0u)
		sa = sabs[blk];
	for (uint h = 0u; h < 2u; h++) {
		c[h] = u8_quad_cnt(cnt, h);
		e[h] = u8_quad_first(first, h);
		/* q_off is a multiple of 4: the quad's codes are one word */
		w[h] = (args.q_off + e[h]) / 4u;
		if (c[h] == 0u)
			continue;
		vec4 gv;
		u8_quad_load(hp, e[h] / 4u, c[h], pv[h], gv);
		sw[h] = sq[w[h]];
		for (uint l = 0u; l < 4u; l++) {
			float so = 0.0;

			if (l < c[h])
				pv[h][l] = elem(pv[h][l], gv[l],
						u8_byte(sw[h], l), sa, so);
			sv[h][l] = so;
		}
		u8_quad_store(hp, e[h] / 4u, c[h], pv[h]);
		sx = max(sx, u8_bits_max(sv[h], c[h]));
	}
	/* every invocation of the block has read sabs[blk] by now */
	u8_absmax(par, sx, 0u, na, unused);
	if (cnt != 0u && u8_lid() % U8_LANES == 0u)
		sabs[blk] = na;
	sr = prec_qrcp(na);
	for (uint h = 0u; h < 2u; h++)
		if (c[h] != 0u)
			sq[w[h]] = u8_word(sv[h], c[h], sr, na, true, sw[h]);
}

void u8_main1()
{
	uint par = 0u;

	prec_qmap_load();
	barrier();
	/* every invocation reads the same scal: all return alike */
	if (!grad_mul())
		return;
	/* param_half() is this module's constant (above) */
	for (uint s = group_index(); s < u8_spans(); s += args.q_groups) {
		u8_span1(s, par, param_half());
		par ^= 1u;
	}
}
#endif
#endif /* GPO_U8_STATE */
