// SPDX-License-Identifier: MIT
/*
 * test_reduce.c - libgpuopt-mpi's reduction through its C API, under
 * mpirun -np N: an optimizer of tensors of odd sizes, S shards of fresh
 * random gradients (seed from argv, the same on every rank), buckets that
 * cut through tensors and slices of uneven lengths. After
 * gpo_comm_reduce() every rank's gradient must be
 *   deterministic=1: bit for bit the f32 sum in shard order 0..S-1, / S
 *   deterministic=0: within float rounding of the float64 mean
 * and both within float rounding of the float64 mean. The rank's other
 * buffers (the parameters) must be untouched. Exit 0 or 1, a message.
 *
 *   mpirun -np N test_reduce DEVICE SEED SHARDS BUCKET_BYTES DETERMINISTIC
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <gpuopt.h>
#include <gpuopt/comm.h>

static int rank;

static float rnd(uint64_t seed, uint32_t shard, uint64_t i)
{
	uint64_t z = seed ^ ((uint64_t)shard << 40) ^ (i * 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	/* mixed magnitudes, so that the order of a sum matters */
	return (float)(((z >> 40) * 0x1p-24 - 0.5) * ldexp(1.0, (int)(z % 17) - 8));
}

static int bad(const char *what)
{
	fprintf(stderr, "test_reduce: rank %d: %s (%s)\n", rank, what,
		gpo_errmsg());
	return 1;
}

int main(int argc, char **argv)
{
	static const uint64_t sizes[] = { 1237, 3, 517, 1, 2049 };
	struct gpo_ctx *ctx = NULL;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL;
	struct gpo_comm *c = NULL;
	uint64_t seed, n = 0, i;
	uint32_t S, lo, hi, k;
	float *g, *got, *par, *par2;
	char opts[160], name[16];
	int det, ret = 1, fails = 0, any = 0, t;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc != 6) {
		fprintf(stderr, "usage: test_reduce DEVICE SEED SHARDS BUCKET_BYTES DETERMINISTIC\n");
		goto out;
	}
	seed = strtoull(argv[2], NULL, 10);
	det = atoi(argv[5]);
	snprintf(opts, sizeof(opts), "shards=%s bucket_bytes=%s deterministic=%d",
		 argv[3], argv[4], det);
	if (gpo_ctx_new(&ctx, 0) || gpo_comm_new(NULL, opts, &c) ||
	    gpo_comm_device(c, ctx, argv[1], &dev) ||
	    gpo_optim_new(dev, GPO_SGD, &opt)) {
		ret = bad("setup");
		goto out;
	}
	for (t = 0; t < (int)(sizeof(sizes) / sizeof(sizes[0])); t++) {
		snprintf(name, sizeof(name), "t%d", t);
		if (gpo_optim_add_tensor(opt, name, 1, &sizes[t], 0) < 0) {
			ret = bad("add_tensor");
			goto out;
		}
		n += sizes[t];
	}
	gpo_comm_shards(c, &S, &lo, &hi);
	g = malloc(n * 4);
	got = malloc(n * 4);
	par = malloc(n * 4);
	par2 = malloc(n * 4);
	if (!g || !got || !par || !par2)
		goto out;
	for (i = 0; i < n; i++)
		par[i] = rnd(seed + 1, 99999, i);
	if (gpo_optim_write(opt, "param", NULL, par, n * 4) ||
	    gpo_comm_optim_attach(c, opt)) {
		ret = bad("attach");
		goto out;
	}
	for (k = lo; k < hi; k++) {
		for (i = 0; i < n; i++)
			g[i] = rnd(seed, k, i);
		if (gpo_optim_write(opt, "grad", NULL, g, n * 4) ||
		    gpo_comm_shard_done(c, k)) {
			ret = bad("shard");
			goto out;
		}
	}
	/* a shard that is not this rank's is refused */
	if (gpo_comm_shard_done(c, hi % S == lo ? S : hi % S) != -EINVAL) {
		ret = bad("another rank's shard was taken");
		goto out;
	}
	if (gpo_comm_reduce(c)) {
		ret = bad("reduce");
		goto out;
	}
	memset(got, 0xff, n * 4);	/* poisoned: NaN unless read */
	if (gpo_optim_read(opt, "grad", NULL, got, n * 4) ||
	    gpo_optim_read(opt, "param", NULL, par2, n * 4)) {
		ret = bad("read");
		goto out;
	}
	if (memcmp(par, par2, n * 4)) {
		fprintf(stderr, "rank %d: the parameters changed\n", rank);
		fails++;
	}
	for (i = 0; i < n; i++) {
		float f = rnd(seed, 0, i), want;
		double d = rnd(seed, 0, i), abs_sum = fabs(d), tol;

		for (k = 1; k < S; k++) {
			f += rnd(seed, k, i);
			d += rnd(seed, k, i);
			abs_sum += fabs((double)rnd(seed, k, i));
		}
		want = f / (float)S;
		d /= S;
		tol = 4 * S * 0x1p-24 * abs_sum / S + 1e-30;
		if (fabs(got[i] - d) > tol || isnan(got[i])) {
			if (fails++ < 5)
				fprintf(stderr, "rank %d: element %" PRIu64 ": %.9g, float64 mean %.17g (tolerance %.3g)\n",
					rank, i, got[i], d, tol);
		}
		if (det && memcmp(&got[i], &want, 4)) {
			if (fails++ < 5)
				fprintf(stderr, "rank %d: element %" PRIu64 ": %.9g, the ordered f32 sum / S is %.9g\n",
					rank, i, got[i], want);
		}
	}
	ret = fails != 0;
	if (!rank && !ret)
		printf("ok: %" PRIu64 " elements, %u shards, deterministic=%d\n",
		       n, S, det);
out:
	MPI_Allreduce(&ret, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	gpo_optim_free(opt);
	gpo_comm_free(c);
	gpo_ctx_free(ctx);
	MPI_Finalize();
	return any;
}
