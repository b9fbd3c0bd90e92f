// SPDX-License-Identifier: MIT
/*
 * bench/comm.c - the bucketed host-staged gradient reduction of
 * libgpuopt-mpi against MPI_Allreduce of the same bytes in host memory
 *
 * Run under mpirun (2 ranks here). Each rank holds an optimizer of SIZE
 * bytes of parameters on its device (-d; a comma list: rank r takes item
 * r) with a random gradient; one shard a rank. A figure is the median over
 * -r runs (after a warm-up) of the slowest rank's time for
 *   staged: gpo_comm_reduce(): device -> pinned host (bucket by bucket),
 *           all-to-all, the ordered f32 sum, all-gather, host -> device,
 *           pipelined, deterministic=1 (and, a second row, deterministic=0:
 *           MPI_Iallreduce of each bucket)
 *   limit:  MPI_Allreduce(MPI_SUM) of SIZE bytes of floats in host memory
 * as bytes / time (the algorithm bandwidth), and figure / limit. The
 * reduced gradient is checked against the mean computed on the host.
 *
 *   mpirun -np 2 bench_comm [-d DEV] [-s SIZE] [-b BUCKET] [-r REPS]
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mpi.h>
#include <gpuopt.h>
#include <gpuopt/comm.h>
#include "bench_i.h"

#define MAXREPS 31

static int rank, nranks;

static void die(const char *what, int ret)
{
	fprintf(stderr, "bench_comm: rank %d: %s: %s (%d)\n", rank, what,
		gpo_errmsg(), ret);
	MPI_Abort(MPI_COMM_WORLD, 1);
}

/* the slowest rank's time */
static double slowest(double t)
{
	double m;

	MPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return m;
}

static float val(uint64_t i, int r)
{
	uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(r + 7) << 40;

	z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
	return (float)((z >> 40) * 0x1p-24) - 0.5f;
}

static double run_staged(struct gpo_ctx *ctx, const char *dev_spec,
			 uint64_t n, uint64_t bucket, int det, int reps)
{
	char opts[128];
	struct gpo_comm *c;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	uint64_t shape[1] = { n }, i;
	double t[MAXREPS], err = 0;
	float *g, *back;
	uint32_t S, lo, hi;
	int k, ret;

	snprintf(opts, sizeof(opts), "deterministic=%d bucket_bytes=%llu", det,
		 (unsigned long long)bucket);
	ret = gpo_comm_new(NULL, opts, &c);
	if (ret)
		die("gpo_comm_new", ret);
	ret = gpo_comm_device(c, ctx, dev_spec, &dev);
	if (ret)
		die("device", ret);
	ret = gpo_optim_new(dev, GPO_SGD, &opt);
	if (!ret)
		ret = gpo_optim_add_tensor(opt, "w", 1, shape, 0);
	if (ret > 0)
		ret = 0;
	if (!ret)
		ret = gpo_comm_optim_attach(c, opt);
	if (ret)
		die("optimizer", ret);
	gpo_comm_shards(c, &S, &lo, &hi);
	g = malloc(n * 4);
	back = malloc(n * 4);
	if (!g || !back)
		die("malloc", -ENOMEM);
	for (k = -1; k < reps; k++) {
		double t0;

		for (i = 0; i < n; i++)
			g[i] = val(i, rank);
		ret = gpo_optim_write(opt, "grad", NULL, g, n * 4);
		if (ret)
			die("write", ret);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_s();
		ret = gpo_comm_shard_done(c, lo);
		if (!ret)
			ret = gpo_comm_reduce(c);
		if (ret)
			die("reduce", ret);
		t0 = slowest(now_s() - t0);
		if (k >= 0)
			t[k] = t0;
	}
	/* the mean over the ranks' shards, as the host computes it */
	memset(back, 0xff, n * 4);
	ret = gpo_optim_read(opt, "grad", NULL, back, n * 4);
	if (ret)
		die("read", ret);
	for (i = 0; i < n; i++) {
		double want = 0;
		int r;

		for (r = 0; r < nranks; r++)
			want += val(i, r);
		want /= nranks;
		if (fabs(back[i] - want) > 1e-6 * (1 + fabs(want)))
			err++;
	}
	if (err)
		die("the reduced gradient is wrong", (int)err);
	free(g);
	free(back);
	gpo_optim_free(opt);
	gpo_comm_free(c);
	return median(t, reps);
}

static double run_limit(uint64_t n, int reps)
{
	double t[MAXREPS];
	float *a = malloc(n * 4);
	uint64_t i;
	int k;

	if (!a)
		die("malloc", -ENOMEM);
	for (k = -1; k < reps; k++) {
		double t0;

		for (i = 0; i < n; i++)
			a[i] = val(i, rank);
		MPI_Barrier(MPI_COMM_WORLD);
		t0 = now_s();
		MPI_Allreduce(MPI_IN_PLACE, a, (int)n, MPI_FLOAT, MPI_SUM,
			      MPI_COMM_WORLD);
		t0 = slowest(now_s() - t0);
		if (k >= 0)
			t[k] = t0;
	}
	free(a);
	return median(t, reps);
}

int main(int argc, char **argv)
{
	const char *dev = "cpu";
	uint64_t size = 64ull << 20, bucket = 4ull << 20, n;
	struct gpo_ctx *ctx;
	double lim, st[2];
	int reps = 5, o, d, ret;

	{
		/* the comm's progress thread tests requests (SERIALIZED) */
		int provided;

		MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
	}
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &nranks);
	while ((o = getopt(argc, argv, "d:s:b:r:")) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 's': size = parse_size(optarg); break;
		case 'b': bucket = parse_size(optarg); break;
		case 'r': reps = atoi(optarg); break;
		default:
			if (!rank)
				fprintf(stderr, "usage: mpirun -np N bench_comm [-d DEV] [-s SIZE] [-b BUCKET] [-r REPS]\n");
			MPI_Finalize();
			return 2;
		}
	}
	if (reps < 1 || reps > MAXREPS || size < 4096 || size > (1ull << 31) - 4096)
		die("bad -r or -s", -EINVAL);
	n = size / 4;
	ret = gpo_ctx_new(&ctx, 0);
	if (ret)
		die("context", ret);
	for (d = 1; d >= 0; d--)
		st[d] = run_staged(ctx, dev, n, bucket, d, reps);
	lim = run_limit(n, reps);
	if (!rank) {
		printf("# bench_comm: %d ranks, %.0f MiB of f32 gradient, buckets of %.0f KiB, device %s, median of %d\n",
		       nranks, size / 1048576.0, bucket / 1024.0, dev, reps);
		printf("%-34s %10s %12s %10s\n", "what", "ms", "GB/s", "ratio");
		printf("%-34s %10.2f %12.3f %10s\n", "limit: MPI_Allreduce host",
		       lim * 1e3, size / lim / 1e9, "1.00");
		printf("%-34s %10.2f %12.3f %10.2f\n", "staged deterministic=1",
		       st[1] * 1e3, size / st[1] / 1e9, lim / st[1]);
		printf("%-34s %10.2f %12.3f %10.2f\n", "staged deterministic=0",
		       st[0] * 1e3, size / st[0] / 1e9, lim / st[0]);
	}
	gpo_ctx_free(ctx);
	MPI_Finalize();
	return 0;
}
