// SPDX-License-Identifier: MIT
/*
 * bench/optim.c - optimizer step throughput against the copy kernel
 *
 * For each device: the bandwidth of the backend's copy kernel on the same
 * buffers sizes (the limit), then every optimizer case at each size: time
 * per step from device timestamps (kernel) and on the wall clock
 * (submission and completion included), the bytes a step must move, the
 * achieved bandwidth, its ratio to copy, and the peer's time when a peer
 * results file is given (bench/peer_torch.py writes it).
 *
 *   bench_optim [-d DEV[,DEV..]] [-s SIZES] [-r REPS] [-c CASES]
 *               [-p PEERFILE] [-m] [-S] [-x] [-q]
 *   -s  sizes in parameters, e.g. 1M,16M,64M (K, M suffixes)
 *   -c  cases: all, or a comma list like adamw,sgd_m,adamw+clip
 *   -m  also the many-tensor cases (2000x4096, GPT-2 small) and the
 *       small steps
 *   -S  only the small steps: 10 000-parameter AdamW, with and without
 *       clipping, synchronous (gpo_optim_step) and queued
 *       (gpo_optim_step_async, a wait every 16), in microseconds of wall
 *       time against the target (15 us, 25 us clipped) and the peer
 *       (torch's fused AdamW replayed from a CUDA graph, peer_torch.py)
 *   -x  skip CPU implementations of OpenCL and Vulkan (PoCL, lavapipe)
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "gpuopt.h"
#include "bench_i.h"
#include "core/gpuopt_i.h"
#include "core/dtype_i.h"
#include "abi/mem.h"

struct bench_case {
	const char *name;
	const char *kind;
	const char *settings;
	double bytes;		/* per parameter a step must move */
};

/*
 * Bytes per parameter: reads and writes of float32 slots. The norm pass
 * (clip or unscale) reads the gradients once more: +4. With bf16 state
 * each state slot moves 2 + 2: AdamW is p 4 + 4, g 4, m and v 2 + 2 each.
 * With u8 state (blockwise 8-bit) each slot moves 1 + 1 and, per block of
 * 256, its f32 absmax is read and written: AdamW 12 + 2 + 2 + 16 / 256.
 */
static const struct bench_case cases[] = {
	{ "sgd", "sgd", "lr=0.01", 12 },
	{ "sgd_m", "sgd", "lr=0.01 momentum=0.9", 20 },
	{ "sgd_m+clip", "sgd", "lr=0.01 momentum=0.9 clip_norm=1", 24 },
	{ "adam", "adam", "lr=0.001", 28 },
	{ "adamw", "adamw", "lr=0.001", 28 },
	{ "adamw+clip", "adamw", "lr=0.001 clip_norm=1", 32 },
	{ "adamw+unscale", "adamw", "lr=0.001 grad_scale=1024", 32 },
	{ "adamw+amsgrad", "adamw", "lr=0.001 amsgrad=1", 36 },
	{ "rmsprop", "rmsprop", "lr=0.01", 20 },
	{ "rmsprop_c_m", "rmsprop", "lr=0.01 centered=1 momentum=0.9", 36 },
	{ "adagrad", "adagrad", "lr=0.01", 20 },
	{ "lamb", "lamb", "lr=0.001 weight_decay=0.01", 40 },
	{ "lion", "lion", "lr=0.0001 weight_decay=0.01", 20 },
	{ "adamw_bf16s", "adamw", "lr=0.001", 20 },
	/*
	 * Half parameters (gpo_optim_set_param_dtype): with a master copy,
	 * master 4 + 4, g 2, the half copy written 2, then the state; with
	 * stochastic rounding (no master) p 2 + 2, g 2, then the state
	 */
	{ "adamw_bf16p", "adamw", "lr=0.001", 28 },
	{ "adamw_bf16p_bf16s", "adamw", "lr=0.001", 20 },
	{ "adamw_bf16sr", "adamw", "lr=0.001", 22 },
	{ "adamw_bf16sr_bf16s", "adamw", "lr=0.001", 14 },
	/* LAMB with a master: g in 2 bytes, the half copy's 2 written */
	{ "lamb_bf16p", "lamb", "lr=0.001 weight_decay=0.01", 40 },
	/*
	 * 8-bit state: p 4 + 4, g 4, a byte read and written per state
	 * slot, and an f32 absmax per slot and block of 256 read and written
	 */
	{ "adamw_u8s", "adamw", "lr=0.001", 16.0 + 16.0 / 256 },
	{ "adam_u8s", "adam", "lr=0.001", 16.0 + 16.0 / 256 },
	{ "rmsprop_u8s", "rmsprop", "lr=0.01", 14.0 + 8.0 / 256 },
	{ "adagrad_u8s", "adagrad", "lr=0.01", 14.0 + 8.0 / 256 },
	{ "lion_u8s", "lion", "lr=0.0001 weight_decay=0.01", 14.0 + 8.0 / 256 },
	/*
	 * Half parameters with 8-bit state: bf16 with a master (master 4 +
	 * 4, g 2, the half copy 2) or stochastic rounding (p 2 + 2, g 2),
	 * then 1 + 1 per slot and the absmax blocks as adamw_u8s
	 */
	{ "adamw_bf16p_u8s", "adamw", "lr=0.001", 16.0 + 16.0 / 256 },
	{ "adamw_bf16sr_u8s", "adamw", "lr=0.001", 10.0 + 16.0 / 256 },
};

/* the cases whose state slots are not f32: their dtype */
static const struct {
	const char *name;
	const char *dtype;
} case_state[] = {
	{ "adamw_bf16s", "bf16" },
	{ "adamw_u8s", "u8" },
	{ "adam_u8s", "u8" },
	{ "rmsprop_u8s", "u8" },
	{ "adagrad_u8s", "u8" },
	{ "lion_u8s", "u8" },
	{ "adamw_bf16p_bf16s", "bf16" },
	{ "adamw_bf16sr_bf16s", "bf16" },
	{ "adamw_bf16p_u8s", "u8" },
	{ "adamw_bf16sr_u8s", "u8" },
};

/* the cases whose parameters are not f32: their dtype and mode */
static const struct {
	const char *name;
	enum gpo_dtype dtype;
	int master;
} case_param[] = {
	{ "adamw_bf16p", GPO_BF16, 1 },
	{ "adamw_bf16p_bf16s", GPO_BF16, 1 },
	{ "adamw_bf16sr", GPO_BF16, 0 },
	{ "adamw_bf16sr_bf16s", GPO_BF16, 0 },
	{ "adamw_bf16p_u8s", GPO_BF16, 1 },
	{ "adamw_bf16sr_u8s", GPO_BF16, 0 },
	{ "lamb_bf16p", GPO_BF16, 1 },
};

/* every state slot name: a case's kind has some of them */
static const char *const state_slots[] = {
	"momentum_buffer", "exp_avg", "exp_avg_sq", "max_exp_avg_sq",
	"square_avg", "grad_avg", "sum",
};

static const char *state_dtype(const struct bench_case *c)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(case_state); i++)
		if (!strcmp(case_state[i].name, c->name))
			return case_state[i].dtype;
	return NULL;
}

/* the parameters' dtype of case @c; *@master: its master_weights */
static enum gpo_dtype param_dtype(const struct bench_case *c, int *master)
{
	size_t i;

	*master = 1;
	for (i = 0; i < ARRAY_SIZE(case_param); i++) {
		if (!strcmp(case_param[i].name, c->name)) {
			*master = case_param[i].master;
			return case_param[i].dtype;
		}
	}
	return GPO_F32;
}

struct peer {
	char label[64];
	uint64_t params;
	double ms;
};

#define WARMUP_S 0.3

static struct peer peers[64];
static int npeers;
static int reps = 20;
static int quiet;
static int skip_cpu_impl;

/*
 * Peer file lines: "label params ms_per_step", e.g.
 * "torch_adamw_fused 67108864 15.2". The peer shown for a case is the
 * fastest one with the same parameter count.
 */
static void load_peers(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];

	if (!f) {
		fprintf(stderr, "bench_optim: no peer file %s\n", path);
		return;
	}
	while (fgets(line, sizeof(line), f) && npeers < 64) {
		struct peer *p = &peers[npeers];
		unsigned long long n;

		if (line[0] == '#')
			continue;
		if (sscanf(line, "%63s %llu %lf", p->label, &n, &p->ms) == 3) {
			p->params = n;
			npeers++;
		}
	}
	fclose(f);
}

/* the fastest peer of @params parameters whose label has @tag (NULL: any) */
static const struct peer *find_peer_tag(uint64_t params, const char *tag)
{
	const struct peer *best = NULL;
	int i;

	for (i = 0; i < npeers; i++)
		if (peers[i].params == params &&
		    (!tag || strstr(peers[i].label, tag)) &&
		    (!best || peers[i].ms < best->ms))
			best = &peers[i];
	return best;
}

/* the plain AdamW peers (not the clipped ones) */
static const struct peer *find_peer(uint64_t params)
{
	const struct peer *best = NULL;
	int i;

	for (i = 0; i < npeers; i++)
		if (peers[i].params == params &&
		    !strstr(peers[i].label, "clip") &&
		    (!best || peers[i].ms < best->ms))
			best = &peers[i];
	return best;
}

/* Device copy bandwidth over @n floats: bytes read + written per second. */
static double copy_bandwidth(struct gpo_device *dev, uint64_t n,
			     double *kernel_ms)
{
	struct dev_buf a = { 0 }, b = { 0 };
	struct gpo_mem_args args = { .n = (uint32_t)n, .value = 1.5f };
	struct op_call call = {
		.op = OP_FILL, .dtype = GPO_F32, .work = n, .args = &args,
	};
	/* more repetitions than a case: the limit should be the steadiest */
	int creps = reps * 3 > 30 ? reps * 3 : 30;
	double *dev_t = calloc(creps, sizeof(double));
	double *wall_t = calloc(creps, sizeof(double));
	double bw = 0, t0;
	uint64_t ns;
	int i, ret;

	if (!dev_t || !wall_t)
		goto out;
	if (gpo__pool_alloc(dev, n * 4, &a) || gpo__pool_alloc(dev, n * 4, &b)) {
		fprintf(stderr, "copy: %s\n", gpo_errmsg());
		goto out_free;
	}
	call.buf[0] = a;
	ret = gpo__launch(dev, &call);
	call.op = OP_COPY;
	call.buf[0] = b;
	call.buf[1] = a;
	t0 = now_s();
	while (!ret) {
		ret = gpo__launch(dev, &call);
		if (!ret)
			ret = dev->ops->wait(dev, &ns);
		if (now_s() - t0 >= WARMUP_S)
			break;
	}
	for (i = 0; i < creps && !ret; i++) {
		t0 = now_s();
		ret = gpo__launch(dev, &call);
		if (!ret)
			ret = dev->ops->wait(dev, &ns);
		if (ret)
			break;
		wall_t[i] = now_s() - t0;
		dev_t[i] = ns ? ns * 1e-9 : wall_t[i];
	}
	if (ret) {
		fprintf(stderr, "copy: %s\n", gpo_errmsg());
		goto out_free;
	}
	*kernel_ms = median(dev_t, creps) * 1e3;
	bw = 8.0 * n / (*kernel_ms * 1e-3);
out_free:
	gpo__pool_free(dev, &a);
	gpo__pool_free(dev, &b);
out:
	free(dev_t);
	free(wall_t);
	return bw;
}

struct result {
	double kernel_ms;
	double wall_ms;
};

#define ASYNC_BATCH	16	/* queued steps between two waits */

/*
 * Run @c over tensors @shapes (ntensors of numel each, or one of @n).
 * @async: time gpo_optim_step_async() instead, ASYNC_BATCH queued steps
 * and a wait per repetition, the wall time per step (kernel: the device
 * time per step).
 */
/* @n floats into @slot in its dtype @dt (f32, or rounded to f16/bf16) */
static int write_as(struct gpo_optim *opt, const char *slot, const float *x,
		    uint64_t n, enum gpo_dtype dt)
{
	uint16_t *h;
	uint64_t i;
	int ret;

	if (dt == GPO_F32)
		return gpo_optim_write(opt, slot, NULL, x, n * 4);
	h = malloc(n * 2);
	if (!h)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		h[i] = dt == GPO_F16 ? gpo__f32_to_f16(x[i]) :
				       gpo__f32_to_bf16(x[i]);
	ret = gpo_optim_write(opt, slot, NULL, h, n * 2);
	free(h);
	return ret;
}

static int run_case_mode(struct gpo_device *dev, const struct bench_case *c,
			 int ntensors, const uint64_t *numels,
			 struct result *res, int async)
{
	double *dev_t = calloc(reps, sizeof(double));
	double *wall_t = calloc(reps, sizeof(double));
	struct gpo_step_info info;
	struct gpo_optim *opt = NULL;
	uint64_t total = 0, i, seed = 0x9e3779b97f4a7c15ull;
	float *host = NULL;
	char name[32];
	int t, ret = -ENOMEM, k, j, master;
	enum gpo_dtype pdt = param_dtype(c, &master);
	double t0;

	if (!dev_t || !wall_t)
		goto out;
	k = gpo_optim_kind_parse(c->kind);
	ret = gpo_optim_new(dev, k, &opt);
	if (ret)
		goto out;
	for (t = 0; t < ntensors; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		ret = gpo_optim_add_tensor(opt, name, 1, &numels[t], 0);
		if (ret < 0)
			goto out;
		total += numels[t];
	}
	ret = gpo_optim_configure(opt, -1, c->settings);
	if (!ret)
		ret = gpo_optim_set_param_dtype(opt, pdt, master, 1);
	if (ret)
		goto out;
	for (t = 0; state_dtype(c) && t < (int)ARRAY_SIZE(state_slots); t++) {
		ret = gpo_optim_set_dtype(opt, state_slots[t],
					  gpo_dtype_parse(state_dtype(c)));
		if (ret && ret != -ENOENT)
			goto out;
	}
	host = malloc(total * sizeof(float));
	if (!host) {
		ret = -ENOMEM;
		goto out;
	}
	/* never time on zeros: random params and gradients */
	for (i = 0; i < total; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		host[i] = (float)((seed >> 40) * (1.0 / 16777216.0) - 0.5);
	}
	ret = write_as(opt, "param", host, total, pdt);
	if (!ret) {
		for (i = 0; i < total; i++)
			host[i] *= 0.01f;
		ret = write_as(opt, "grad", host, total, pdt);
	}
	if (ret)
		goto out;
	/*
	 * Warm up by time, not by count: after a pause (host data being
	 * generated) a GPU can run the next ~250 ms well below its memory
	 * bandwidth (seen under NVIDIA's Vulkan driver on an H100).
	 */
	t0 = now_s();
	do {
		ret = gpo_optim_step(opt, &info);
		if (ret)
			goto out;
	} while (now_s() - t0 < WARMUP_S);
	for (t = 0; t < reps; t++) {
		t0 = now_s();
		if (async) {
			for (j = 0; j < ASYNC_BATCH && !ret; j++)
				ret = gpo_optim_step_async(opt);
			if (!ret)
				ret = gpo_optim_wait(opt, &info);
		} else {
			ret = gpo_optim_step(opt, &info);
		}
		if (ret)
			goto out;
		wall_t[t] = (now_s() - t0) / (async ? ASYNC_BATCH : 1);
		dev_t[t] = info.device_ns ?
			   info.device_ns * 1e-9 / (async ? ASYNC_BATCH : 1) :
			   wall_t[t];
	}
	res->kernel_ms = median(dev_t, reps) * 1e3;
	res->wall_ms = median(wall_t, reps) * 1e3;
out:
	if (ret)
		fprintf(stderr, "bench %s: %s\n", c->name, gpo_errmsg());
	gpo_optim_free(opt);
	free(host);
	free(dev_t);
	free(wall_t);
	return ret;
}

static int run_case(struct gpo_device *dev, const struct bench_case *c,
		    int ntensors, const uint64_t *numels, struct result *res)
{
	return run_case_mode(dev, c, ntensors, numels, res, 0);
}

static int case_selected(const char *list, const char *name)
{
	char buf[512], *tok, *save;

	if (!list || !strcmp(list, "all"))
		return 1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, name))
			return 1;
	return 0;
}

static void print_header(void)
{
	printf("%-10s %-15s %10s %9s %9s %9s %9s %7s  %s\n", "device",
	       "case", "params", "kern_ms", "wall_ms", "GB/s", "copyGB/s",
	       "ratio", "peer");
}

static void print_row(const char *dev, const char *name, uint64_t params,
		      double bytes, const struct result *r,
		      double copy_bw)
{
	double bw = bytes * params / (r->kernel_ms * 1e-3);
	const struct peer *p = find_peer(params);
	char peer[96] = "";

	if (p && strstr(name, "adamw") == name && !strchr(name, '+'))
		snprintf(peer, sizeof(peer), "%s %.3f ms (%.2fx)", p->label,
			 p->ms, p->ms / r->wall_ms);
	printf("%-10s %-15s %10llu %9.3f %9.3f %9.1f %9.1f %6.1f%%  %s\n",
	       dev, name, (unsigned long long)params, r->kernel_ms,
	       r->wall_ms, bw / 1e9, copy_bw / 1e9, 100.0 * bw / copy_bw,
	       peer);
	fflush(stdout);
}

/* GPT-2 small (124M): the shapes of its parameter tensors, flattened. */
static int gpt2_numels(uint64_t *out, int max)
{
	int n = 0, l;

#define ADD(x) do { if (n < max) out[n++] = (x); } while (0)
	ADD(50257ull * 768);	/* wte */
	ADD(1024ull * 768);	/* wpe */
	for (l = 0; l < 12; l++) {
		ADD(768); ADD(768);			/* ln_1 */
		ADD(768ull * 2304); ADD(2304);		/* attn.c_attn */
		ADD(768ull * 768); ADD(768);		/* attn.c_proj */
		ADD(768); ADD(768);			/* ln_2 */
		ADD(768ull * 3072); ADD(3072);		/* mlp.c_fc */
		ADD(3072ull * 768); ADD(768);		/* mlp.c_proj */
	}
	ADD(768); ADD(768);				/* ln_f */
#undef ADD
	return n;
}

/*
 * Small steps (issue 14): a 10 000-parameter AdamW step, plain and
 * clipped, synchronous and queued, in microseconds of wall time beside
 * the target and torch's fused AdamW replayed from a CUDA graph. Last, a
 * 4-parameter SGD step: the least work one step can submit, so its wall
 * time is what submitting and waiting cost on this device (the floor).
 */
static void small_steps(const char *id, struct gpo_device *dev)
{
	static const struct {
		const char *name;
		struct bench_case c;
		int async;
		double target_us;
		const char *peer;	/* the peer label's tag */
		uint64_t n;		/* parameters; 0: 10 000 */
	} rows[] = {
		{ "adamw_10k", { "adamw", "adamw", "lr=0.001", 28 }, 0, 15,
		  "fused_graph", 0 },
		{ "adamw+clip_10k", { "adamw+clip", "adamw",
		  "lr=0.001 clip_norm=1", 32 }, 0, 25, "clip_graph", 0 },
		{ "adamw_10k_async", { "adamw", "adamw", "lr=0.001", 28 }, 1,
		  15, "fused_graph", 0 },
		{ "adamw+clip_10k_as", { "adamw+clip", "adamw",
		  "lr=0.001 clip_norm=1", 32 }, 1, 25, "clip_graph", 0 },
		{ "sgd_4_floor", { "sgd", "sgd", "lr=0.001", 12 }, 0, 15,
		  "fused_graph", 4 },
	};
	struct result r;
	uint64_t n;
	size_t i;

	printf("%-10s %-17s %8s %8s %8s %9s %6s  %s\n", "device", "case",
	       "params", "kern_us", "wall_us", "target_us", "ratio", "peer");
	for (i = 0; i < ARRAY_SIZE(rows); i++) {
		const struct peer *p = find_peer_tag(10000, rows[i].peer);
		char peer[96] = "-";

		n = rows[i].n ? rows[i].n : 10000;
		if (run_case_mode(dev, &rows[i].c, 1, &n, &r, rows[i].async))
			continue;
		if (p)
			snprintf(peer, sizeof(peer), "%s %.1f us (%.2fx)",
				 p->label, p->ms * 1e3,
				 p->ms / r.wall_ms);
		printf("%-10s %-17s %8llu %8.1f %8.1f %9.0f %5.2fx  %s\n", id,
		       rows[i].name, (unsigned long long)n,
		       r.kernel_ms * 1e3, r.wall_ms * 1e3, rows[i].target_us,
		       r.wall_ms * 1e3 / rows[i].target_us, peer);
		fflush(stdout);
	}
	gpo_pool_trim(dev);
}

static void bench_device(struct gpo_ctx *ctx, struct gpo_device *dev,
			 const uint64_t *sizes, int nsizes, const char *sel,
			 int many)
{
	struct gpo_device_info info;
	uint64_t *numels;
	struct result r;
	double copy_bw, copy_ms;
	size_t c;
	int s, n;

	gpo_device_info(ctx, gpo_device_index(dev), &info);
	if (!quiet)
		printf("# %s: %s (%s, %s)\n", info.id, info.name,
		       info.driver, gpo_device_type_name(info.type));
	numels = calloc(2000, sizeof(*numels));
	if (!numels)
		return;
	for (s = 0; s < nsizes; s++) {
		copy_bw = copy_bandwidth(dev, sizes[s], &copy_ms);
		if (copy_bw <= 0)
			continue;
		printf("%-10s %-15s %10llu %9.3f %9s %9.1f %9.1f %6.1f%%\n",
		       info.id, "copy", (unsigned long long)sizes[s], copy_ms,
		       "-", copy_bw / 1e9, copy_bw / 1e9, 100.0);
		for (c = 0; c < ARRAY_SIZE(cases); c++) {
			if (!case_selected(sel, cases[c].name))
				continue;
			numels[0] = sizes[s];
			if (run_case(dev, &cases[c], 1, numels, &r))
				continue;
			print_row(info.id, cases[c].name, sizes[s],
				  cases[c].bytes, &r, copy_bw);
		}
		gpo_pool_trim(dev);
	}
	if (many) {
		static const struct bench_case adamw = {
			"adamw", "adamw", "lr=0.001", 28
		};
		uint64_t total = 0;
		int i;

		for (i = 0; i < 2000; i++)
			numels[i] = 4096;
		copy_bw = copy_bandwidth(dev, 2000 * 4096, &copy_ms);
		if (!run_case(dev, &adamw, 2000, numels, &r))
			print_row(info.id, "adamw_2000x4096", 2000 * 4096, 28,
				  &r, copy_bw);
		n = gpt2_numels(numels, 2000);
		for (i = 0; i < n; i++)
			total += numels[i];
		copy_bw = copy_bandwidth(dev, total, &copy_ms);
		if (!run_case(dev, &adamw, n, numels, &r))
			print_row(info.id, "adamw_gpt2", total, 28, &r,
				  copy_bw);
		gpo_pool_trim(dev);
	}
	if (many)
		small_steps(info.id, dev);
	free(numels);
}

int main(int argc, char **argv)
{
	const char *devs = "best", *sizes_arg = "1M,16M,64M", *sel = "all";
	uint64_t sizes[16];
	struct gpo_ctx *ctx;
	char buf[512], *tok, *save;
	int nsizes = 0, many = 0, small = 0, c, ret;

	while ((c = getopt(argc, argv, "d:s:r:c:p:mSxqh")) != -1) {
		switch (c) {
		case 'd': devs = optarg; break;
		case 's': sizes_arg = optarg; break;
		case 'r': reps = atoi(optarg) > 0 ? atoi(optarg) : 20; break;
		case 'c': sel = optarg; break;
		case 'p': load_peers(optarg); break;
		case 'm': many = 1; break;
		case 'S': small = 1; break;
		case 'x': skip_cpu_impl = 1; break;
		case 'q': quiet = 1; break;
		default:
			fprintf(stderr,
				"usage: %s [-d DEV,..] [-s SIZES] [-r REPS] [-c CASES] [-p PEERFILE] [-m] [-S] [-x] [-q]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	snprintf(buf, sizeof(buf), "%s", sizes_arg);
	for (tok = strtok_r(buf, ",", &save); tok && nsizes < 16;
	     tok = strtok_r(NULL, ",", &save))
		sizes[nsizes++] = parse_size(tok);

	ret = gpo_ctx_new(&ctx, 0);
	if (ret) {
		fprintf(stderr, "bench_optim: %s\n", gpo_errmsg());
		return 1;
	}
	if (!small)
		print_header();
	snprintf(buf, sizeof(buf), "%s", devs);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		struct gpo_device *dev;

		struct gpo_device_info info;

		if (gpo_device_select(ctx, tok, &dev)) {
			fprintf(stderr, "bench_optim: %s: %s\n", tok,
				gpo_errmsg());
			continue;
		}
		gpo_device_info(ctx, gpo_device_index(dev), &info);
		if (skip_cpu_impl && info.type == GPO_DEVICE_CPU_IMPL) {
			fprintf(stderr, "bench_optim: %s (%s): skipped (-x)\n",
				info.id, info.name);
			continue;
		}
		if (small) {
			if (!quiet)
				printf("# %s: %s (%s)\n", info.id, info.name,
				       info.driver);
			small_steps(info.id, dev);
			continue;
		}
		bench_device(ctx, dev, sizes, nsizes, sel, many);
	}
	gpo_ctx_free(ctx);
	return 0;
}
