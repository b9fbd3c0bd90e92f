/* SPDX-License-Identifier: MIT */
/*
 * half.glsl - the matmul family's operand loads (abi/matmul.h): f32,
 * f32 rounded to binary16, or binary16 two a word. Integer code, not
 * unpackHalf2x16 or a float16_t conversion, whose rounding and
 * subnormals the specifications leave to the driver: the products must
 * be those of the binary16 values everywhere. Include after the
 * family's header and the declarations of a, b (float[]) and a_w, b_w
 * (uint[]) on the same bindings.
 */

/* binary16 bits -> its value, exactly (subnormals, infinities, NaN) */
float mm_h2f(uint h)
{
	uint s = (h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;

	if (e == 0u) {
		/* m * 2^-24: exact in f32, a normal number or 0 */
		float v = float(m) * (1.0 / 16777216.0);

		return s != 0u ? -v : v;
	}
	if (e == 31u)
		return uintBitsToFloat(s | 0x7f800000u | (m << 13));
	return uintBitsToFloat(s | ((e + 112u) << 23) | (m << 13));
}

/* f32 -> the nearest binary16 (ties to even; past 65520 infinity) */
uint mm_f2h(float f)
{
	uint x = floatBitsToUint(f), s = (x >> 16) & 0x8000u;
	uint a = x & 0x7fffffffu, e = a >> 23, h, rem, hw, sh, m;

	if (a > 0x7f800000u)
		return s | 0x7e00u | ((a >> 13) & 0x3ffu);
	if (a >= 0x477ff000u)
		return s | 0x7c00u;
	if (a >= 0x38800000u) {
		/* a normal binary16: rebias, round the 13 bits dropped */
		h = (a - 0x38000000u) >> 13;
		rem = a & 0x1fffu;
		if (rem > 0x1000u || (rem == 0x1000u && (h & 1u) != 0u))
			h++;
		return s | h;
	}
	/* 2^-25 (half the least subnormal, a tie) and below: 0 */
	if (a <= 0x33000000u)
		return s;
	/* a subnormal (or the least normal, by the carry) */
	m = (a & 0x7fffffu) | 0x800000u;
	sh = 126u - e;
	h = m >> sh;
	rem = m & ((1u << sh) - 1u);
	hw = 1u << (sh - 1u);
	if (rem > hw || (rem == hw && (h & 1u) != 0u))
		h++;
	return s | h;
}

/* element @e of operand a (b), as the flags say it is stored */
float load_a(uint e)
{
	if (FLAG(GPO_MM_F16_A))
		return mm_h2f((a_w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu);
	if (FLAG(GPO_MM_ROUND))
		return mm_h2f(mm_f2h(a[e]));
	return a[e];
}

float load_b(uint e)
{
	if (FLAG(GPO_MM_F16_B))
		return mm_h2f((b_w[e >> 1] >> ((e & 1u) * 16u)) & 0xffffu);
	if (FLAG(GPO_MM_ROUND))
		return mm_h2f(mm_f2h(b[e]));
	return b[e];
}
