// SPDX-License-Identifier: MIT
/*
 * bench/ckpt.c - checkpoint save and restore throughput against the disk
 *
 * For each size of optimizer state (AdamW: param, exp_avg, exp_avg_sq, so
 * the file holds SIZE bytes of tensors), in the same run and directory:
 *   limit  the disk's sequential direct-I/O rate: O_DIRECT writes of 8 MiB
 *          blocks one after another then fsync, and O_DIRECT reads of the
 *          same file, as dd bs=8M oflag=direct / iflag=direct do; on
 *          tmpfs (/dev/shm), which has no disk behind it, write() and
 *          read() of 8 MiB blocks: a memory copy into and out of the
 *          page cache;
 *   peer   plain write() + fsync and read() of the same bytes, the page
 *          cache dropped before reading;
 *   save   gpo_optim_save() (device to disk, durable: fsync, rename,
 *          fsync of the directory); restore: gpo_optim_restore() after
 *          dropping the cache (every checksum checked, into new device
 *          buffers);
 *   D2H    gpo_optim_read() of the same state into host memory, what the
 *          device alone allows: into pageable memory, and into pinned
 *          memory (gpo_host_alloc), which is what save stages through.
 * Each figure is the median of -r runs.
 *
 *   bench_ckpt [-d DEVICE] [-D DIR] [-s SIZES] [-r REPS]
 *   -s  bytes of state, e.g. 1G,4G (default) or 256M (K, M, G suffixes)
 */
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/vfs.h>
#include <gpuopt.h>
#include "bench_i.h"

#define BLOCK		(8u << 20)
#define TMPFS_MAGIC	0x01021994
#define NTENSORS	8
#define MAXREPS		15

struct bench {
	const char *device;
	const char *dir;
	int reps;
	int tmpfs;			/* no direct I/O: the limit is a copy */
	char path_direct[4096], path_plain[4096], path_ckpt[4096];
};

/* The file's pages out of the cache (and all of it, as root). */
static void drop_cache(const char *path)
{
	int fd = open(path, O_RDONLY);
	FILE *f;

	if (fd >= 0) {
		fdatasync(fd);
		posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		close(fd);
	}
	sync();
	f = geteuid() == 0 ? fopen("/proc/sys/vm/drop_caches", "w") : NULL;
	if (f) {
		fputs("3\n", f);
		fclose(f);
	}
}

static int die(const char *what)
{
	fprintf(stderr, "bench_ckpt: %s: %s\n", what, gpo_errmsg());
	exit(1);
}

static void sys_die(const char *what)
{
	perror(what);
	exit(1);
}

/* Sequential I/O of @bytes with one @blk buffer, as dd does. */
static double seq_io(const char *path, uint64_t bytes, int writing,
		     int direct, char *blk)
{
	int fl = writing ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
	uint64_t done = 0;
	double t0;
	int fd;

	if (!writing)
		drop_cache(path);
	fd = open(path, fl | (direct ? O_DIRECT : 0), 0644);
	if (fd < 0)
		sys_die(path);
	t0 = now_s();
	while (done < bytes) {
		size_t n = bytes - done < BLOCK ? bytes - done : BLOCK;
		ssize_t r = writing ? write(fd, blk, n) : read(fd, blk, n);

		if (r <= 0)
			sys_die(writing ? "write" : "read");
		done += r;
	}
	if (writing && fsync(fd))
		sys_die("fsync");
	t0 = now_s() - t0;
	close(fd);
	return t0;
}

static struct gpo_optim *make_state(struct gpo_device *dev, uint64_t bytes)
{
	uint64_t numel = bytes / 12, per = numel / NTENSORS, i;
	const char *slots[3] = { "param", "exp_avg", "exp_avg_sq" };
	struct gpo_optim *opt;
	char name[16];
	float *x;
	int t, s;

	if (gpo_optim_new(dev, GPO_ADAMW, &opt))
		die("gpo_optim_new");
	for (t = 0; t < NTENSORS; t++) {
		uint64_t shape[2] = { per / 1024, 1024 };

		snprintf(name, sizeof(name), "layer%d.weight", t);
		if (gpo_optim_add_tensor(opt, name, 2, shape, 0) < 0)
			die("gpo_optim_add_tensor");
	}
	numel = gpo_optim_numel(opt);
	x = malloc(numel * 4);
	if (!x)
		sys_die("malloc");
	for (s = 0; s < 3; s++) {
		for (i = 0; i < numel; i++)
			x[i] = (float)((i * 2654435761u + s) % 1000003) * 1e-6f;
		if (gpo_optim_write(opt, slots[s], NULL, x, numel * 4))
			die("gpo_optim_write");
	}
	free(x);
	return opt;
}

/* The three slots into @x (pageable or pinned), pages touched first. */
static double d2h(struct gpo_optim *opt, float *x)
{
	const char *slots[3] = { "param", "exp_avg", "exp_avg_sq" };
	uint64_t bytes = gpo_optim_numel(opt) * 4;
	double t0;
	int s;

	memset(x, 0, bytes);
	t0 = now_s();
	for (s = 0; s < 3; s++)
		if (gpo_optim_read(opt, slots[s], NULL, x, bytes))
			die("gpo_optim_read");
	return now_s() - t0;
}

static void row(const char *op, uint64_t bytes, double t, double limit_t,
		const char *limit, double peer_t)
{
	double gbs = bytes / t / 1e9;

	printf("%-8s %9.3f %8.3f %8.2f  %-14s %8.2f %6.1f%% %8.2f %6.2fx\n",
	       op, bytes / 1073741824.0, t, gbs, limit, bytes / limit_t / 1e9,
	       100.0 * limit_t / t, bytes / peer_t / 1e9, peer_t / t);
}

static void run_size(struct bench *b, struct gpo_device *dev,
		     uint64_t bytes)
{
	double tw[MAXREPS], tr[MAXREPS], pw[MAXREPS], pr[MAXREPS];
	double sv[MAXREPS], rs[MAXREPS], dh[MAXREPS], dp[MAXREPS];
	struct gpo_optim *opt = make_state(dev, bytes);
	uint64_t fbytes = gpo_optim_numel(opt) * 12;
	float *page, *pin;
	char *blk;
	int r;

	if (posix_memalign((void **)&blk, 4096, BLOCK))
		sys_die("posix_memalign");
	page = malloc(fbytes / 3);
	if (!page)
		sys_die("malloc");
	if (gpo_host_alloc(dev, fbytes / 3, (void **)&pin))
		die("gpo_host_alloc");
	memset(blk, 0x5a, BLOCK);
	for (r = 0; r < b->reps; r++) {
		tw[r] = seq_io(b->path_direct, fbytes, 1, !b->tmpfs, blk);
		tr[r] = seq_io(b->path_direct, fbytes, 0, !b->tmpfs, blk);
		pw[r] = seq_io(b->path_plain, fbytes, 1, 0, blk);
		pr[r] = seq_io(b->path_plain, fbytes, 0, 0, blk);
		unlink(b->path_direct);
		unlink(b->path_plain);
		dh[r] = d2h(opt, page);
		dp[r] = d2h(opt, pin);
		sv[r] = now_s();
		if (gpo_optim_save(opt, b->path_ckpt, 0))
			die("gpo_optim_save");
		sv[r] = now_s() - sv[r];
		drop_cache(b->path_ckpt);
		rs[r] = now_s();
		if (gpo_optim_restore(opt, b->path_ckpt, 0))
			die("gpo_optim_restore");
		rs[r] = now_s() - rs[r];
		unlink(b->path_ckpt);
	}
	printf("\n# %.3f GiB of AdamW state (%llu parameters), %d run(s), median\n",
	       fbytes / 1073741824.0,
	       (unsigned long long)gpo_optim_numel(opt), b->reps);
	printf("%-8s %9s %8s %8s  %-14s %8s %7s %8s %7s\n", "op", "GiB",
	       "seconds", "GB/s", "limit", "GB/s", "ratio", "peer GB/s",
	       "vs peer");
	row("save", fbytes, median(sv, b->reps), median(tw, b->reps),
	    b->tmpfs ? "tmpfs write" : "O_DIRECT write", median(pw, b->reps));
	row("restore", fbytes, median(rs, b->reps), median(tr, b->reps),
	    b->tmpfs ? "tmpfs read" : "O_DIRECT read", median(pr, b->reps));
	printf("%-8s %9.3f %8.3f %8.2f  (device to pageable host memory, no file)\n",
	       "D2H", fbytes / 1073741824.0, median(dh, b->reps),
	       fbytes / median(dh, b->reps) / 1e9);
	printf("%-8s %9.3f %8.3f %8.2f  (device to pinned host memory, no file)\n",
	       "D2H pin", fbytes / 1073741824.0, median(dp, b->reps),
	       fbytes / median(dp, b->reps) / 1e9);
	gpo_host_free(dev, pin);
	free(page);
	free(blk);
	gpo_optim_free(opt);
}

int main(int argc, char **argv)
{
	struct bench b = { .device = "cpu", .dir = ".", .reps = 1 };
	const char *sizes = "1G,4G";
	struct gpo_device_info info;
	struct gpo_device *dev;
	struct statfs fs;
	struct gpo_ctx *ctx;
	char *list, *tok, *save;
	int c;

	while ((c = getopt(argc, argv, "d:D:s:r:h")) != -1) {
		switch (c) {
		case 'd': b.device = optarg; break;
		case 'D': b.dir = optarg; break;
		case 's': sizes = optarg; break;
		case 'r': b.reps = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-d DEVICE] [-D DIR] [-s 1G,4G] [-r REPS]\n",
				argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	if (b.reps < 1 || b.reps > MAXREPS)
		b.reps = 1;
	snprintf(b.path_direct, sizeof(b.path_direct), "%s/bench_ckpt.direct",
		 b.dir);
	snprintf(b.path_plain, sizeof(b.path_plain), "%s/bench_ckpt.plain",
		 b.dir);
	snprintf(b.path_ckpt, sizeof(b.path_ckpt), "%s/bench_ckpt.safetensors",
		 b.dir);
	if (gpo_ctx_new(&ctx, 0) || gpo_device_select(ctx, b.device, &dev))
		die("device");
	if (!statfs(b.dir, &fs) && fs.f_type == TMPFS_MAGIC)
		b.tmpfs = 1;
	gpo_device_info(ctx, gpo_device_index(dev), &info);
	printf("# bench_ckpt: %s (%s), directory %s%s%s\n", info.id, info.name,
	       b.dir, b.tmpfs ? " (tmpfs)" : "",
	       geteuid() ? "" : ", page cache dropped before reads");
	if (b.tmpfs)
		printf("# limit: write() and read() of 8 MiB blocks to tmpfs "
		       "(a memory copy);\n");
	else
		printf("# limit: the disk's sequential direct-I/O rate (8 MiB "
		       "blocks, as dd oflag=direct / iflag=direct);\n");
	printf("# peer: plain write()+fsync / read() of the same bytes\n");
	list = strdup(sizes);
	for (tok = strtok_r(list, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save))
		run_size(&b, dev, parse_size(tok));
	free(list);
	gpo_ctx_free(ctx);
	return 0;
}
