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
 * With -m (an MLP, "784x1024x1024x10@4096") or -g (the byte GPT,
 * "LAYERSxHEADSxDIMxCTX@BATCH"), training steps instead (adamw, a global
 * batch of BATCH cut into -S shards, 2 a rank by default): per step, the
 * slowest rank's wall time, the step's communication (the time the
 * training thread spent in it, plus what was in flight while it
 * computed), the part hidden behind compute, and what was left exposed;
 * for rank 0 alone (all the shards, over MPI_COMM_SELF: the baseline),
 * for all the ranks, and MPI_Allreduce of the gradient's bytes in host
 * memory (the limit); ratio: limit / communication. Then, at the end of
 * a row, the segments the last shard's backward ran in and the buckets
 * whose reduction started before it ended (overlap=1, the default: the
 * reductions overlapped with backward), and a last row of the ranks with
 * overlap=0 (backward in one piece, reduced after it) to compare.
 *
 *   mpirun -np 2 bench_comm [-d DEV] [-s SIZE] [-b BUCKET] [-r REPS]
 *   mpirun -np 2 bench_comm -d DEV [-m MLP@B] [-g GPT@B] [-S SHARDS]
 *                                  [-n STEPS] [-b BUCKET] [-r REPS]
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

/* ---- training steps ------------------------------------------------ */

struct train_row {
	double step, comm, hidden;	/* seconds a step */
	double segs, early;		/* a step, the slowest rank's */
	uint64_t bytes;			/* the flat gradient */
};

/* a training set of @n random rows (or bytes): the same on every rank */
static int write_data(const char *path, int gpt, uint64_t n, uint32_t in,
		      uint32_t classes)
{
	uint64_t xb = n * in * 4, yb = n * 4, i;
	char hdr[512];
	uint64_t hlen;
	FILE *f = fopen(path, "wb");
	int len, ok = 1;

	if (!f)
		return -EIO;
	if (gpt) {
		for (i = 0; i < n && ok; i++)
			ok = fputc((int)((val(i, 0) + 0.5f) * 255.0f), f) != EOF;
		return fclose(f) || !ok ? -EIO : 0;
	}
	len = snprintf(hdr, sizeof(hdr),
		       "{\"x\":{\"dtype\":\"F32\",\"shape\":[%llu,%u],\"data_offsets\":[0,%llu]},"
		       "\"y\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}}",
		       (unsigned long long)n, in, (unsigned long long)xb,
		       (unsigned long long)n, (unsigned long long)xb,
		       (unsigned long long)(xb + yb));
	while (len % 8)
		hdr[len++] = ' ';
	hlen = len;
	ok = fwrite(&hlen, 8, 1, f) == 1 && fwrite(hdr, 1, len, f) == (size_t)len;
	for (i = 0; i < n * in && ok; i++) {
		float x = val(i, 0);

		ok = fwrite(&x, 4, 1, f) == 1;
	}
	for (i = 0; i < n && ok; i++) {
		int32_t y = (int32_t)((val(i, 1) + 0.5f) * classes) % classes;

		ok = fwrite(&y, 4, 1, f) == 1;
	}
	return fclose(f) || !ok ? -EIO : 0;
}

/*
 * @reps rounds of @steps training steps of @model ("mlp:..." or "gpt:...")
 * over @mc: the median round's time a step, the slowest rank's, and the
 * communication the comm's statistics count over all rounds; @overlap:
 * the comm's overlap=
 */
static void run_train(struct gpo_ctx *ctx, const char *dev_spec, MPI_Comm mc,
		      const char *model, uint32_t batch, uint32_t in,
		      uint32_t classes, uint32_t gctx, uint32_t shards,
		      uint64_t bucket, int overlap, int steps, int reps,
		      struct train_row *row)
{
	int gpt = !strncmp(model, "gpt:", 4);
	struct gpo_comm_stats a, b;
	struct gpo_train_result res;
	struct gpo_dataset *ds;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	struct gpo_model *m;
	struct gpo_train *t;
	struct gpo_comm *c;
	double tr[MAXREPS], v[5], mx[5];
	char path[96], opts[128];
	uint64_t n;
	int k, i, ret;

	snprintf(opts, sizeof(opts), "shards=%u bucket_bytes=%llu overlap=%d",
		 shards, (unsigned long long)bucket, overlap);
	ret = gpo_comm_new(&mc, opts, &c);
	if (ret)
		die("gpo_comm_new", ret);
	ret = gpo_comm_device(c, ctx, dev_spec, &dev);
	if (ret)
		die("device", ret);
	/* 4 batches of rows (or windows) and the held-out tenth */
	n = gpt ? ((uint64_t)4 * batch * gctx + 1) * 10 / 9 + 1 :
		  (uint64_t)4 * batch;
	snprintf(path, sizeof(path), "/tmp/gpuopt-bench-comm-%d.%s",
		 (int)getpid(), gpt ? "bin" : "safetensors");
	ret = write_data(path, gpt, n, in, classes);
	if (ret)
		die(path, ret);
	ret = gpo_dataset_open(path, gpt ? GPO_DATASET_BYTES : 0, &ds);
	unlink(path);
	if (ret)
		die("dataset", ret);
	ret = gpo_optim_new(dev, GPO_ADAMW, &opt);
	if (!ret)
		ret = gpo_model_new(opt, model, gpt ? "seed=1" :
					"activation=relu seed=1", &m);
	if (!ret)
		ret = gpo_optim_configure(opt, -1, "lr=0.0003 weight_decay=0.01");
	snprintf(opts, sizeof(opts), "batch_size=%u shuffle=0", batch);
	if (!ret)
		ret = gpo_train_new(m, ds, opts, &t);
	if (!ret)
		ret = gpo_comm_train_attach(c, t);
	if (ret)
		die(model, ret);
	/* warm-up: pipelines built, buffers in the pool */
	for (i = 0; i < 2 && !ret; i++)
		ret = gpo_train_step(t, &res);
	if (ret)
		die("a warm-up step", ret);
	gpo_comm_stats(c, &a);
	for (k = 0; k < reps; k++) {
		double t0;

		MPI_Barrier(mc);
		t0 = now_s();
		for (i = 0; i < steps && !ret; i++)
			ret = gpo_train_step(t, &res);
		if (ret)
			die("a step", ret);
		t0 = (now_s() - t0) / steps;
		MPI_Allreduce(&t0, &tr[k], 1, MPI_DOUBLE, MPI_MAX, mc);
	}
	gpo_comm_stats(c, &b);
	v[0] = (double)(b.comm_ns - a.comm_ns) / 1e9 / (reps * steps);
	v[1] = (double)(b.hidden_ns - a.hidden_ns) / 1e9 / (reps * steps);
	v[2] = b.reductions ? (double)b.bytes / b.reductions : 0;
	v[3] = (double)(b.segments - a.segments) / (reps * steps);
	v[4] = (double)(b.early_buckets - a.early_buckets) / (reps * steps);
	MPI_Allreduce(v, mx, 5, MPI_DOUBLE, MPI_MAX, mc);
	row->step = median(tr, reps);
	row->comm = mx[0];
	row->hidden = mx[1];
	row->bytes = (uint64_t)mx[2];
	row->segs = mx[3];
	row->early = mx[4];
	gpo_train_free(t);
	gpo_model_free(m);
	gpo_optim_free(opt);
	gpo_dataset_free(ds);
	gpo_comm_free(c);
}

static void print_train_row(const char *what, const struct train_row *r,
			    double lim)
{
	printf("%-28s %10.3f %10.3f %10.3f %10.3f %8.2f %8.1f %8.1f\n", what,
	       r->step * 1e3, r->comm * 1e3, r->hidden * 1e3,
	       (r->comm - r->hidden) * 1e3, lim / r->comm, r->segs, r->early);
}

/* "mlp:..."/"gpt:..." @spec "...@B": a table of 1 rank, N ranks, the limit */
static void bench_train(struct gpo_ctx *ctx, const char *dev, int gpt,
			const char *arg, uint32_t shards, uint64_t bucket,
			int steps, int reps)
{
	char spec[128], model[160], *at;
	unsigned int l, h, d, gctx = 0, batch;
	uint32_t in = 0, classes = 0;
	struct train_row one = { 0 }, all, off;
	double lim;

	snprintf(spec, sizeof(spec), "%s", arg);
	at = strchr(spec, '@');
	if (!at || sscanf(at + 1, "%u", &batch) != 1 || !batch)
		die("-m/-g SPEC@BATCH", -EINVAL);
	*at = 0;
	if (gpt) {
		if (sscanf(spec, "%ux%ux%ux%u", &l, &h, &d, &gctx) != 4)
			die("-g LAYERSxHEADSxDIMxCTX@BATCH", -EINVAL);
		snprintf(model, sizeof(model),
			 "gpt:layers=%u,heads=%u,dim=%u,ctx=%u", l, h, d, gctx);
	} else {
		const char *last = strrchr(spec, 'x');

		in = (uint32_t)strtoul(spec, NULL, 10);
		classes = last ? (uint32_t)strtoul(last + 1, NULL, 10) : 0;
		if (!in || !classes)
			die("-m INxHIDDEN...xCLASSES@BATCH", -EINVAL);
		snprintf(model, sizeof(model), "mlp:%s", spec);
	}
	/* the baseline: rank 0 alone runs all the shards */
	if (!rank)
		run_train(ctx, dev, MPI_COMM_SELF, model, batch, in, classes,
			  gctx, shards, bucket, 1, steps, reps, &one);
	MPI_Barrier(MPI_COMM_WORLD);
	run_train(ctx, dev, MPI_COMM_WORLD, model, batch, in, classes, gctx,
		  shards, bucket, 1, steps, reps, &all);
	run_train(ctx, dev, MPI_COMM_WORLD, model, batch, in, classes, gctx,
		  shards, bucket, 0, steps, reps, &off);
	lim = run_limit(all.bytes / 4, reps);
	if (rank)
		return;
	printf("# bench_comm: training %s@%u, %.2f MB of f32 gradient, %u shards, buckets of %.0f KiB, device %s, median of %d rounds of %d steps\n",
	       model, batch, all.bytes / 1e6, shards, bucket / 1024.0, dev,
	       reps, steps);
	printf("%-28s %10s %10s %10s %10s %8s %8s %8s\n", "what (ms a step)",
	       "step", "comm", "hidden", "exposed", "ratio", "segs", "early");
	printf("%-28s %10s %10.3f %10s %10s %8s %8s %8s\n",
	       "limit: MPI_Allreduce host", "-", lim * 1e3, "-", "-", "1.00",
	       "-", "-");
	print_train_row("1 rank (all shards)", &one, lim);
	{
		char what[40];

		snprintf(what, sizeof(what), "%d ranks", nranks);
		print_train_row(what, &all, lim);
		snprintf(what, sizeof(what), "%d ranks overlap=0", nranks);
		print_train_row(what, &off, lim);
	}
	printf("# %d ranks: %.2fx the step rate of 1; %.0f%% of the communication hidden behind compute\n",
	       nranks, one.step / all.step,
	       all.comm > 0 ? 100.0 * all.hidden / all.comm : 0.0);
	printf("# overlap with backward: %.3f ms a step exposed against %.3f with overlap=0 (%.1f of the buckets reduced before backward ended), the step %.2fx as fast\n",
	       (all.comm - all.hidden) * 1e3, (off.comm - off.hidden) * 1e3,
	       all.early, off.step / all.step);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *dev = "cpu", *mlp = NULL, *gptspec = NULL;
	uint32_t shards = 0;
	int steps = 5;
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
	while ((o = getopt(argc, argv, "d:s:b:r:m:g:S:n:")) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 'm': mlp = optarg; break;
		case 'g': gptspec = optarg; break;
		case 'S': shards = (uint32_t)atoi(optarg); break;
		case 'n': steps = atoi(optarg); break;
		case 's': size = parse_size(optarg); break;
		case 'b': bucket = parse_size(optarg); break;
		case 'r': reps = atoi(optarg); break;
		default:
			if (!rank)
				fprintf(stderr, "usage: mpirun -np N bench_comm [-d DEV] [-s SIZE] [-b BUCKET] [-r REPS]\n"
					"       mpirun -np N bench_comm [-d DEV] [-m MLP@BATCH] [-g LxHxDxCTX@BATCH] [-S SHARDS] [-n STEPS] [-b BUCKET] [-r REPS]\n");
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
	if (mlp || gptspec) {
		if (!shards)
			shards = 2 * (uint32_t)nranks;
		if (steps < 1 || steps > 1000 || shards % nranks)
			die("bad -n or -S (a multiple of the ranks)", -EINVAL);
		if (mlp)
			bench_train(ctx, dev, 0, mlp, shards, bucket, steps,
				    reps);
		if (gptspec)
			bench_train(ctx, dev, 1, gptspec, shards, bucket,
				    steps, reps);
		gpo_ctx_free(ctx);
		MPI_Finalize();
		return 0;
	}
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
