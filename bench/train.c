// SPDX-License-Identifier: MIT
/*
 * bench/train.c - the tensor engine's matrix product and training step
 *
 * For each device: SGEMM (C = A B, f32, square) through the public graph
 * API at each size, in TFLOP/s, against the limit measured in the same
 * run (cuBLAS through torch with TF32 off: the peer file's torch_sgemm);
 * HGEMM (A and B f16 inputs, C f32: tensor cores through Vulkan's
 * cooperative matrices where the device has them) against torch's fp16
 * matmul (torch_hgemm), the case naming the kernel that ran;
 * then one training step (forward, cross-entropy, backward, AdamW) of
 * each MLP on a synthetic safetensors dataset written to /tmp, wall time
 * per step, beside torch's eager step and its step captured in a CUDA
 * graph (bench/train_torch.py writes the peer file); then one training
 * step of each byte-level GPT on a file of random bytes, in tokens per
 * second, beside the same peers; and single products of any shape
 * (-M), in TFLOP/s beside torch.matmul of the same shape, with the
 * kernels that ran and their device time.
 *
 * Times are on the wall clock over many queued runs (steps) and the one
 * read (result) that waits for them, so that submission and completion
 * are counted; after WARMUP_S of warm-up; the median of -r rounds.
 *
 *   bench_train [-d DEV[,DEV..]] [-s SIZES] [-H SIZES] [-m MLPS]
 *               [-g GPTS] [-M PRODUCTS] [-A ATTNS] [-R COLSUMS] [-r ROUNDS]
 *               [-p PEERFILE] [-q]
 *   -s  SGEMM sizes, e.g. 1024,4096,8192 (none: -s 0)
 *   -H  HGEMM sizes, e.g. 4096,8192 (none: -H 0, the default)
 *   -m  MLPs as SPEC@BATCH, e.g. 784x256x10@128,784x1024x1024x10@4096
 *       (none: -m 0)
 *   -g  GPTs as LAYERSxHEADSxDIMxCTX@BATCH, e.g. 6x6x384x256@64
 *       (none: -g 0, the default)
 *       An MLP or GPT ending ":f16" trains with matmul=f16 (products of
 *       binary16 operands: tensor cores where the device has them), its
 *       peer torch under autocast to bfloat16 (torch_amp, torch_amp_graph);
 *       ":f16p" also with f16 parameters (an f32 master copy, dynamic
 *       loss scaling), ":bf16p" with bf16 ones (master copy)
 *   -M  products C = op(A) op(B) as MxNxK[ta][tb][@BATCH][:f16]: C is M x N,
 *       the sum K long; "ta": A is stored K x M and used transposed,
 *       "tb": B is stored N x K; @BATCH: that many products of 3-d
 *       operands in one call; ":f16": f16 operands (the tensor cores
 *       where the device has them), ":r16": f32 ones rounded to f16 by
 *       the product (matmul_f16, as the MLP's and GPT's f16 modes), else
 *       f32. E.g. 16384x384x1152tb (a layer's input
 *       gradient), 384x1152x16384ta (its weight's), 256x256x64tb@384
 *       (attention's scores over 6 heads of 64 sequences). None: -M 0,
 *       the default. Each line's peer is torch.matmul of the same shape
 *       (train_torch.py --products), keyed "mm:SPEC"; after it, each
 *       kernel the product launched, its launches and device time (one
 *       profiled run, gpo_graph_profile) and the TFLOP/s of that time.
 *   -A  causal self-attention as BHxTxHD, e.g. 384x256x64 (none: -A 0,
 *       the default): the device time of forward and backward (dq, dk,
 *       dv), by gpo_causal_attention() and by matmul, causal_softmax and
 *       matmul, from gpo_graph_profile(); its peer is torch's causal
 *       scaled_dot_product_attention (train_torch.py --attns), keyed
 *       "attn:SPEC"
 *   -R  column sums of a ROWSxCOLS matrix, e.g. 16384x1536 (a bias's
 *       gradient; none: -R 0, the default): the device time of the sum's
 *       launches (the best of ROUNDS profiles) and the GB/s of the
 *       matrix read; its peer is torch's x.sum(0) (train_torch.py
 *       --colsums), keyed "colsum:SPEC"
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpuopt.h"
#include "bench_i.h"
#include "core/dtype_i.h"

#define WARMUP_S	0.3
#define ROUND_S		0.25	/* the least time a round of runs takes */
/* products take a millisecond or less: shorter, so that many fit a run */
#define PROD_WARMUP_S	0.15
#define PROD_ROUND_S	0.1
#define MAX_PEERS	256

struct peer {
	char label[64];
	char key[64];
	double ms;
};

static struct peer peers[MAX_PEERS];
static int npeers;
static int rounds = 5;
static int quiet;

/*
 * Peer file lines: "label key ms", e.g. "torch_sgemm sgemm:4096 2.66" or
 * "torch_graph mlp:784x256x10@128 0.111"; '#' starts a comment.
 */
static void load_peers(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];

	if (!f) {
		fprintf(stderr, "bench_train: no peer file %s\n", path);
		return;
	}
	while (fgets(line, sizeof(line), f) && npeers < MAX_PEERS) {
		struct peer *p = &peers[npeers];

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%63s %63s %lf", p->label, p->key, &p->ms) == 3)
			npeers++;
	}
	fclose(f);
}

/* the peer @label for @key (NULL label: the fastest of any label) */
static const struct peer *find_peer(const char *label, const char *key)
{
	const struct peer *best = NULL;
	int i;

	for (i = 0; i < npeers; i++)
		if (!strcmp(peers[i].key, key) &&
		    (!label || !strcmp(peers[i].label, label)) &&
		    (!best || peers[i].ms < best->ms))
			best = &peers[i];
	return best;
}

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* uniform in [-0.5, 0.5): never time on zeros */
static void fill_random(float *v, uint64_t n, uint64_t seed)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		v[i] = (float)((rng_next(&seed) >> 40) * (1.0 / 16777216.0) -
			       0.5);
}

static void print_header(void)
{
	printf("%-10s %-22s %6s %10s %10s %9s %9s %7s  %s\n", "device",
	       "case", "size", "wall_ms", "us/step", "TFLOP/s", "limit",
	       "ratio", "peer");
}

/* ---- SGEMM -------------------------------------------------------- */

#define SEED_A	0x9e3779b97f4a7c15ull
#define SEED_B	0x2545f4914f6cdd1dull

/*
 * a few elements of C = A B (as bench_gemm fills them) against double;
 * @half: of the operands rounded to f16, as the kernels multiply them
 */
static int spot_check(const float *c, uint32_t n, const char *id, int half)
{
	const uint64_t numel = (uint64_t)n * n;
	float *av = malloc(numel * 4), *bv = malloc(numel * 4);
	int i, ret = 0;

	if (!av || !bv) {
		ret = -ENOMEM;
		goto out;
	}
	fill_random(av, numel, SEED_A);
	fill_random(bv, numel, SEED_B);
	for (i = 0; i < 8 && !ret; i++) {
		uint32_t row = (uint32_t)((i * 2654435761u) % n);
		uint32_t col = (uint32_t)((i * 40503u + 7) % n), k;
		double ref = 0, mag = 0;

		for (k = 0; k < n; k++) {
			float x = av[(uint64_t)row * n + k];
			float y = bv[(uint64_t)k * n + col];
			double v;

			if (half) {
				x = gpo__f16_to_f32(gpo__f32_to_f16(x));
				y = gpo__f16_to_f32(gpo__f32_to_f16(y));
			}
			v = (double)x * y;
			ref += v;
			mag += fabs(v);
		}
		if (fabs(c[(uint64_t)row * n + col] - ref) > 1e-5 * mag) {
			fprintf(stderr, "%s %u on %s: C[%u][%u] = %g, not %g\n",
				half ? "hgemm" : "sgemm", n, id, row, col,
				c[(uint64_t)row * n + col], ref);
			ret = -EIO;
		}
	}
out:
	free(av);
	free(bv);
	return ret;
}


/* @host's floats rounded to f16 into @h (the operands of an hgemm) */
static void to_f16(const float *host, uint16_t *h, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		h[i] = gpo__f32_to_f16(host[i]);
}

/*
 * The kernels one profiled run of @g launched, as "a+b" into @buf (the
 * hgemm row says whether the tensor cores ran)
 */
static void kernels_of(struct gpo_graph *g, char *buf, size_t len)
{
	struct gpo_op_time t[8];
	int n = gpo_graph_profile(g, GPO_RUN_FORWARD, t, 8), i;
	size_t at = 0;

	snprintf(buf, len, "?");
	for (i = 0; i < n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s",
				       i ? "+" : "", t[i].op);
}

/*
 * C = A B at n x n, f32 operands (@half 0: sgemm) or f16 ones (hgemm):
 * rounds of R runs queued back to back and one read of C, R chosen from
 * the warm-up so that a round takes about ROUND_S.
 */
static int bench_gemm(struct gpo_device *dev, const char *id, uint32_t n,
		      int half)
{
	const uint64_t shape[2] = { n, n };
	const uint64_t numel = (uint64_t)n * n;
	const enum gpo_dtype dt = half ? GPO_F16 : GPO_F32;
	const char *what = half ? "hgemm" : "sgemm";
	double flops = 2.0 * n * n * (double)n, per, t0, t;
	double *round_t = calloc(rounds, sizeof(double));
	struct gpo_tensor *a, *b, *c;
	struct gpo_graph *g = NULL;
	float *host = malloc(numel * sizeof(float));
	uint16_t *h = half ? malloc(numel * sizeof(uint16_t)) : NULL;
	const struct peer *p;
	char key[64], peer[96] = "", limit[16] = "-", ratio[16] = "-";
	char label[64], kern[48] = "";
	int ret = -ENOMEM, i, r, reps, warm = 0;

	if (!round_t || !host || (half && !h))
		goto out;
	ret = gpo_graph_new(dev, &g);
	if (ret)
		goto out;
	a = gpo_tensor_input(g, "a", dt, 2, shape);
	b = gpo_tensor_input(g, "b", dt, 2, shape);
	c = gpo_matmul(g, a, b, 0);
	ret = gpo_graph_status(g);
	if (ret)
		goto out;
	fill_random(host, numel, SEED_A);
	if (half) {
		to_f16(host, h, numel);
		ret = gpo_tensor_write(a, h, numel * 2);
	} else {
		ret = gpo_tensor_write(a, host, numel * 4);
	}
	if (!ret) {
		fill_random(host, numel, SEED_B);
		if (half) {
			to_f16(host, h, numel);
			ret = gpo_tensor_write(b, h, numel * 2);
		} else {
			ret = gpo_tensor_write(b, host, numel * 4);
		}
	}
	if (ret)
		goto out;
	t0 = now_s();
	do {
		ret = gpo_graph_run(g, GPO_RUN_FORWARD);
		if (!ret)
			ret = gpo_tensor_read(c, host, numel * 4);
		if (ret)
			goto out;
		warm++;
	} while (now_s() - t0 < WARMUP_S || warm < 2);
	/* one run's time, the read included: too high, which is safe */
	per = (now_s() - t0) / warm;
	reps = (int)(ROUND_S / per) + 1;
	for (r = 0; r < rounds; r++) {
		t0 = now_s();
		for (i = 0; i < reps && !ret; i++)
			ret = gpo_graph_run(g, GPO_RUN_FORWARD);
		if (!ret)
			ret = gpo_tensor_read(c, host, numel * 4);
		if (ret)
			goto out;
		round_t[r] = (now_s() - t0) / reps;
	}
	t = median(round_t, rounds);
	/*
	 * never a figure for a wrong result: spot checks against double.
	 * GPO_BENCH_ABLATION=1 (a kernel variant with a part cut out, to
	 * see what that part costs) prints the time as "ablation", no ratio.
	 */
	ret = spot_check(host, n, id, half);
	if (ret && getenv("GPO_BENCH_ABLATION")) {
		printf("%-10s %-22s %6u %10.3f %10s %9.2f %9s %7s  %s\n", id,
		       what, n, t * 1e3, "-", flops / t / 1e12, "-", "-",
		       "ablation: result wrong by design");
		ret = 0;
		goto out;
	}
	if (ret)
		goto out;
	snprintf(key, sizeof(key), "%s:%u", what, n);
	p = find_peer(half ? "torch_hgemm" : "torch_sgemm", key);
	if (p) {
		double lim = flops / (p->ms * 1e-3);

		snprintf(limit, sizeof(limit), "%.2f", lim / 1e12);
		snprintf(ratio, sizeof(ratio), "%.1f%%",
			 100.0 * (flops / t) / lim);
		snprintf(peer, sizeof(peer), "%s %.3f ms (%.2fx)", p->label,
			 p->ms, p->ms / (t * 1e3));
	}
	if (half)
		kernels_of(g, kern, sizeof(kern));
	snprintf(label, sizeof(label), "%s%s%s", what, half ? " " : "", kern);
	printf("%-10s %-22s %6u %10.3f %10s %9.2f %9s %7s  %s\n", id, label,
	       n, t * 1e3, "-", flops / t / 1e12, limit, ratio, peer);
	fflush(stdout);
out:
	if (ret)
		fprintf(stderr, "%s %u on %s: %s\n", what, n, id, gpo_errmsg());
	gpo_graph_free(g);
	free(host);
	free(h);
	free(round_t);
	return ret;
}

/* ---- single products ---------------------------------------------- */

struct mm_spec {
	uint32_t m, n, k, batch;
	unsigned int flags;	/* GPO_MATMUL_TA, GPO_MATMUL_TB */
	int half;		/* 1 ":f16": f16 operands (hgemm); 2 ":r16":
				 * f32 ones rounded (matmul_f16) */
};

/* "MxNxK[ta][tb][@BATCH][:f16]" */
static int parse_product(const char *spec, struct mm_spec *p)
{
	unsigned int m, n, k;
	const char *s;
	int used = 0;
	size_t len = strlen(spec);

	p->half = len > 4 && !strcmp(spec + len - 4, ":f16") ? 1 :
		  len > 4 && !strcmp(spec + len - 4, ":r16") ? 2 : 0;

	if (sscanf(spec, "%ux%ux%u%n", &m, &n, &k, &used) != 3 || !m || !n ||
	    !k)
		return -EINVAL;
	p->m = m;
	p->n = n;
	p->k = k;
	p->batch = 1;
	p->flags = 0;
	for (s = spec + used; *s && *s != '@' && *s != ':'; s += 2) {
		if (!strncmp(s, "ta", 2) && !(p->flags & GPO_MATMUL_TA))
			p->flags |= GPO_MATMUL_TA;
		else if (!strncmp(s, "tb", 2) && !(p->flags & GPO_MATMUL_TB))
			p->flags |= GPO_MATMUL_TB;
		else
			return -EINVAL;
	}
	if (*s == '@') {
		char *end;
		unsigned long b = strtoul(s + 1, &end, 10);

		if (!b || (*end && *end != ':') || b > 65535)
			return -EINVAL;
		p->batch = (uint32_t)b;
		s = end;
	}
	if (*s && (!p->half || strlen(s) != 4))
		return -EINVAL;
	return 0;
}

/* @x's @n floats rounded to f16 values in place */
static void round_f16(float *x, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		x[i] = gpo__f16_to_f32(gpo__f32_to_f16(x[i]));
}

/* @x's @n floats rounded to f16 in place and written so to @t */
static int write_f16(struct gpo_tensor *t, float *x, uint64_t n)
{
	uint16_t *h = malloc(n * sizeof(*h));
	uint64_t i;
	int ret;

	if (!h)
		return -ENOMEM;
	to_f16(x, h, n);
	for (i = 0; i < n; i++)
		x[i] = gpo__f16_to_f32(h[i]);
	ret = gpo_tensor_write(t, h, n * sizeof(*h));
	free(h);
	return ret;
}

/* op(A)[z][i][p] and op(B)[z][p][j] of @p as stored in @a and @b */
static double mm_at(const float *a, const struct mm_spec *p, int isb,
		    uint64_t z, uint64_t r, uint64_t c)
{
	int t = p->flags & (isb ? GPO_MATMUL_TB : GPO_MATMUL_TA);
	uint64_t rows = isb ? p->k : p->m, cols = isb ? p->n : p->k;

	return t ? a[(z * cols + c) * rows + r] : a[(z * rows + r) * cols + c];
}

/* a few elements of C against double, as spot_check() */
static int mm_check(const float *a, const float *b, const float *c,
		    const struct mm_spec *p, const char *spec, const char *id)
{
	int i;

	for (i = 0; i < 8; i++) {
		uint64_t z = (i * 2246822519u) % p->batch;
		uint64_t row = (i * 2654435761u) % p->m;
		uint64_t col = (i * 40503u + 7) % p->n, k;
		double ref = 0, mag = 0, got;

		for (k = 0; k < p->k; k++) {
			double v = mm_at(a, p, 0, z, row, k) *
				   mm_at(b, p, 1, z, k, col);

			ref += v;
			mag += fabs(v);
		}
		got = c[(z * p->m + row) * p->n + col];
		if (!(fabs(got - ref) <= 1e-5 * mag)) {
			fprintf(stderr, "product %s on %s: C[%llu][%llu][%llu] = %g, not %g\n",
				spec, id, (unsigned long long)z,
				(unsigned long long)row,
				(unsigned long long)col, got, ref);
			return -EIO;
		}
	}
	return 0;
}

/*
 * One product: rounds of R runs queued and one read of a one-element
 * tensor of the same graph (reads wait for the queued runs), so that
 * C's size does not weigh on the time; then C read and spot-checked, and
 * one profiled run for the kernels' names and device time.
 */
static int bench_product(struct gpo_device *dev, const char *id,
			 const char *spec)
{
	struct mm_spec p;
	uint64_t as[3], bs[3], one[1] = { 1 };
	uint64_t na, nb, nc, total = 0;
	double *round_t = calloc(rounds, sizeof(double));
	struct gpo_op_time prof[8];
	struct gpo_tensor *a, *b, *c, *s;
	struct gpo_graph *g = NULL;
	float *ha = NULL, *hb = NULL, *hc = NULL, sv = 0;
	const struct peer *pr;
	double flops, per, t0, t;
	char key[96], peer[96] = "-", kern[160] = "", *kp = kern;
	char limit[16] = "-", ratio[16] = "-", name[64];
	int ret = -EINVAL, i, r, reps, warm = 0, nd, k;

	if (!round_t)
		goto out;
	if (parse_product(spec, &p)) {
		fprintf(stderr, "bench_train: bad product %s\n", spec);
		free(round_t);
		return -EINVAL;
	}
	nd = p.batch > 1 ? 3 : 2;
	as[0] = bs[0] = p.batch;
	as[nd - 2] = p.flags & GPO_MATMUL_TA ? p.k : p.m;
	as[nd - 1] = p.flags & GPO_MATMUL_TA ? p.m : p.k;
	bs[nd - 2] = p.flags & GPO_MATMUL_TB ? p.n : p.k;
	bs[nd - 1] = p.flags & GPO_MATMUL_TB ? p.k : p.n;
	na = (uint64_t)p.batch * p.m * p.k;
	nb = (uint64_t)p.batch * p.k * p.n;
	nc = (uint64_t)p.batch * p.m * p.n;
	flops = 2.0 * p.batch * p.m * (double)p.n * p.k;
	ret = -ENOMEM;
	ha = malloc(na * 4);
	hb = malloc(nb * 4);
	hc = malloc(nc * 4);
	if (!ha || !hb || !hc)
		goto out;
	ret = gpo_graph_new(dev, &g);
	if (ret)
		goto out;
	if (p.half == 2) {
		ret = gpo_graph_set_matmul_f16(g, 1);
		if (ret)
			goto out;
	}
	a = gpo_tensor_input(g, "a", p.half == 1 ? GPO_F16 : GPO_F32, nd, as);
	b = gpo_tensor_input(g, "b", p.half == 1 ? GPO_F16 : GPO_F32, nd, bs);
	s = gpo_tensor_input(g, "sync", GPO_F32, 1, one);
	c = gpo_matmul(g, a, b, p.flags);
	ret = gpo_graph_status(g);
	if (ret)
		goto out;
	fill_random(ha, na, SEED_A);
	fill_random(hb, nb, SEED_B);
	if (p.half == 1) {
		/* the reference (mm_check) takes the rounded values */
		ret = write_f16(a, ha, na);
		if (!ret)
			ret = write_f16(b, hb, nb);
	} else {
		if (p.half == 2) {
			/* written as they are, rounded by the product */
			round_f16(ha, na);
			round_f16(hb, nb);
		}
		ret = gpo_tensor_write(a, ha, na * 4);
		if (!ret)
			ret = gpo_tensor_write(b, hb, nb * 4);
	}
	if (!ret)
		ret = gpo_tensor_write(s, &sv, 4);
	if (ret)
		goto out;
	t0 = now_s();
	do {
		ret = gpo_graph_run(g, GPO_RUN_FORWARD);
		if (!ret)
			ret = gpo_tensor_read(s, &sv, 4);
		if (ret)
			goto out;
		warm++;
	} while (now_s() - t0 < PROD_WARMUP_S || warm < 2);
	per = (now_s() - t0) / warm;
	reps = (int)(PROD_ROUND_S / per) + 1;
	for (r = 0; r < rounds; r++) {
		t0 = now_s();
		for (i = 0; i < reps && !ret; i++)
			ret = gpo_graph_run(g, GPO_RUN_FORWARD);
		if (!ret)
			ret = gpo_tensor_read(s, &sv, 4);
		if (ret)
			goto out;
		round_t[r] = (now_s() - t0) / reps;
	}
	t = median(round_t, rounds);
	ret = gpo_tensor_read(c, hc, nc * 4);
	if (!ret)
		ret = mm_check(ha, hb, hc, &p, spec, id);
	if (ret)
		goto out;
	k = gpo_graph_profile(g, GPO_RUN_FORWARD, prof, 8);
	if (k < 0) {
		ret = k;
		goto out;
	}
	for (i = 0; i < k; i++)
		total += prof[i].ns;
	for (i = 0; i < k; i++)
		kp += snprintf(kp, kern + sizeof(kern) - kp, " %s %llux %.1fus",
			       prof[i].op, (unsigned long long)prof[i].launches,
			       prof[i].ns / 1e3);
	snprintf(key, sizeof(key), "mm:%s", spec);
	pr = find_peer("torch_mm", key);
	if (pr) {
		double lim = flops / (pr->ms * 1e-3);

		snprintf(limit, sizeof(limit), "%.2f", lim / 1e12);
		snprintf(ratio, sizeof(ratio), "%.1f%%",
			 100.0 * (flops / t) / lim);
		snprintf(peer, sizeof(peer), "%s %.1f us", pr->label,
			 pr->ms * 1e3);
	}
	snprintf(name, sizeof(name), "mm%s", spec);
	/* us/step: the profiled run's device time; TFLOP/s on the wall */
	printf("%-10s %-22s %6u %10.4f %10.1f %9.2f %9s %7s  %s |%s = %.2f TFLOP/s\n",
	       id, name, p.batch, t * 1e3, total / 1e3, flops / t / 1e12,
	       limit, ratio, peer, kern, total ? flops / total / 1e3 : 0.0);
	fflush(stdout);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "product %s on %s: %s\n", spec, id,
			gpo_errmsg());
	gpo_graph_free(g);
	free(ha);
	free(hb);
	free(hc);
	free(round_t);
	return ret;
}

/* ---- the MLP training step ---------------------------------------- */

/*
 * A safetensors dataset of @n samples of @in features (x, F32) and labels
 * below @classes (y, I32), and a small x_test/y_test so that every sample
 * trains. Written once per shape to /tmp.
 */
static int write_dataset(const char *path, uint64_t n, uint32_t in,
			 uint32_t classes)
{
	const uint64_t ntest = 16;
	uint64_t xb = n * in * 4, yb = n * 4, tb = ntest * in * 4,
		 ub = ntest * 4, hlen, i, seed = 0x853c49e6748fea9bull;
	char hdr[512];
	float *x = NULL;
	int32_t *y = NULL;
	FILE *f;
	int len, ret = -EIO;

	len = snprintf(hdr, sizeof(hdr),
		       "{\"x\":{\"dtype\":\"F32\",\"shape\":[%llu,%u],\"data_offsets\":[0,%llu]},"
		       "\"y\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]},"
		       "\"x_test\":{\"dtype\":\"F32\",\"shape\":[%llu,%u],\"data_offsets\":[%llu,%llu]},"
		       "\"y_test\":{\"dtype\":\"I32\",\"shape\":[%llu],\"data_offsets\":[%llu,%llu]}}",
		       (unsigned long long)n, in, (unsigned long long)xb,
		       (unsigned long long)n, (unsigned long long)xb,
		       (unsigned long long)(xb + yb),
		       (unsigned long long)ntest, in,
		       (unsigned long long)(xb + yb),
		       (unsigned long long)(xb + yb + tb),
		       (unsigned long long)ntest,
		       (unsigned long long)(xb + yb + tb),
		       (unsigned long long)(xb + yb + tb + ub));
	/* the header is padded with spaces to a multiple of 8 */
	while (len % 8)
		hdr[len++] = ' ';
	hlen = len;
	x = malloc(xb);
	y = malloc(yb);
	f = fopen(path, "wb");
	if (!x || !y || !f)
		goto out;
	fill_random(x, n * in, seed);
	for (i = 0; i < n; i++)
		y[i] = (int32_t)(rng_next(&seed) % classes);
	if (fwrite(&hlen, 8, 1, f) != 1 || fwrite(hdr, 1, len, f) != (size_t)len ||
	    fwrite(x, 1, xb, f) != xb || fwrite(y, 1, yb, f) != yb ||
	    fwrite(x, 1, tb, f) != tb || fwrite(y, 1, ub, f) != ub)
		goto out;
	ret = 0;
out:
	if (f && fclose(f))
		ret = -EIO;
	if (ret)
		fprintf(stderr, "bench_train: cannot write %s\n", path);
	free(x);
	free(y);
	return ret;
}

/* "784x256x10": the first and last sizes, and 2 * the weights (flop/sample) */
static int parse_mlp(const char *spec, uint32_t *in, uint32_t *out,
		     double *fwd_flop)
{
	char buf[128], *tok, *save;
	uint32_t prev = 0, v = 0;
	int layers = -1;

	snprintf(buf, sizeof(buf), "%s", spec);
	*fwd_flop = 0;
	for (tok = strtok_r(buf, "x", &save); tok;
	     tok = strtok_r(NULL, "x", &save)) {
		v = (uint32_t)strtoul(tok, NULL, 10);
		if (!v)
			return -EINVAL;
		if (layers < 0)
			*in = v;
		else
			*fwd_flop += 2.0 * prev * v;
		prev = v;
		layers++;
	}
	*out = v;
	return layers > 0 ? 0 : -EINVAL;
}

/*
 * The half modes of a training step (SPEC@BATCH:NAME): products of
 * binary16 operands (matmul=f16) with f32 parameters, or with half
 * parameters and their f32 master copy (f16 with dynamic loss scaling,
 * as torch's autocast with a GradScaler). Every one is compared with
 * torch under autocast (key ":f16").
 */
#define HALF_MODES	4
static const struct half_mode {
	const char *name;
	enum gpo_dtype param;
	const char *conf;	/* added to the optimizer's settings */
} half_modes[HALF_MODES] = {
	{ "", GPO_F32, "" },
	{ "f16", GPO_F32, "" },
	{ "f16p", GPO_F16, " loss_scale=dynamic" },
	{ "bf16p", GPO_BF16, "" },
};

/* the optimizer of a step in half mode @half, before the model */
static int half_setup(struct gpo_optim *opt, int half)
{
	if (half_modes[half].param == GPO_F32)
		return 0;
	return gpo_optim_set_param_dtype(opt, half_modes[half].param, 1, 1);
}

/*
 * The peers of a training step: torch in f32, or (":f16", matmul=f16)
 * under autocast to bfloat16, eager and in a CUDA graph
 */
static const char *const fp32_labels[] = { "torch_eager", "torch_graph" };
static const char *const amp_labels[] = { "torch_amp", "torch_amp_graph" };

/*
 * time_steps - wall time per training step of @t: rounds of R steps
 * queued with no result and one step that asks for its result (so waits
 * for all of them), after WARMUP_S of warm-up; the median of the rounds
 * into *@step. -EIO when the loss is not finite (no figure for a run that
 * diverged).
 */
static int time_steps(struct gpo_train *t, const char *what, const char *spec,
		      const char *id, double *round_t, double *step)
{
	struct gpo_train_result res;
	double t0 = now_s(), per;
	int ret, i, r, reps, warm = 0;

	do {
		ret = gpo_train_step(t, &res);
		if (ret)
			return ret;
		warm++;
	} while (now_s() - t0 < WARMUP_S || warm < 3);
	if (!isfinite(res.loss)) {
		fprintf(stderr, "%s %s on %s: loss %g\n", what, spec, id,
			res.loss);
		return -EIO;
	}
	per = (now_s() - t0) / warm;
	reps = (int)(ROUND_S / per) + 1;
	for (r = 0; r < rounds; r++) {
		t0 = now_s();
		for (i = 0; i < reps && !ret; i++)
			ret = gpo_train_step(t, NULL);
		if (!ret)
			ret = gpo_train_step(t, &res);
		if (ret)
			return ret;
		round_t[r] = (now_s() - t0) / (reps + 1);
	}
	*step = median(round_t, rounds);
	return 0;
}

#define PROF_MAX	64

static int cmp_time(const void *a, const void *b)
{
	const struct gpo_op_time *x = a, *y = b;

	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : 0;
}

/*
 * Where a step of @m's training goes: its forward and backward (the same
 * graph as the trainer's, on the same parameters, with binary16 products
 * when @mm_f16) launch by launch, and the optimizer's step, in device
 * time; printed as comments, largest first, beside the measured wall time
 * of a step @step_s. The input x is @xs[0] x @xs[1] of @xt: random bytes
 * (i32 tokens, GPT) or random floats (MLP); the labels y, @xs[0] *
 * (@xt is i32 ? @xs[1] : 1) of them, below @classes.
 */
static int profile_step(struct gpo_device *dev, struct gpo_model *m,
			struct gpo_optim *opt, enum gpo_dtype xt,
			const uint64_t xs[2], uint32_t classes, int mm_f16,
			double step_s)
{
	uint64_t ys[1] = { xt == GPO_I32 ? xs[0] * xs[1] : xs[0] };
	uint64_t seed = 0x2545f4914f6cdd1dull, i, nx = xs[0] * xs[1];
	uint64_t total = 0;
	struct gpo_op_time t[PROF_MAX];
	struct gpo_step_info si;
	struct gpo_graph *g = NULL;
	struct gpo_tensor *x, *y, *loss;
	void *hx = malloc(nx * 4);
	int32_t *hy = malloc(ys[0] * 4);
	int ret = -ENOMEM, k;

	if (!hx || !hy)
		goto out;
	if (xt == GPO_I32)
		for (i = 0; i < nx; i++)
			((int32_t *)hx)[i] = (int32_t)(rng_next(&seed) >> 56);
	else
		fill_random(hx, nx, seed);
	for (i = 0; i < ys[0]; i++)
		hy[i] = (int32_t)(rng_next(&seed) % classes);
	ret = gpo_graph_new(dev, &g);
	if (!ret && mm_f16)
		ret = gpo_graph_set_matmul_f16(g, 1);
	if (ret)
		goto out;
	x = gpo_tensor_input(g, "x", xt, 2, xs);
	y = gpo_tensor_input(g, "y", GPO_I32, 1, ys);
	loss = gpo_cross_entropy(g, gpo_model_forward(m, g, x), y);
	ret = gpo_graph_backward(g, loss);
	if (!ret)
		ret = gpo_tensor_write(x, hx, nx * 4);
	if (!ret)
		ret = gpo_tensor_write(y, hy, ys[0] * 4);
	if (ret)
		goto out;
	ret = gpo_graph_profile(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD, t,
				PROF_MAX);
	if (ret < 0)
		goto out;
	/* the optimizer's step: its own device time */
	k = ret;
	ret = gpo_optim_step(opt, &si);
	if (ret)
		goto out;
	if (k < PROF_MAX) {
		t[k].op = "optimizer";
		t[k].pass = 0;
		t[k].launches = 1;
		t[k].ns = si.device_ns;
		k++;
	}
	for (i = 0; i < (uint64_t)k; i++)
		total += t[i].ns;
	qsort(t, k, sizeof(t[0]), cmp_time);
	printf("# profile: %d kernels, %.3f ms of device time a step (the step's wall time: %.3f ms)\n",
	       k, total / 1e6, step_s * 1e3);
	for (i = 0; i < (uint64_t)k; i++)
		printf("#   %-14s %-8s %5llu launches %9.3f ms %5.1f%%\n", t[i].op,
		       t[i].pass == GPO_RUN_FORWARD ? "forward" :
		       t[i].pass == GPO_RUN_BACKWARD ? "backward" : "",
		       (unsigned long long)t[i].launches, t[i].ns / 1e6,
		       total ? 100.0 * t[i].ns / total : 0.0);
	ret = 0;
out:
	if (ret)
		fprintf(stderr, "bench_train: profile: %s\n", gpo_errmsg());
	gpo_graph_free(g);
	free(hx);
	free(hy);
	return ret;
}

/*
 * Rounds of R steps queued with no result and one step that asks for its
 * result (so waits for all of them): wall time per step.
 */
static int bench_mlp(struct gpo_device *dev, const char *id, const char *spec,
		     uint32_t batch, int half)
{
	struct gpo_dataset *ds = NULL;
	struct gpo_optim *opt = NULL;
	struct gpo_model *m = NULL;
	struct gpo_train *t = NULL;
	double *round_t = calloc(rounds, sizeof(double));
	double flop, step;
	uint32_t in, out;
	uint64_t n;
	char path[128], mspec[160], opts[64], key[200], name[64], conf[96];
	char peer[160] = "", *pp = peer;
	const char *const *plabels = half ? amp_labels : fp32_labels;
	int ret = -EINVAL, i;

	if (!round_t)
		goto out;
	if (parse_mlp(spec, &in, &out, &flop)) {
		fprintf(stderr, "bench_train: bad MLP %s\n", spec);
		goto out;
	}
	/* 16 batches, at least 4096 samples */
	n = (uint64_t)batch * 16 < 4096 ? 4096 : (uint64_t)batch * 16;
	snprintf(path, sizeof(path), "/tmp/gpuopt-bench-train-%u-%u-%llu.safetensors",
		 (unsigned int)getpid(), in, (unsigned long long)n);
	ret = write_dataset(path, n, in, out);
	if (ret)
		goto out;
	ret = gpo_dataset_open(path, 0, &ds);
	unlink(path);
	if (ret)
		goto out;
	ret = gpo_optim_new(dev, GPO_ADAMW, &opt);
	if (ret)
		goto out;
	snprintf(mspec, sizeof(mspec), "mlp:%s", spec);
	snprintf(conf, sizeof(conf), "lr=0.001 weight_decay=0.01%s",
		 half_modes[half].conf);
	ret = half_setup(opt, half);
	if (!ret)
		ret = gpo_model_new(opt, mspec, "activation=relu seed=1", &m);
	if (!ret)
		ret = gpo_optim_configure(opt, -1, conf);
	if (ret)
		goto out;
	snprintf(opts, sizeof(opts), "batch_size=%u shuffle=0%s", batch,
		 half ? " matmul=f16" : "");
	ret = gpo_train_new(m, ds, opts, &t);
	if (ret)
		goto out;
	ret = time_steps(t, "mlp", spec, id, round_t, &step);
	if (ret)
		goto out;
	snprintf(key, sizeof(key), "mlp:%s@%u%s", spec, batch,
		 half ? ":f16" : "");
	for (i = 0; i < 2; i++) {
		const struct peer *p = find_peer(plabels[i], key);

		if (p)
			pp += snprintf(pp, peer + sizeof(peer) - pp,
				       "%s%s %.1f us (%.2fx)", i ? ", " : "",
				       p->label, p->ms * 1e3,
				       p->ms / (step * 1e3));
	}
	snprintf(name, sizeof(name), "mlp%.50s%s%s", spec, half ? " " : "",
		 half_modes[half].name);
	/* forward 2 flop a weight and sample, backward 4 */
	printf("%-10s %-22s %6u %10.3f %10.1f %9.2f %9s %7s  %s\n", id, name,
	       batch, step * 1e3, step * 1e6, 3.0 * flop * batch / step / 1e12,
	       "-", "-", peer);
	fflush(stdout);
	if (!quiet) {
		const uint64_t xs[2] = { batch, in };

		profile_step(dev, m, opt, GPO_F32, xs, out, half != 0, step);
	}
out:
	if (ret)
		fprintf(stderr, "mlp %s@%u on %s: %s\n", spec, batch, id,
			gpo_errmsg());
	gpo_train_free(t);
	gpo_model_free(m);
	gpo_optim_free(opt);
	gpo_dataset_free(ds);
	free(round_t);
	return ret;
}

/* ---- the GPT training step ---------------------------------------- */

/* @n random bytes into @path */
static int write_bytes(const char *path, uint64_t n)
{
	uint64_t seed = 0x5851f42d4c957f2dull, i;
	unsigned char *b = malloc(n);
	FILE *f = fopen(path, "wb");
	int ret = -EIO;

	if (!b || !f)
		goto out;
	for (i = 0; i < n; i++)
		b[i] = (unsigned char)(rng_next(&seed) >> 32);
	if (fwrite(b, 1, n, f) == n)
		ret = 0;
out:
	if (f && fclose(f))
		ret = -EIO;
	free(b);
	return ret;
}

/*
 * LAYERSxHEADSxDIMxCTX at @batch: wall time per step as bench_mlp, in
 * tokens per second; TFLOP/s counts the model's products (3 times the
 * forward's: weights, the tied head and attention's two products at full
 * T x T, as computed here), not the element-wise work.
 */
static int bench_gpt(struct gpo_device *dev, const char *id, const char *spec,
		     uint32_t batch, int half)
{
	struct gpo_dataset *ds = NULL;
	struct gpo_optim *opt = NULL;
	struct gpo_model *m = NULL;
	struct gpo_train *t = NULL;
	struct gpo_model_info mi;
	double *round_t = calloc(rounds, sizeof(double));
	double step, flop, tokens;
	unsigned int l, h, d, ctx;
	char path[128], mspec[160], opts[64], key[200], name[64], conf[96];
	char peer[160] = "", *pp = peer;
	const char *const *plabels = half ? amp_labels : fp32_labels;
	int ret = -EINVAL, i;

	if (!round_t)
		goto out;
	if (sscanf(spec, "%ux%ux%ux%u", &l, &h, &d, &ctx) != 4) {
		fprintf(stderr, "bench_train: bad GPT %s\n", spec);
		goto out;
	}
	snprintf(path, sizeof(path), "/tmp/gpuopt-bench-gpt-%u.bin",
		 (unsigned int)getpid());
	/* 16 batches for training, and the held-out tenth */
	ret = write_bytes(path, ((uint64_t)16 * batch * ctx + 1) * 10 / 9 + 1);
	if (ret)
		goto out;
	ret = gpo_dataset_open(path, GPO_DATASET_BYTES, &ds);
	unlink(path);
	if (ret)
		goto out;
	ret = gpo_optim_new(dev, GPO_ADAMW, &opt);
	if (ret)
		goto out;
	snprintf(mspec, sizeof(mspec), "gpt:layers=%u,heads=%u,dim=%u,ctx=%u",
		 l, h, d, ctx);
	snprintf(conf, sizeof(conf), "lr=0.0003 weight_decay=0.01%s",
		 half_modes[half].conf);
	ret = half_setup(opt, half);
	if (!ret)
		ret = gpo_model_new(opt, mspec, "seed=1", &m);
	if (!ret)
		ret = gpo_optim_configure(opt, -1, conf);
	if (!ret)
		ret = gpo_model_info(m, &mi);
	if (ret)
		goto out;
	snprintf(opts, sizeof(opts), "batch_size=%u shuffle=0%s", batch,
		 half ? " matmul=f16" : "");
	ret = gpo_train_new(m, ds, opts, &t);
	if (ret)
		goto out;
	ret = time_steps(t, "gpt", spec, id, round_t, &step);
	if (ret)
		goto out;
	tokens = (double)batch * ctx;
	/* per token: 2 a weight (wpe's are not multiplied), 4 T D a layer */
	flop = 3.0 * tokens * (2.0 * (mi.params - (double)ctx * d) +
			       4.0 * l * (double)ctx * d);
	snprintf(key, sizeof(key), "gpt:%s@%u%s", spec, batch,
		 half ? ":f16" : "");
	for (i = 0; i < 2; i++) {
		const struct peer *p = find_peer(plabels[i], key);

		if (p)
			pp += snprintf(pp, peer + sizeof(peer) - pp,
				       "%s%s %.0f tok/s (%.2fx)", i ? ", " : "",
				       p->label, tokens / (p->ms * 1e-3),
				       p->ms / (step * 1e3));
	}
	snprintf(name, sizeof(name), "gpt%.40s%s%s tok/s=%.0f", spec,
		 half ? " " : "", half_modes[half].name, tokens / step);
	printf("%-10s %-22s %6u %10.3f %10.1f %9.2f %9s %7s  %s\n", id, name,
	       batch, step * 1e3, step * 1e6, flop / step / 1e12, "-", "-",
	       peer);
	fflush(stdout);
	if (!quiet) {
		const uint64_t xs[2] = { batch, ctx };

		profile_step(dev, m, opt, GPO_I32, xs, 256, half != 0, step);
	}
out:
	if (ret)
		fprintf(stderr, "gpt %s@%u on %s: %s\n", spec, batch, id,
			gpo_errmsg());
	gpo_train_free(t);
	gpo_model_free(m);
	gpo_optim_free(opt);
	gpo_dataset_free(ds);
	free(round_t);
	return ret;
}

/*
 * One graph of loss = sum(w * attention(q, k, v)), q, k and v parameters,
 * fused or composed: the device time of the attention's kernels forward
 * and backward (all but the loss's own: the best of @rounds profiles)
 */
static int attn_time(struct gpo_device *dev, const uint64_t *s, int fused,
		     double *fwd_ms, double *bwd_ms)
{
	static const char *const names[3] = { "q", "k", "v" };
	uint64_t n = s[0] * s[1] * s[2], seed = 0x9e3779b97f4a7c15ull, i;
	struct gpo_op_time t[PROF_MAX];
	struct gpo_tensor *p[3], *w, *y, *loss;
	struct gpo_optim *opt = NULL;
	struct gpo_graph *g = NULL;
	float *v = malloc(n * sizeof(float));
	int ret = -ENOMEM, k, r;

	*fwd_ms = *bwd_ms = INFINITY;
	if (!v)
		goto out;
	for (i = 0; i < n; i++)
		v[i] = (float)((int64_t)(rng_next(&seed) >> 40) - (1 << 23)) /
		       (1 << 23);
	ret = gpo_optim_new(dev, GPO_SGD, &opt);
	if (!ret)
		ret = gpo_graph_new(dev, &g);
	for (k = 0; k < 3 && !ret; k++) {
		ret = gpo_optim_add_tensor(opt, names[k], 3, s, 0);
		ret = ret < 0 ? ret : 0;
		p[k] = ret ? NULL : gpo_tensor_param(g, opt, names[k]);
	}
	if (ret)
		goto out;
	w = gpo_tensor_input(g, "w", GPO_F32, 3, s);
	if (fused) {
		y = gpo_causal_attention(g, p[0], p[1], p[2],
					 1 / sqrt((double)s[2]));
	} else {
		y = gpo_matmul(g, p[0], p[1], GPO_MATMUL_TB);
		y = gpo_causal_softmax(g, y, 1 / sqrt((double)s[2]));
		y = gpo_matmul(g, y, p[2], 0);
	}
	loss = gpo_sum(g, gpo_sum(g, gpo_sum(g, gpo_mul(g, y, w), -1), -1),
		       -1);
	ret = gpo_graph_backward(g, loss);
	for (k = 0; k < 3 && !ret; k++)
		ret = gpo_optim_write(opt, "param", names[k], v, n * 4);
	if (!ret)
		ret = gpo_tensor_write(w, v, n * 4);
	for (r = 0; r < rounds && !ret; r++) {
		double f = 0, b = 0;

		ret = gpo_graph_profile(g, GPO_RUN_FORWARD | GPO_RUN_BACKWARD,
					t, PROF_MAX);
		if (ret < 0)
			break;
		for (k = 0; k < ret; k++) {
			/* the loss's element-wise product and sums */
			if (!strcmp(t[k].op, "binary") ||
			    !strcmp(t[k].op, "reduce") ||
			    !strcmp(t[k].op, "reduce_bwd") ||
			    !strcmp(t[k].op, "fill"))
				continue;
			if (t[k].pass == GPO_RUN_FORWARD)
				f += t[k].ns / 1e6;
			else
				b += t[k].ns / 1e6;
		}
		if (f + b < *fwd_ms + *bwd_ms) {
			*fwd_ms = f;
			*bwd_ms = b;
		}
		ret = 0;
	}
out:
	gpo_graph_free(g);
	gpo_optim_free(opt);
	free(v);
	return ret;
}

static int bench_attention(struct gpo_device *dev, const char *id,
			   const char *spec)
{
	const struct peer *pf, *pb;
	uint64_t s[3];
	double ff, fb, cf, cb;
	char key[80];
	int ret;

	if (sscanf(spec, "%llux%llux%llu", (unsigned long long *)&s[0],
		   (unsigned long long *)&s[1],
		   (unsigned long long *)&s[2]) != 3) {
		fprintf(stderr, "bench_train: bad attention %s\n", spec);
		return -EINVAL;
	}
	ret = attn_time(dev, s, 1, &ff, &fb);
	if (!ret)
		ret = attn_time(dev, s, 0, &cf, &cb);
	if (ret) {
		fprintf(stderr, "attention %s on %s: %s\n", spec, id,
			gpo_errmsg());
		return ret;
	}
	printf("# attention %s on %s, device ms: fused %.3f (forward %.3f, backward %.3f), composed %.3f (forward %.3f, backward %.3f): %.2fx\n",
	       spec, id, ff + fb, ff, fb, cf + cb, cf, cb,
	       (cf + cb) / (ff + fb));
	snprintf(key, sizeof(key), "attn:%s", spec);
	pf = find_peer("torch_attn_fwd", key);
	pb = find_peer("torch_attn", key);
	if (pf && pb)
		printf("# attention %s on %s: fused beside torch's scaled_dot_product_attention (f32, causal, wall ms): forward %.3f (%.2fx), forward + backward %.3f (%.2fx)\n",
		       spec, id, pf->ms, pf->ms / ff, pb->ms,
		       pb->ms / (ff + fb));
	fflush(stdout);
	return 0;
}

/*
 * y = sum(x, 0) over a ROWSxCOLS input: the launches of the sum, with the
 * GB/s of reading x once, beside torch's x.sum(0)
 */
static int bench_colsum(struct gpo_device *dev, const char *id,
			const char *spec)
{
	uint64_t s[2], seed = 0x243f6a8885a308d3ull, n, i;
	struct gpo_op_time t[PROF_MAX];
	struct gpo_graph *g = NULL;
	struct gpo_tensor *x, *y;
	const struct peer *pr;
	double best = INFINITY;
	uint64_t launches = 0;
	float *v = NULL;
	char key[80];
	int ret, k, r;

	if (sscanf(spec, "%llux%llu", (unsigned long long *)&s[0],
		   (unsigned long long *)&s[1]) != 2 || !s[0] || !s[1]) {
		fprintf(stderr, "bench_train: bad column sum %s\n", spec);
		return -EINVAL;
	}
	n = s[0] * s[1];
	v = malloc(n * sizeof(float));
	ret = v ? gpo_graph_new(dev, &g) : -ENOMEM;
	if (ret)
		goto out;
	for (i = 0; i < n; i++)
		v[i] = (float)((int64_t)(rng_next(&seed) >> 40) - (1 << 23)) /
		       (1 << 23);
	x = gpo_tensor_input(g, "x", GPO_F32, 2, s);
	y = gpo_sum(g, x, 0);
	ret = y ? gpo_tensor_write(x, v, n * 4) : -EINVAL;
	for (r = 0; r < rounds && !ret; r++) {
		double ms = 0;
		uint64_t nl = 0;

		ret = gpo_graph_profile(g, GPO_RUN_FORWARD, t, PROF_MAX);
		if (ret < 0)
			break;
		for (k = 0; k < ret; k++) {
			ms += t[k].ns / 1e6;
			nl += t[k].launches;
		}
		if (ms < best) {
			best = ms;
			launches = nl;
		}
		ret = 0;
	}
out:
	if (ret) {
		fprintf(stderr, "column sum %s on %s: %s\n", spec, id,
			gpo_errmsg());
	} else {
		printf("# column sum %s on %s: %llu launches, device %.4f ms, %.1f GB/s",
		       spec, id, (unsigned long long)launches, best,
		       n * 4 / best / 1e6);
		snprintf(key, sizeof(key), "colsum:%s", spec);
		pr = find_peer("torch_colsum", key);
		if (pr)
			printf("; torch x.sum(0) %.4f ms (wall): %.2fx",
			       pr->ms, pr->ms / best);
		printf("\n");
		fflush(stdout);
	}
	gpo_graph_free(g);
	free(v);
	return ret;
}

/* ---- the lists of cases -------------------------------------------- */

typedef int (*bench_fn)(struct gpo_device *dev, const char *id,
			const char *item);

/* "SPEC@BATCH" into @spec and @batch; -EINVAL without a batch */
/* SPEC@BATCH[:MODE]: *@half the half_modes[] index of MODE, 0 without */
static int split_batch(const char *item, char *spec, size_t len,
		       uint32_t *batch, int *half)
{
	const char *at = strchr(item, '@');
	char *end;

	if (!at || (size_t)(at - item) >= len)
		return -EINVAL;
	memcpy(spec, item, at - item);
	spec[at - item] = '\0';
	*batch = (uint32_t)strtoul(at + 1, &end, 10);
	if (!*end) {
		*half = 0;
		return 0;
	}
	for (*half = 1; *half < HALF_MODES; (*half)++)
		if (*end == ':' && !strcmp(end + 1, half_modes[*half].name))
			return 0;
	return -EINVAL;
}

static int sgemm_item(struct gpo_device *dev, const char *id, const char *item)
{
	uint32_t n = (uint32_t)parse_size(item);

	return n ? bench_gemm(dev, id, n, 0) : 0;
}

static int hgemm_item(struct gpo_device *dev, const char *id, const char *item)
{
	uint32_t n = (uint32_t)parse_size(item);

	return n ? bench_gemm(dev, id, n, 1) : 0;
}

static int mlp_item(struct gpo_device *dev, const char *id, const char *item)
{
	char spec[128];
	uint32_t batch;
	int half;

	if (split_batch(item, spec, sizeof(spec), &batch, &half))
		return 0;
	return bench_mlp(dev, id, spec, batch, half);
}

static int gpt_item(struct gpo_device *dev, const char *id, const char *item)
{
	char spec[128];
	uint32_t batch;
	int half;

	if (split_batch(item, spec, sizeof(spec), &batch, &half))
		return 0;
	return bench_gpt(dev, id, spec, batch, half);
}

/*
 * bench_each - @fn for each item of the comma list @list ("0": none), the
 * pool trimmed after each so that one case's memory does not weigh on
 * the next
 */
static void bench_each(const char *list, struct gpo_device *dev,
		       const char *id, bench_fn fn)
{
	char buf[2048], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "0"))
			fn(dev, id, tok);
		gpo_pool_trim(dev);
	}
}

int main(int argc, char **argv)
{
	const char *devs = "best", *sizes_arg = "1024,4096,8192";
	const char *hsizes_arg = "0";
	const char *mlps_arg = "784x256x10@128,784x1024x1024x10@4096";
	const char *gpts_arg = "0", *prods_arg = "0", *attn_arg = "0";
	const char *colsum_arg = "0";
	struct gpo_ctx *ctx;
	char buf[512], *tok, *save;
	int c, ret;

	while ((c = getopt(argc, argv, "d:s:H:m:g:M:A:R:r:p:qh")) != -1) {
		switch (c) {
		case 'd': devs = optarg; break;
		case 's': sizes_arg = optarg; break;
		case 'H': hsizes_arg = optarg; break;
		case 'm': mlps_arg = optarg; break;
		case 'g': gpts_arg = optarg; break;
		case 'M': prods_arg = optarg; break;
		case 'A': attn_arg = optarg; break;
		case 'R': colsum_arg = optarg; break;
		case 'r': rounds = atoi(optarg) > 0 ? atoi(optarg) : 5; break;
		case 'p': load_peers(optarg); break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEV,..] [-s SIZES] [-H SIZES] [-m SPEC@BATCH,..] [-g LxHxDxT@BATCH,..] [-M MxNxK[ta][tb][@BATCH][:f16],..] [-A BHxTxHD,..] [-R ROWSxCOLS,..] [-r ROUNDS] [-p PEERFILE] [-q]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	ret = gpo_ctx_new(&ctx, 0);
	if (ret) {
		fprintf(stderr, "bench_train: %s\n", gpo_errmsg());
		return 1;
	}
	print_header();
	snprintf(buf, sizeof(buf), "%s", devs);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct gpo_device_info info;
		struct gpo_device *dev;

		if (gpo_device_select(ctx, tok, &dev)) {
			fprintf(stderr, "bench_train: %s: %s\n", tok,
				gpo_errmsg());
			continue;
		}
		gpo_device_info(ctx, gpo_device_index(dev), &info);
		if (!quiet)
			printf("# %s: %s (%s, %s)\n", info.id, info.name,
			       info.driver, gpo_device_type_name(info.type));
		bench_each(sizes_arg, dev, info.id, sgemm_item);
		bench_each(hsizes_arg, dev, info.id, hgemm_item);
		bench_each(mlps_arg, dev, info.id, mlp_item);
		bench_each(attn_arg, dev, info.id, bench_attention);
		bench_each(colsum_arg, dev, info.id, bench_colsum);
		bench_each(gpts_arg, dev, info.id, gpt_item);
		bench_each(prods_arg, dev, info.id, bench_product);
	}
	gpo_ctx_free(ctx);
	return 0;
}
