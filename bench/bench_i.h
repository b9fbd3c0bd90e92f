/* SPDX-License-Identifier: MIT */
/*
 * bench_i.h - what the benchmark programs share: the clock, medians and
 * sizes written as 16M or 1G.
 */
#ifndef GPUOPT_BENCH_I_H
#define GPUOPT_BENCH_I_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* the median of @n values; sorts @v */
static inline double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* "16M" -> 16 * 2^20: binary K, M, G suffixes */
static inline uint64_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	if (*end == 'K' || *end == 'k')
		v *= 1024;
	else if (*end == 'M' || *end == 'm')
		v *= 1048576;
	else if (*end == 'G' || *end == 'g')
		v *= 1073741824.0;
	return (uint64_t)v;
}

#endif /* GPUOPT_BENCH_I_H */
