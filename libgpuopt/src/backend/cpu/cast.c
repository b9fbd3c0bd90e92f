// SPDX-License-Identifier: MIT
/*
 * cast.c - the cpu kernels of the cast family (kernels/abi/cast.h): the
 * library's C reference applied element by element, so every other
 * backend is compared with exactly these bits
 *
 * Group ops over a grid-stride launch: group g owns the chunks q of
 * GPO_WG_SIZE items with q % groups == g. For quantize8 the items are
 * blocks, taken GPO_WG_SIZE at a time here (a GPU group takes one): which
 * group computes a block changes none of its bits. Each item is written
 * by one group, so slices never share a word.
 */
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"
#include "core/quant_i.h"
#include "backend/cpu/cpu_i.h"
#include "abi/cast.h"

#define WG	GPO_WG_SIZE

/* the items [s, e) of the grid-stride chunks that groups [lo, hi) own */
static void for_chunks(const struct op_call *c, uint32_t lo, uint32_t hi,
		       uint64_t items, uint32_t groups,
		       void (*fn)(const struct op_call *c, uint64_t s,
				  uint64_t e))
{
	uint64_t q, s, e;

	if (hi > groups)
		hi = groups;
	for (q = lo; lo < hi; q += groups) {
		uint64_t last = q + (hi - lo);

		s = q * WG;
		if (s >= items)
			break;
		e = last * WG < items ? last * WG : items;
		fn(c, s, e);
	}
}

static float word_f32(uint32_t w)
{
	float f;

	memcpy(&f, &w, sizeof(f));
	return f;
}

static uint32_t f32_word(float f)
{
	uint32_t w;

	memcpy(&w, &f, sizeof(w));
	return w;
}

static uint16_t cast16(const struct gpo_cast_args *a, float x, uint64_t i)
{
	uint64_t seed, step;

	switch (a->fn) {
	case GPO_CAST_F32_F16:
		return gpo__f32_to_f16(x);
	case GPO_CAST_F32_BF16:
		return gpo__f32_to_bf16(x);
	}
	seed = (uint64_t)a->seed_hi << 32 | a->seed_lo;
	step = (uint64_t)a->step_hi << 32 | a->step_lo;
	return gpo__f32_to_bf16_sr(x, gpo__round_bits(seed, step,
		((uint64_t)a->base_hi << 32 | a->base_lo) + i));
}

/* items are dst words (two 16-bit outputs) or f32 outputs */
static void cast_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_cast_args *a = c->args;
	const uint32_t *src = (const uint32_t *)bp(c, 0);
	uint32_t *dst = (uint32_t *)bp(c, 1);
	uint64_t w, i;

	if (a->fn == GPO_CAST_F16_F32 || a->fn == GPO_CAST_BF16_F32) {
		const uint16_t *h = (const uint16_t *)src + a->off_src;

		for (i = s; i < e; i++)
			dst[a->off_dst + i] = f32_word(a->fn == GPO_CAST_F16_F32 ?
				gpo__f16_to_f32(h[i]) : gpo__bf16_to_f32(h[i]));
		return;
	}
	for (w = s; w < e; w++) {
		uint32_t *out = dst + a->off_dst / 2 + w;
		uint32_t lo, hi;

		i = 2 * w;
		lo = cast16(a, word_f32(src[a->off_src + i]), i);
		hi = i + 1 < a->n ?
		     cast16(a, word_f32(src[a->off_src + i + 1]), i + 1) :
		     *out >> 16;
		*out = lo | hi << 16;
	}
}

static uint64_t cast_items(const struct gpo_cast_args *a)
{
	if (a->fn == GPO_CAST_F16_F32 || a->fn == GPO_CAST_BF16_F32)
		return a->n;
	return ((uint64_t)a->n + 1) / 2;
}

void gpo__cpu_cast(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_cast_args *a = c->args;

	if (a->fn >= GPO_CAST_COUNT)
		return;
	for_chunks(c, lo, hi, cast_items(a), a->groups, cast_range);
}

/* items are blocks: the block's absmax, then its codes */
static void quant8_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_cast_args *a = c->args;
	const uint32_t *src = (const uint32_t *)bp(c, 0) + a->off_src;
	uint8_t *codes = (uint8_t *)bp(c, 1) + a->off_dst;
	float *absmax = bp(c, 2) + a->off_absmax;
	int sg = !!(a->flags & GPO_CAST_SIGNED);
	uint64_t k, i, end;

	for (k = s; k < e; k++) {
		uint32_t m = 0;

		end = (k + 1) * GPO_CAST_BLOCK < a->n ?
		      (k + 1) * GPO_CAST_BLOCK : a->n;
		for (i = k * GPO_CAST_BLOCK; i < end; i++)
			if ((src[i] & 0x7fffffff) > m)
				m = src[i] & 0x7fffffff;
		absmax[k] = word_f32(m);
		for (i = k * GPO_CAST_BLOCK; i < end; i++)
			codes[i] = gpo__quant8(word_f32(src[i]), absmax[k], sg);
	}
}

void gpo__cpu_quant8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_cast_args *a = c->args;

	for_chunks(c, lo, hi, ((uint64_t)a->n + GPO_CAST_BLOCK - 1) /
		   GPO_CAST_BLOCK, a->groups, quant8_range);
}

static void dequant8_range(const struct op_call *c, uint64_t s, uint64_t e)
{
	const struct gpo_cast_args *a = c->args;
	const uint8_t *codes = (const uint8_t *)bp(c, 0) + a->off_src;
	const float *absmax = bp(c, 1) + a->off_absmax;
	float *dst = bp(c, 2) + a->off_dst;
	int sg = !!(a->flags & GPO_CAST_SIGNED);
	uint64_t i;

	for (i = s; i < e; i++)
		dst[i] = gpo__dequant8(codes[i], absmax[i / GPO_CAST_BLOCK], sg);
}

void gpo__cpu_dequant8(const struct op_call *c, uint32_t lo, uint32_t hi)
{
	const struct gpo_cast_args *a = c->args;

	for_chunks(c, lo, hi, a->n, a->groups, dequant8_range);
}
