// SPDX-License-Identifier: MIT
/*
 * bench/xfer.c - host <-> device transfer throughput
 *
 * For each device, SIZE bytes (1 GiB by default) written to an optimizer's
 * parameter buffer (H2D, gpo_optim_write) and read back (D2H,
 * gpo_optim_read), from and to pinned memory (gpo_host_alloc) and from and
 * to pageable memory (malloc, pages touched first). Each figure is the
 * median of -r runs after one warm-up; the data read back is checked
 * against what was written. Beside each figure, in the same run:
 *   limit  PyTorch's pinned copy in the same direction when the peer file
 *          has it (a GPU: the bus as a CUDA program sees it), else a
 *          host memcpy of the same bytes (a CPU device's memory is host
 *          memory);
 *   peer   PyTorch's copy from the same kind of memory (pinned or
 *          pageable), when the peer file has it.
 * bench/peer_torch.py --copies SIZE writes the peer file.
 *
 *   bench_xfer [-d DEV[,DEV..]|all] [-s SIZE] [-r REPS] [-p PEERFILE] [-x]
 *   -x  skip OpenCL and Vulkan implementations on the CPU (PoCL,
 *       llvmpipe: PoCL aborts on the GPU machine)
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <gpuopt.h>
#include "bench_i.h"

#define MAXREPS		15

struct peer {
	char label[64];
	uint64_t bytes;
	double s;
};

static struct peer peers[16];
static int npeers;

/* Peer file lines: "torch_copy_h2d_pinned 1073741824 0.0196" */
static void load_peers(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256];

	if (!f) {
		fprintf(stderr, "bench_xfer: no peer file %s\n", path);
		return;
	}
	while (fgets(line, sizeof(line), f) && npeers < 16) {
		struct peer *p = &peers[npeers];
		unsigned long long bytes;

		if (sscanf(line, "%63s %llu %lf", p->label, &bytes, &p->s) == 3 &&
		    !strncmp(p->label, "torch_copy_", 11) && p->s > 0) {
			p->bytes = bytes;
			npeers++;
		}
	}
	fclose(f);
}

/* GB/s of torch's copy @dir ("h2d") from @kind ("pinned"), 0 if none */
static double peer_gbs(const char *dir, const char *kind, uint64_t bytes)
{
	char label[64];
	int i;

	snprintf(label, sizeof(label), "torch_copy_%s_%s", dir, kind);
	for (i = 0; i < npeers; i++)
		if (!strcmp(peers[i].label, label) && peers[i].bytes == bytes)
			return bytes / peers[i].s / 1e9;
	return 0;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_xfer: %s: %s\n", what, gpo_errmsg());
	exit(1);
}

static double time_copy(struct gpo_optim *opt, void *host, uint64_t bytes,
			int write)
{
	double t = now_s();
	int ret = write ? gpo_optim_write(opt, "param", NULL, host, bytes) :
			  gpo_optim_read(opt, "param", NULL, host, bytes);

	if (ret)
		die(write ? "gpo_optim_write" : "gpo_optim_read");
	return now_s() - t;
}

/* The median of @reps timed copies after one warm-up. */
static double median_copy(struct gpo_optim *opt, void *host, uint64_t bytes,
			  int write, int reps)
{
	double t[MAXREPS];
	int r;

	time_copy(opt, host, bytes, write);
	for (r = 0; r < reps; r++)
		t[r] = time_copy(opt, host, bytes, write);
	return median(t, reps);
}

static double median_memcpy(void *dst, const void *src, uint64_t bytes,
			    int reps)
{
	double t[MAXREPS];
	int r;

	memcpy(dst, src, bytes);
	for (r = 0; r < reps; r++) {
		t[r] = now_s();
		memcpy(dst, src, bytes);
		t[r] = now_s() - t[r];
	}
	return median(t, reps);
}

static void row(const char *op, const char *kind, uint64_t bytes, double t,
		double limit_gbs, const char *limit, double peer)
{
	double gbs = bytes / t / 1e9;
	char p[64] = "-";

	if (peer > 0)
		snprintf(p, sizeof(p), "%8.2f %6.2fx", peer, gbs / peer);
	printf("%-4s %-9s %8.3f %8.2f  %-14s %8.2f %6.1f%%  %s\n", op, kind,
	       t * 1e3, gbs, limit, limit_gbs, 100.0 * gbs / limit_gbs, p);
}

static void run_device(struct gpo_ctx *ctx, int index, uint64_t bytes,
		       int reps)
{
	struct gpo_device_info info;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	unsigned char *pin[2], *page[2];
	double t[4], mc;
	uint64_t n = bytes / 4, i;
	int k, bad = 0;
	const char *kind[2] = { "pinned", "pageable" };

	gpo_device_info(ctx, index, &info);
	if (gpo_device_get(ctx, index, &dev))
		die(info.id);
	if (gpo_optim_new(dev, GPO_SGD, &opt) ||
	    gpo_optim_add_tensor(opt, "x", 1, &n, 0) < 0)
		die("optimizer");
	bytes = n * 4;
	for (k = 0; k < 2; k++) {
		if (gpo_host_alloc(dev, bytes, (void **)&pin[k]))
			die("gpo_host_alloc");
		page[k] = malloc(bytes);
		if (!page[k])
			die("malloc");
		/* touched: no page faults in the timed copies */
		memset(page[k], 0, bytes);
		memset(pin[k], 0, bytes);
	}
	for (i = 0; i < bytes; i++)
		pin[0][i] = page[0][i] = (unsigned char)(i * 2654435761u >> 13);

	t[0] = median_copy(opt, pin[0], bytes, 1, reps);
	t[1] = median_copy(opt, pin[1], bytes, 0, reps);
	bad |= memcmp(pin[0], pin[1], bytes) != 0;
	t[2] = median_copy(opt, page[0], bytes, 1, reps);
	t[3] = median_copy(opt, page[1], bytes, 0, reps);
	bad |= memcmp(page[0], page[1], bytes) != 0;
	mc = median_memcpy(page[1], page[0], bytes, reps);

	printf("\n# %s (%s): %.3f GiB, %d run(s), median%s\n", info.id,
	       info.name, bytes / 1073741824.0, reps,
	       bad ? "; DATA READ BACK DIFFERS" : "; data read back checked");
	printf("%-4s %-9s %8s %8s  %-14s %8s %7s  %s\n", "op", "host", "ms",
	       "GB/s", "limit", "GB/s", "ratio", "peer GB/s, vs peer");
	for (k = 0; k < 4; k++) {
		const char *dir = k % 2 ? "d2h" : "h2d";
		double lim = peer_gbs(dir, "pinned", bytes);

		row(k % 2 ? "D2H" : "H2D", kind[k / 2], bytes, t[k],
		    lim > 0 ? lim : bytes / mc / 1e9,
		    lim > 0 ? "torch pinned" : "host memcpy",
		    peer_gbs(dir, kind[k / 2], bytes));
	}
	for (k = 0; k < 2; k++) {
		gpo_host_free(dev, pin[k]);
		free(page[k]);
	}
	gpo_optim_free(opt);
	if (bad)
		exit(1);
}

/* PoCL or llvmpipe: OpenCL or Vulkan on the CPU */
static int cpu_impl(const struct gpo_device_info *info)
{
	return info->type == GPO_DEVICE_CPU_IMPL ||
	       strstr(info->name, "llvmpipe") || strstr(info->name, "pthread") ||
	       strstr(info->vendor, "pocl");
}

static int wanted(const char *list, const struct gpo_device_info *info)
{
	char buf[256], *tok, *save;

	if (!strcmp(list, "all"))
		return 1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, info->id) || !strcmp(tok, info->backend))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	const char *devices = "all";
	uint64_t bytes = 1ull << 30;
	int reps = 5, skip_impl = 0, c, i, n;
	struct gpo_ctx *ctx;

	while ((c = getopt(argc, argv, "d:s:r:p:xh")) != -1) {
		switch (c) {
		case 'd': devices = optarg; break;
		case 's': bytes = parse_size(optarg); break;
		case 'r': reps = atoi(optarg); break;
		case 'p': load_peers(optarg); break;
		case 'x': skip_impl = 1; break;
		default:
			fprintf(stderr, "usage: %s [-d DEV,..|all] [-s 1G] [-r REPS] [-p PEERFILE] [-x]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (reps < 1 || reps > MAXREPS)
		reps = 5;
	if (bytes < 4)
		bytes = 4;
	if (gpo_ctx_new(&ctx, 0))
		die("gpo_ctx_new");
	printf("# bench_xfer: host<->device copies through gpo_optim_write/read;\n"
	       "# limit: torch's pinned copy (GPU) or a host memcpy (CPU devices);"
	       " peer: torch from the same kind of memory\n");
	n = gpo_device_count(ctx);
	for (i = 0; i < n; i++) {
		struct gpo_device_info info;

		gpo_device_info(ctx, i, &info);
		if (!wanted(devices, &info) || !info.enabled)
			continue;
		if (skip_impl && cpu_impl(&info)) {
			printf("\n# %s (%s): skipped (-x: on the CPU)\n",
			       info.id, info.name);
			continue;
		}
		run_device(ctx, i, bytes, reps);
	}
	gpo_ctx_free(ctx);
	return 0;
}
