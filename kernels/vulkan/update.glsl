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
 * State in blockwise 8 bits (the u8 kernels, adam8 ...; abi/adam.h): a
 * workgroup does blocks of 256 elements, one element an invocation. A
 * kernel defines GPO_U8_STATE and PREC_QMAP_SHARED before including this
 * file, calls prec_qmap_load() and barrier() first, and calls every
 * u8_* function below from all its invocations (they hold barriers).
 * A code view is the whole slot as words, four codes a word (element 4i
 * in the low byte).
 */
#ifdef GPO_U8_STATE
#define U8_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_q \
		{ uint name##q[]; }

shared uint u8_red[2][WG_SIZE];
shared uint u8_codes[2][WG_SIZE];

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

/* the blocks of this workgroup: group_index(), + args.q_groups, ... */
uint u8_blocks()
{
	return (args.n + WG_SIZE - 1u) / WG_SIZE;
}

/*
 * The block's max |x| and |y| over the valid lanes (@ny: 1 or 2 of
 * them), by the bits: a NaN wins. A max is the same in any order, so
 * this is deterministic whatever the tree.
 */
void u8_absmax(float x, float y, uint ny, bool valid, out float mx,
	       out float my)
{
	uint lid = gl_LocalInvocationID.x;

	u8_red[0][lid] = valid ? (floatBitsToUint(x) & 0x7fffffffu) : 0u;
	u8_red[1][lid] = valid ? (floatBitsToUint(y) & 0x7fffffffu) : 0u;
	memoryBarrierShared();
	barrier();
	for (uint s = WG_SIZE / 2u; s > 0u; s >>= 1) {
		if (lid < s) {
			u8_red[0][lid] = max(u8_red[0][lid], u8_red[0][lid + s]);
			if (ny > 1u)
				u8_red[1][lid] = max(u8_red[1][lid],
						     u8_red[1][lid + s]);
		}
		memoryBarrierShared();
		barrier();
	}
	mx = uintBitsToFloat(u8_red[0][0]);
	my = uintBitsToFloat(u8_red[1][0]);
	/* everyone has read u8_red before the next block writes it */
	barrier();
}

/*
 * Each invocation's codes @c0 (and @c1) staged; then invocation w < 64
 * gets the words of the block's codes 4w .. 4w + 3 with the lanes from
 * @cnt (the block's valid elements) on taken from @old0 (@old1), its
 * words now. Returns whether this invocation has words to store.
 */
bool u8_pack(uint c0, uint c1, uint cnt, uint old0, uint old1,
	     out uint w0, out uint w1)
{
	uint lid = gl_LocalInvocationID.x;
	bool packs = lid < WG_SIZE / 4u && 4u * lid < cnt;

	u8_codes[0][lid] = c0;
	u8_codes[1][lid] = c1;
	memoryBarrierShared();
	barrier();
	w0 = 0u;
	w1 = 0u;
	for (uint j = 0u; packs && j < 4u; j++) {
		bool inb = 4u * lid + j < cnt;

		w0 |= (inb ? u8_codes[0][4u * lid + j] : u8_byte(old0, j)) <<
		      (8u * j);
		w1 |= (inb ? u8_codes[1][4u * lid + j] : u8_byte(old1, j)) <<
		      (8u * j);
	}
	/* everyone has read u8_codes before the next block writes it */
	barrier();
	return packs;
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

bool param_half()
{
	return FLAG(GPO_UPD_PARAM_HALF);
}

float param_h2f(uint h)
{
	return FLAG(GPO_UPD_PARAM_F16) ? f16_to_f32(h) : bf16_to_f32(h);
}

uint param_f2h(float x)
{
	return FLAG(GPO_UPD_PARAM_F16) ? f32_to_f16(x) : f32_to_bf16(x);
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
