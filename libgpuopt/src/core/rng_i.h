/* SPDX-License-Identifier: MIT */
/*
 * rng_i.h - the counter-based random numbers everything draws from
 *
 * Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1,
 * 2, 3", SC'11): a draw is a pure function of (seed, stream, counter), so
 * initialisation, shuffling and (later) dropout and stochastic rounding
 * give the same bits on every backend, launch shape and rank count, and
 * resuming at a step needs no saved generator state. A stream names what
 * draws: GPO_RNG_<kind> in the top 16 bits, a sub-stream (a tensor's
 * index, an epoch) below.
 */
#ifndef GPUOPT_RNG_I_H
#define GPUOPT_RNG_I_H

#include <stdint.h>

#define GPO_RNG_INIT		1ull	/* parameter initialisation */
#define GPO_RNG_SHUFFLE		2ull	/* a dataset's order per epoch */
#define GPO_RNG_DROPOUT		3ull
#define GPO_RNG_ROUND		4ull	/* stochastic rounding */
#define GPO_RNG_SAMPLE		5ull	/* gpo_model_sample()'s draws */

#define GPO_RNG_STREAM(kind, sub) (((uint64_t)(kind) << 48) | \
				   ((uint64_t)(sub) & ((1ull << 48) - 1)))

/* gpo__philox - the four words of block @counter of (@seed, @stream) */
void gpo__philox(uint64_t seed, uint64_t stream, uint64_t counter,
		 uint32_t out[4]);

/* gpo__rng_u64 - 64 random bits: the first two words of the block */
uint64_t gpo__rng_u64(uint64_t seed, uint64_t stream, uint64_t counter);

/* gpo__rng_uniform - a double in [0, 1) from 53 random bits */
double gpo__rng_uniform(uint64_t seed, uint64_t stream, uint64_t counter);

/*
 * gpo__rng_permutation - @perm[0..n) = a permutation of 0..n-1 drawn from
 * (@seed, @stream): Fisher-Yates, step i taking draw i.
 */
void gpo__rng_permutation(uint64_t seed, uint64_t stream, uint32_t *perm,
			  uint32_t n);

#endif /* GPUOPT_RNG_I_H */
