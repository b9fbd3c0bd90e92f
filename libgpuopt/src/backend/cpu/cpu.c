// SPDX-License-Identifier: MIT
/*
 * backend_cpu.c - the cpu backend: the numerical reference and fallback
 *
 * Kernels run synchronously on a pool of threads, one slice each. The
 * loops are plain float loops over restrict pointers so that gcc
 * vectorises them (-O3 -fno-math-errno: sqrtf must not set errno, or no
 * loop with a square root vectorises; check with -fopt-info-vec). Per-element branches
 * depend only on launch flags, which -O3 unswitches out of the loops.
 * Nothing is allocated per launch.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/gpuopt_i.h"

#define CPU_MAX_THREADS 256
#define SLICE_ALIGN	16	/* elements: slices start on cache lines */

struct dev_mem {
	float *ptr;
	uint64_t size;
};

struct cpu_dev;

typedef void (*slice_fn)(const struct kernel_args *a, uint32_t lo,
			 uint32_t hi);

struct cpu_dev {
	int nthreads;
	pthread_t threads[CPU_MAX_THREADS];
	pthread_mutex_t lock;
	pthread_cond_t work_cv;
	pthread_cond_t done_cv;
	uint64_t generation;
	int pending;
	int stopping;
	/* the launch being run */
	slice_fn fn;
	const struct kernel_args *args;
	uint32_t units;			/* elements, items or groups */
	uint32_t align;			/* slice boundaries */
	uint64_t ns;			/* time of launches since last wait */
};

static inline float *bp(const struct kernel_args *a, int i)
{
	const struct dev_buf *b = &a->buf[i];

	if (!b->mem)
		return NULL;
	return (float *)((char *)b->mem->ptr + b->off);
}

static inline const uint32_t *bu(const struct kernel_args *a, int i)
{
	return (const uint32_t *)bp(a, i);
}

/*
 * The gradient multiplier: scal[0] (unscale and clip) when the norm pass
 * ran, negated for maximize. Returns 0 if the step is to be skipped.
 */
static int grad_mul(const struct kernel_args *a, int scal_buf, float *gm)
{
	float m = 1.0f;

	if (a->flags & KF_USE_SCAL) {
		const float *scal = bp(a, scal_buf);

		if (scal[1] != 0.0f)
			return 0;
		m = scal[0];
	}
	*gm = (a->flags & KF_MAXIMIZE) ? -m : m;
	return 1;
}

/* ---- kernels ---------------------------------------------------------- */

/*
 * The copy is the bandwidth limit the optimizer loops are measured
 * against. A plain store loop would pay a read-for-ownership of every
 * destination line (12 bytes of traffic per 8 counted) while the
 * optimizers write lines they have just read; streaming stores move
 * exactly the 8 bytes, as a GPU copy does.
 */
#ifdef __SSE__
#include <immintrin.h>

static void k_copy(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *d = bp(a, 0);
	const float *s = bp(a, 1);
	uint32_t i = lo;

	for (; i < hi && ((uintptr_t)(d + i) & 15); i++)
		d[i] = s[i];
	for (; i + 4 <= hi; i += 4)
		_mm_stream_ps(d + i, _mm_loadu_ps(s + i));
	for (; i < hi; i++)
		d[i] = s[i];
	_mm_sfence();
}
#else
static void k_copy(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	memcpy(bp(a, 0) + lo, bp(a, 1) + lo, (size_t)(hi - lo) * 4);
}
#endif

static void k_fill(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict d = bp(a, 0);
	const float v = a->s[0];
	uint32_t i;

	for (i = lo; i < hi; i++)
		d[i] = v;
}

/*
 * The update loops do a division (and most a square root) per element:
 * with SSE alone two cores are compute bound once the data sits in cache,
 * so each (and the norm pass) also gets an AVX2 clone, picked at load time. -ffp-contract=off
 * keeps the clones' results identical to the baseline's.
 */
#define CPU_CLONES __attribute__((target_clones("avx2", "default")))

/* Four float lanes in one register: gcc's vector extension. */
typedef float v4f __attribute__((vector_size(16)));

/*
 * One group of the norm pass: sum of squares, and inf/NaN detection
 * (g * 0 is NaN exactly when g is inf or NaN). Explicit vector lanes
 * because gcc will not reassociate a float sum without -ffast-math; the
 * lane order is fixed, so the result is deterministic.
 */
CPU_CLONES
static void k_norm_partial(const struct kernel_args *a, uint32_t lo,
			   uint32_t hi)
{
	const float *restrict g = bp(a, 0);
	float *restrict part = bp(a, 1);
	uint32_t grp, i, j;

	for (grp = lo; grp < hi; grp++) {
		uint64_t start = (uint64_t)grp * a->aux1;
		uint64_t end = start + a->aux1;
		v4f acc0 = { 0 }, acc1 = { 0 }, bad = { 0 }, x, y;
		float sum = 0, nan = 0;

		if (end > a->n)
			end = a->n;
		for (i = start; i + 8 <= end; i += 8) {
			__builtin_memcpy(&x, g + i, 16);
			__builtin_memcpy(&y, g + i + 4, 16);
			acc0 += x * x;
			acc1 += y * y;
			bad += x * 0.0f + y * 0.0f;
		}
		acc0 += acc1;
		for (j = 0; j < 4; j++) {
			sum += acc0[j];
			nan += bad[j];
		}
		for (; i < end; i++) {
			sum += g[i] * g[i];
			nan += g[i] * 0.0f;
		}
		part[2 * grp] = sum;
		part[2 * grp + 1] = isnan(nan) ? 1.0f : 0.0f;
	}
}

static void k_norm_final(const struct kernel_args *a, uint32_t lo,
			 uint32_t hi)
{
	const float *part = bp(a, 0);
	float *scal = bp(a, 1);
	float total = 0, norm, mul = a->s[0];
	int bad = 0;
	uint32_t i;

	if (lo != 0)
		return;
	for (i = 0; i < a->aux0; i++) {
		total += part[2 * i];
		bad |= part[2 * i + 1] != 0.0f;
	}
	norm = sqrtf(total) * a->s[0];
	if (a->s[1] > 0) {
		float coef = a->s[1] / (norm + 1e-6f);

		if (coef < 1.0f)
			mul *= coef;
	}
	scal[0] = mul;
	scal[1] = bad && (a->flags & KF_CHECK_FINITE) ? 1.0f : 0.0f;
	scal[2] = norm;
	scal[3] = total;
}

CPU_CLONES
static void k_sgd(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict p = bp(a, 0), *restrict buf = bp(a, 2);
	const float *restrict g = bp(a, 1);
	const float lr = a->s[0], wd = a->s[1], mom = a->s[2];
	const float damp = a->s[4];	/* 1 - dampening, from double */
	const int use_mom = a->flags & KF_MOMENTUM;
	const int first = a->flags & KF_FIRST;
	const int nesterov = a->flags & KF_NESTEROV;
	float gm;
	uint32_t i;

	if (!grad_mul(a, 3, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float d = g[i] * gm + wd * p[i];

		if (use_mom) {
			float b = first ? d : mom * buf[i] + damp * d;

			buf[i] = b;
			d = nesterov ? d + mom * b : b;
		}
		p[i] = p[i] - lr * d;
	}
}

CPU_CLONES
static void k_adam(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict p = bp(a, 0), *restrict m = bp(a, 2);
	float *restrict v = bp(a, 3), *restrict vmax = bp(a, 4);
	const float *restrict g = bp(a, 1);
	const float b1 = a->s[1], b2 = a->s[2], eps = a->s[3];
	const float step_size = a->s[5], bc2_sqrt = a->s[6];
	const float ob1 = a->s[8], ob2 = a->s[9];	/* 1 - b1, 1 - b2 */
	const int amsgrad = a->flags & KF_AMSGRAD;
	/* AdamW decays p first; Adam adds wd * p to g (L2) */
	const int decoupled = a->flags & KF_DECOUPLED;
	const float decay = decoupled ? a->s[7] : 1.0f;
	const float l2 = decoupled ? 0.0f : a->s[4];
	float gm;
	uint32_t i;

	if (!grad_mul(a, 5, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + l2 * p[i];
		float mi = m[i] * b1 + ob1 * gi;
		float vi = v[i] * b2 + ob2 * gi * gi;
		float denom;

		m[i] = mi;
		v[i] = vi;
		if (amsgrad) {
			/* torch.maximum; a ternary vectorises, fmaxf not */
			vi = vmax[i] > vi ? vmax[i] : vi;
			vmax[i] = vi;
		}
		denom = sqrtf(vi) / bc2_sqrt + eps;
		p[i] = p[i] * decay - step_size * (mi / denom);
	}
}

CPU_CLONES
static void k_rmsprop(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict p = bp(a, 0), *restrict sq = bp(a, 2);
	float *restrict buf = bp(a, 3), *restrict ga = bp(a, 4);
	const float *restrict g = bp(a, 1);
	const float lr = a->s[0], alpha = a->s[1], eps = a->s[2];
	const float wd = a->s[3], mom = a->s[4];
	const float oa = a->s[5];	/* 1 - alpha */
	const int use_mom = a->flags & KF_MOMENTUM;
	const int centered = a->flags & KF_CENTERED;
	float gm;
	uint32_t i;

	if (!grad_mul(a, 5, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + wd * p[i];
		float s = sq[i] * alpha + oa * gi * gi;
		float avg;

		sq[i] = s;
		if (centered) {
			float ca = ga[i] * alpha + oa * gi;

			ga[i] = ca;
			s = s - ca * ca;
		}
		avg = sqrtf(s) + eps;
		if (use_mom) {
			float b = buf[i] * mom + gi / avg;

			buf[i] = b;
			p[i] = p[i] - lr * b;
		} else {
			p[i] = p[i] - lr * (gi / avg);
		}
	}
}

CPU_CLONES
static void k_adagrad(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict p = bp(a, 0), *restrict sum = bp(a, 2);
	const float *restrict g = bp(a, 1);
	const float clr = a->s[0], wd = a->s[1], eps = a->s[2];
	float gm;
	uint32_t i;

	if (!grad_mul(a, 3, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm + wd * p[i];
		float s = sum[i] + gi * gi;

		sum[i] = s;
		p[i] = p[i] - clr * (gi / (sqrtf(s) + eps));
	}
}

/* sign with sign(0) = 0, branch-free so that the loop vectorises */
static inline float sign_of(float x)
{
	return (float)(x > 0.0f) - (float)(x < 0.0f);
}

CPU_CLONES
static void k_lion(const struct kernel_args *a, uint32_t lo, uint32_t hi)
{
	float *restrict p = bp(a, 0), *restrict m = bp(a, 2);
	const float *restrict g = bp(a, 1);
	const float lr = a->s[0], b1 = a->s[1], b2 = a->s[2];
	const float decay = a->s[3];
	const float ob1 = a->s[4], ob2 = a->s[5];	/* 1 - b1, 1 - b2 */
	float gm;
	uint32_t i;

	if (!grad_mul(a, 3, &gm))
		return;
	for (i = lo; i < hi; i++) {
		float gi = g[i] * gm;
		float c = m[i] * b1 + ob1 * gi;

		p[i] = p[i] * decay - lr * sign_of(c);
		m[i] = m[i] * b2 + ob2 * gi;
	}
}

/* LAMB's update direction from the updated moments. */
static inline float lamb_r(float m, float v, float p, float bc1, float bc2,
			   float eps, float wd)
{
	return (m / bc1) / (sqrtf(v / bc2) + eps) + wd * p;
}

/* sum of squares over fixed vector lanes, then in order: deterministic */
static float lane_sumsq(const float *x, uint32_t n)
{
	v4f acc0 = { 0 }, acc1 = { 0 }, u, w;
	float sum = 0;
	uint32_t i, j;

	for (i = 0; i + 8 <= n; i += 8) {
		__builtin_memcpy(&u, x + i, 16);
		__builtin_memcpy(&w, x + i + 4, 16);
		acc0 += u * u;
		acc1 += w * w;
	}
	acc0 += acc1;
	for (j = 0; j < 4; j++)
		sum += acc0[j];
	for (; i < n; i++)
		sum += x[i] * x[i];
	return sum;
}


CPU_CLONES
static void k_lamb_prep(const struct kernel_args *a, uint32_t lo,
			uint32_t hi)
{
	const float *restrict p = bp(a, 0), *restrict g = bp(a, 1);
	float *restrict m = bp(a, 2), *restrict v = bp(a, 3);
	const uint32_t *blocks = bu(a, 4);
	float *part = bp(a, 5);
	const float b1 = a->s[0], b2 = a->s[1], eps = a->s[2], wd = a->s[3];
	const float bc1 = a->s[4], bc2 = a->s[5];
	const float ob1 = a->s[6], ob2 = a->s[7];	/* 1 - b1, 1 - b2 */
	uint32_t i, grp;
	float gm;

	if (!grad_mul(a, 6, &gm))
		return;
	for (grp = lo; grp < hi; grp++) {
		uint32_t b = a->aux1 + grp;
		uint32_t start = blocks[4 * b + 1];
		uint32_t n = blocks[4 * b + 2];
		float r[LAMB_BLOCK];

		const float *restrict pb = p + start, *restrict gb = g + start;
		float *restrict mb = m + start, *restrict vb = v + start;

		/* the update vectorises; the sums go through fixed lanes */
		for (i = 0; i < n; i++) {
			float gi = gb[i] * gm;
			float mi = mb[i] * b1 + ob1 * gi;
			float vi = vb[i] * b2 + ob2 * gi * gi;

			mb[i] = mi;
			vb[i] = vi;
			r[i] = lamb_r(mi, vi, pb[i], bc1, bc2, eps, wd);
		}
		part[2 * b] = lane_sumsq(pb, n);
		part[2 * b + 1] = lane_sumsq(r, n);
	}
}

static void k_lamb_trust(const struct kernel_args *a, uint32_t lo,
			 uint32_t hi)
{
	const uint32_t *tb = bu(a, 0);
	const float *part = bp(a, 1);
	float *trust = bp(a, 2);
	const float *scal = bp(a, 3);
	uint32_t t, b;

	if ((a->flags & KF_USE_SCAL) && scal[1] != 0.0f)
		return;
	for (t = lo; t < hi; t++) {
		float pn = 0, rn = 0;

		for (b = tb[2 * t]; b < tb[2 * t] + tb[2 * t + 1]; b++) {
			pn += part[2 * b];
			rn += part[2 * b + 1];
		}
		pn = sqrtf(pn);
		rn = sqrtf(rn);
		trust[t] = pn > 0 && rn > 0 ? pn / rn : 1.0f;
	}
}

CPU_CLONES
static void k_lamb_apply(const struct kernel_args *a, uint32_t lo,
			 uint32_t hi)
{
	float *restrict p = bp(a, 0);
	const float *restrict m = bp(a, 1), *restrict v = bp(a, 2);
	const uint32_t *blocks = bu(a, 3);
	const float *trust = bp(a, 4);
	const float *scal = bp(a, 5);
	const float lr = a->s[0], eps = a->s[2], wd = a->s[3];
	const float bc1 = a->s[4], bc2 = a->s[5];
	uint32_t i, grp;

	if ((a->flags & KF_USE_SCAL) && scal[1] != 0.0f)
		return;
	for (grp = lo; grp < hi; grp++) {
		uint32_t b = a->aux1 + grp;
		uint32_t n = blocks[4 * b + 2];
		float *restrict pb = p + blocks[4 * b + 1];
		const float *restrict mb = m + blocks[4 * b + 1];
		const float *restrict vb = v + blocks[4 * b + 1];
		float step = lr * trust[blocks[4 * b]];

		for (i = 0; i < n; i++)
			pb[i] = pb[i] - step * lamb_r(mb[i], vb[i], pb[i], bc1,
						       bc2, eps, wd);
	}
}

static inline void obj_range(const struct kernel_args *a, uint32_t grp,
			     uint32_t *start, uint32_t *end)
{
	uint64_t s = (uint64_t)grp * a->aux1, e = s + a->aux1;

	*start = (uint32_t)(s < a->n ? s : a->n);
	*end = (uint32_t)(e < a->n ? e : a->n);
}

static void k_obj_quadratic(const struct kernel_args *a, uint32_t lo,
			    uint32_t hi)
{
	const float *x = bp(a, 0);
	float *g = bp(a, 1), *part = bp(a, 2);
	uint32_t grp, i, start, end;

	for (grp = lo; grp < hi; grp++) {
		float loss = 0;

		obj_range(a, grp, &start, &end);
		for (i = start; i < end; i++) {
			float c = (float)(1 + i % 7), d = x[i] - 1.0f;

			g[i] = c * d;
			loss += 0.5f * c * d * d;
		}
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0;
	}
}

static void k_obj_rosenbrock(const struct kernel_args *a, uint32_t lo,
			     uint32_t hi)
{
	const float *x = bp(a, 0);
	float *g = bp(a, 1), *part = bp(a, 2);
	uint32_t grp, i, start, end, n = a->n;

	for (grp = lo; grp < hi; grp++) {
		float loss = 0;

		obj_range(a, grp, &start, &end);
		for (i = start; i < end; i++) {
			float xi = x[i], gi = 0;

			if (i + 1 < n) {
				float t = x[i + 1] - xi * xi, u = 1.0f - xi;

				loss += 100.0f * t * t + u * u;
				gi += -400.0f * xi * t - 2.0f * u;
			}
			if (i > 0)
				gi += 200.0f * (xi - x[i - 1] * x[i - 1]);
			g[i] = gi;
		}
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0;
	}
}

static const slice_fn cpu_kernels[K_COUNT] = {
	[K_COPY] = k_copy,
	[K_FILL] = k_fill,
	[K_NORM_PARTIAL] = k_norm_partial,
	[K_NORM_FINAL] = k_norm_final,
	[K_SGD] = k_sgd,
	[K_ADAM] = k_adam,
	[K_RMSPROP] = k_rmsprop,
	[K_ADAGRAD] = k_adagrad,
	[K_LION] = k_lion,
	[K_LAMB_PREP] = k_lamb_prep,
	[K_LAMB_TRUST] = k_lamb_trust,
	[K_LAMB_APPLY] = k_lamb_apply,
	[K_OBJ_QUADRATIC] = k_obj_quadratic,
	[K_OBJ_ROSENBROCK] = k_obj_rosenbrock,
};

/* ---- the thread pool ---------------------------------------------------- */

static void run_slice(struct cpu_dev *cd, int idx)
{
	uint64_t units = cd->units, per, lo, hi;

	per = (units + cd->nthreads - 1) / cd->nthreads;
	per = (per + cd->align - 1) / cd->align * cd->align;
	lo = per * idx;
	hi = lo + per;
	if (hi > units)
		hi = units;
	if (lo < hi)
		cd->fn(cd->args, (uint32_t)lo, (uint32_t)hi);
}

static void *worker(void *arg)
{
	struct cpu_dev *cd = ((void **)arg)[0];
	int idx = (int)(intptr_t)((void **)arg)[1];
	uint64_t seen = 0;

	free(arg);
	pthread_mutex_lock(&cd->lock);
	for (;;) {
		while (cd->generation == seen && !cd->stopping)
			pthread_cond_wait(&cd->work_cv, &cd->lock);
		if (cd->stopping)
			break;
		seen = cd->generation;
		pthread_mutex_unlock(&cd->lock);
		run_slice(cd, idx);
		pthread_mutex_lock(&cd->lock);
		if (--cd->pending == 0)
			pthread_cond_signal(&cd->done_cv);
	}
	pthread_mutex_unlock(&cd->lock);
	return NULL;
}

static int cpu_launch(struct gpo_device *dev, enum kernel_id k,
		      const struct kernel_args *args)
{
	struct cpu_dev *cd = dev->priv;
	uint64_t t0 = gpo__now_ns();
	uint32_t units;

	if ((unsigned int)k >= K_COUNT)
		return gpo__err(-EINVAL, "cpu: no kernel %d", k);
	units = gpo__kernel_table[k].grid == GRID_GROUPS ? args->aux0 : args->n;
	if (k == K_NORM_FINAL)
		units = 1;
	if (!units)
		return 0;
	cd->fn = cpu_kernels[k];
	cd->args = args;
	cd->units = units;
	cd->align = gpo__kernel_table[k].grid == GRID_ELEMENTS ? SLICE_ALIGN : 1;
	/* small launches are not worth waking threads for */
	if (cd->nthreads == 1 || (gpo__kernel_table[k].grid == GRID_ELEMENTS &&
				  units < 32768) || units == 1) {
		cd->fn(args, 0, units);
		cd->ns += gpo__now_ns() - t0;
		return 0;
	}
	pthread_mutex_lock(&cd->lock);
	cd->pending = cd->nthreads - 1;
	cd->generation++;
	pthread_cond_broadcast(&cd->work_cv);
	pthread_mutex_unlock(&cd->lock);
	run_slice(cd, 0);
	pthread_mutex_lock(&cd->lock);
	while (cd->pending)
		pthread_cond_wait(&cd->done_cv, &cd->lock);
	pthread_mutex_unlock(&cd->lock);
	cd->ns += gpo__now_ns() - t0;
	return 0;
}

static int cpu_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct cpu_dev *cd = dev->priv;

	if (device_ns)
		*device_ns = cd->ns;
	cd->ns = 0;
	return 0;
}

static int cpu_thread_count(void)
{
	const char *env = getenv("GPUOPT_CPU_THREADS");
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (env && atoi(env) > 0)
		n = atoi(env);
	if (n < 1)
		n = 1;
	if (n > CPU_MAX_THREADS)
		n = CPU_MAX_THREADS;
	return (int)n;
}

static void cpu_name(char *name, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	snprintf(name, len, "cpu");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) || !colon)
			continue;
		colon += 2;
		colon[strcspn(colon, "\n")] = '\0';
		snprintf(name, len, "%s", colon);
		break;
	}
	fclose(f);
}

static int cpu_probe(struct gpo_ctx *ctx)
{
	struct gpo_device_info info;
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);

	memset(&info, 0, sizeof(info));
	cpu_name(info.name, sizeof(info.name));
	snprintf(info.vendor, sizeof(info.vendor), "gpuopt");
	snprintf(info.driver, sizeof(info.driver), "gpuopt %s", gpo_version());
	info.type = GPO_DEVICE_CPU;
	info.compute_units = cpu_thread_count();
	info.mem_total_bytes = pages > 0 && psize > 0 ?
			       (uint64_t)pages * psize : 0;
	return gpo__ctx_add_device(ctx, &gpo__cpu_backend_ops, &info, NULL);
}

static void cpu_stop_threads(struct cpu_dev *cd, int started)
{
	int i;

	pthread_mutex_lock(&cd->lock);
	cd->stopping = 1;
	pthread_cond_broadcast(&cd->work_cv);
	pthread_mutex_unlock(&cd->lock);
	for (i = 1; i < started; i++)
		pthread_join(cd->threads[i], NULL);
}

static int cpu_open(struct gpo_device *dev)
{
	struct cpu_dev *cd;
	int i, ret;

	cd = calloc(1, sizeof(*cd));
	if (!cd)
		return gpo__err(-ENOMEM, "out of memory");
	cd->nthreads = cpu_thread_count();
	pthread_mutex_init(&cd->lock, NULL);
	pthread_cond_init(&cd->work_cv, NULL);
	pthread_cond_init(&cd->done_cv, NULL);
	/* thread 0 is the caller */
	for (i = 1; i < cd->nthreads; i++) {
		void **arg = malloc(2 * sizeof(void *));

		if (!arg) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_stop;
		}
		arg[0] = cd;
		arg[1] = (void *)(intptr_t)i;
		ret = pthread_create(&cd->threads[i], NULL, worker, arg);
		if (ret) {
			free(arg);
			ret = gpo__err(-ret, "cpu: cannot start thread %d", i);
			goto out_stop;
		}
	}
	dev->priv = cd;
	dev->mem_align = 256;
	dev->max_alloc = 0;
	return 0;

out_stop:
	cpu_stop_threads(cd, i);
	free(cd);
	return ret;
}

static void cpu_close(struct gpo_device *dev)
{
	struct cpu_dev *cd = dev->priv;

	if (!cd)
		return;
	cpu_stop_threads(cd, cd->nthreads);
	pthread_mutex_destroy(&cd->lock);
	pthread_cond_destroy(&cd->work_cv);
	pthread_cond_destroy(&cd->done_cv);
	free(cd);
	dev->priv = NULL;
}

static int cpu_alloc(struct gpo_device *dev, uint64_t bytes,
		     struct dev_mem **out)
{
	struct dev_mem *mem = malloc(sizeof(*mem));
	uint64_t size = (bytes + 4095) / 4096 * 4096;

	if (!mem)
		return -ENOMEM;
	mem->ptr = aligned_alloc(4096, size);
	if (!mem->ptr) {
		free(mem);
		return -ENOMEM;
	}
	mem->size = size;
	*out = mem;
	return 0;
}

static void cpu_free(struct gpo_device *dev, struct dev_mem *mem)
{
	if (!mem)
		return;
	free(mem->ptr);
	free(mem);
}

static int cpu_write(struct gpo_device *dev, const struct dev_buf *dst,
		     uint64_t off, const void *src, uint64_t bytes)
{
	memcpy((char *)dst->mem->ptr + dst->off + off, src, bytes);
	return 0;
}

static int cpu_read(struct gpo_device *dev, const struct dev_buf *src,
		    uint64_t off, void *dst, uint64_t bytes)
{
	memcpy(dst, (char *)src->mem->ptr + src->off + off, bytes);
	return 0;
}

const struct backend_ops gpo__cpu_backend_ops = {
	.name = "cpu",
	.probe = cpu_probe,
	.open = cpu_open,
	.close = cpu_close,
	.alloc = cpu_alloc,
	.free = cpu_free,
	.write = cpu_write,
	.read = cpu_read,
	.launch = cpu_launch,
	.wait = cpu_wait,
};
