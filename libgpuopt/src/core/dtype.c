// SPDX-License-Identifier: MIT
/*
 * dtype.c - the element types of buffers: names, sizes, and the host's
 * conversions between float32 and float16/bfloat16
 */
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"

static const struct {
	const char *name;
	size_t size;
} dtypes[GPO_DTYPES] = {
	[GPO_F32] = { "f32", 4 },
	[GPO_F16] = { "f16", 2 },
	[GPO_BF16] = { "bf16", 2 },
	[GPO_U8] = { "u8", 1 },
	[GPO_I32] = { "i32", 4 },
	[GPO_I64] = { "i64", 8 },
};

size_t gpo_dtype_size(enum gpo_dtype dt)
{
	if ((unsigned int)dt >= GPO_DTYPES)
		return 0;
	return dtypes[dt].size;
}

const char *gpo_dtype_name(enum gpo_dtype dt)
{
	if ((unsigned int)dt >= GPO_DTYPES)
		return "unknown";
	return dtypes[dt].name;
}

int gpo_dtype_parse(const char *name)
{
	int i;

	if (!name)
		return gpo__err(-EINVAL, "NULL dtype name");
	for (i = 0; i < GPO_DTYPES; i++)
		if (!strcmp(name, dtypes[i].name))
			return i;
	return gpo__err(-EINVAL, "unknown dtype '%.32s' (f32 f16 bf16 u8 i32 i64)",
		       name);
}

static uint32_t f32_bits(float f)
{
	uint32_t x;

	memcpy(&x, &f, sizeof(x));
	return x;
}

static float bits_f32(uint32_t x)
{
	float f;

	memcpy(&f, &x, sizeof(f));
	return f;
}

/* @v >> @shift, rounded to nearest, ties to even; 1 <= @shift <= 31 */
static uint32_t shift_rne(uint32_t v, unsigned int shift)
{
	uint32_t q = v >> shift, rem = v & ((1u << shift) - 1);
	uint32_t half = 1u << (shift - 1);

	return q + (rem > half || (rem == half && (q & 1)));
}

uint16_t gpo__f32_to_f16(float f)
{
	uint32_t x = f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000;
	uint32_t e;

	x &= 0x7fffffff;
	if (x > 0x7f800000)		/* NaN: quiet, top payload bits */
		return (uint16_t)(sign | 0x7e00 | ((x >> 13) & 0x3ff));
	if (x >= 0x477ff000)		/* >= 65520 rounds to inf */
		return (uint16_t)(sign | 0x7c00);
	if (x >= 0x38800000)		/* normal in f16: rebias 127 -> 15 */
		return (uint16_t)(sign | shift_rne(x - 0x38000000, 13));
	if (x < 0x33000000)		/* <= 2^-25 rounds to zero */
		return (uint16_t)sign;
	/*
	 * A subnormal f16 k * 2^-24: k = mantissa * 2^(e - 126). A carry to
	 * k = 1024 is the smallest normal's encoding, as it must be.
	 */
	e = x >> 23;
	return (uint16_t)(sign | shift_rne((x & 0x7fffff) | 0x800000, 126 - e));
}

float gpo__f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	uint32_t e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;

	if (e == 0x1f)
		return bits_f32(sign | 0x7f800000 | m << 13);
	if (e)
		return bits_f32(sign | (e + 112) << 23 | m << 13);
	v = (float)m * 0x1p-24f;	/* subnormal or zero: exact */
	return sign ? -v : v;
}

uint16_t gpo__f32_to_bf16(float f)
{
	uint32_t x = f32_bits(f);

	if ((x & 0x7fffffff) > 0x7f800000)
		return (uint16_t)(x >> 16 | 0x40);
	/* a carry out of the mantissa goes into the exponent, up to inf */
	return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

float gpo__bf16_to_f32(uint16_t h)
{
	return bits_f32((uint32_t)h << 16);
}
