// SPDX-License-Identifier: MIT
/*
 * rng.c - Philox4x32-10, and what the library draws with it (rng_i.h)
 */
#include "core/rng_i.h"

#define PHILOX_M0	0xD2511F53u
#define PHILOX_M1	0xCD9E8D57u
#define PHILOX_W0	0x9E3779B9u
#define PHILOX_W1	0xBB67AE85u

static inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t *hi)
{
	uint64_t p = (uint64_t)a * b;

	*hi = (uint32_t)(p >> 32);
	return (uint32_t)p;
}

void gpo__philox(uint64_t seed, uint64_t stream, uint64_t counter,
		 uint32_t out[4])
{
	uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32);
	uint32_t c2 = (uint32_t)stream, c3 = (uint32_t)(stream >> 32);
	uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
	int r;

	for (r = 0; r < 10; r++) {
		uint32_t hi0, hi1, lo0, lo1;

		lo0 = mulhilo(PHILOX_M0, c0, &hi0);
		lo1 = mulhilo(PHILOX_M1, c2, &hi1);
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
		k0 += PHILOX_W0;
		k1 += PHILOX_W1;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

uint64_t gpo__rng_u64(uint64_t seed, uint64_t stream, uint64_t counter)
{
	uint32_t w[4];

	gpo__philox(seed, stream, counter, w);
	return ((uint64_t)w[1] << 32) | w[0];
}

double gpo__rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter)
{
	return (double)(gpo__rng_u64(seed, stream, counter) >> 11) *
	       (1.0 / 9007199254740992.0);
}

void gpo__rng_permutation(uint64_t seed, uint64_t stream, uint32_t *perm,
			  uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		perm[i] = i;
	/* j uniform in [0, i]: the high word of a 64 x 64-bit product */
	for (i = n ? n - 1 : 0; i > 0; i--) {
		uint64_t r = gpo__rng_u64(seed, stream, i);
		uint32_t j = (uint32_t)(((unsigned __int128)r * (i + 1)) >> 64);
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
}
