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
