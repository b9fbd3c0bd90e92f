// SPDX-License-Identifier: MIT
/*
 * test_xfer.c - host <-> device transfers on every device: from and to
 * pinned memory (gpo_host_alloc) and pageable memory, at odd sizes and
 * odd host offsets, through small staging slots (many chunks, ranges
 * across chunk boundaries) and the default paths; bytes equal after each
 * round trip. Pinned memory's bad input, a pointer only partly inside a
 * pinned range, freeing pinned memory with copies queued, several
 * threads transferring on one device, staging copies split over threads,
 * the tensor engine's transfers, and checkpoints through pinned staging.
 *
 * Transfers go through an SGD optimizer's parameter buffer: tensors of
 * odd element counts packed back to back put device offsets anywhere.
 * Data are random bytes with no zero among them, read back into zeroed
 * memory, so a byte that was not written fails the comparison.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"
#include <unistd.h>
#include "core/gpuopt_i.h"
#include "io/uring_i.h"

#define MAX_DEV		TU_MAX_DEVICES
/* staging=65536: slots of 16384 bytes on Vulkan and OpenCL */
#define SMALL_STAGING	"staging=65536"
#define SLOT_BYTES	16384

/* Every wanted device of a fresh context (the debug variables apply). */
static int open_all(struct gpo_ctx **ctx, struct gpo_device **devs)
{
	int i, n = 0, count;

	ck_assert_int_eq(gpo_ctx_new(ctx, 0), 0);
	count = gpo_device_count(*ctx);
	for (i = 0; i < count && n < MAX_DEV; i++) {
		struct gpo_device_info info;

		ck_assert_int_eq(gpo_device_info(*ctx, i, &info), 0);
		if (!tu_wanted(&info))
			continue;
		if (gpo_device_get(*ctx, i, &devs[n])) {
			fprintf(stderr, "skipping %s: %s\n", info.id,
				gpo_errmsg());
			continue;
		}
		n++;
	}
	ck_assert_int_ge(n, 1);
	return n;
}

static void fill_bits(void *p, size_t bytes, uint64_t *s)
{
	unsigned char *c = p;
	size_t i;

	for (i = 0; i < bytes; i++) {
		*s ^= *s << 13;
		*s ^= *s >> 7;
		*s ^= *s << 17;
		/* never 0, so a zeroed byte is a missed one */
		c[i] = (unsigned char)(*s % 255 + 1);
	}
}

/* An SGD optimizer whose parameters are tensors of @n[0..k-1] floats. */
static struct gpo_optim *make_opt(struct gpo_device *dev, const uint64_t *n,
				  int k)
{
	struct gpo_optim *opt;
	char name[16];
	int i;

	ck_assert_int_eq(gpo_optim_new(dev, GPO_SGD, &opt), 0);
	for (i = 0; i < k; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_int_eq(gpo_optim_add_tensor(opt, name, 1, &n[i], 0),
				 i);
	}
	return opt;
}

/*
 * One round trip of every tensor of @opt and of the whole buffer:
 * written from @src + @soff, read into @dst + @doff (poisoned first),
 * compared. @src and @dst may be pinned or pageable.
 */
static void round_trip(struct gpo_optim *opt, const uint64_t *n, int k,
		       unsigned char *src, size_t soff, unsigned char *dst,
		       size_t doff, uint64_t *s, const char *what)
{
	uint64_t total = 0;
	size_t pos = 0;
	char name[16];
	int i;

	for (i = 0; i < k; i++)
		total += n[i];
	fill_bits(src + soff, total * 4, s);
	/* tensor by tensor in, the whole buffer out */
	for (i = 0; i < k; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_msg(!gpo_optim_write(opt, "param", name,
					       src + soff + pos, n[i] * 4),
			      "%s: write t%d: %s", what, i, gpo_errmsg());
		pos += n[i] * 4;
	}
	memset(dst + doff, 0, total * 4);
	ck_assert_msg(!gpo_optim_read(opt, "param", NULL, dst + doff,
				      total * 4),
		      "%s: read: %s", what, gpo_errmsg());
	ck_assert_msg(!memcmp(src + soff, dst + doff, total * 4),
		      "%s: bytes differ after a round trip", what);

	/* the whole buffer in, tensor by tensor out */
	fill_bits(src + soff, total * 4, s);
	ck_assert_msg(!gpo_optim_write(opt, "param", NULL, src + soff,
				       total * 4),
		      "%s: write: %s", what, gpo_errmsg());
	memset(dst + doff, 0, total * 4);
	for (i = 0, pos = 0; i < k; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		ck_assert_msg(!gpo_optim_read(opt, "param", name,
					      dst + doff + pos, n[i] * 4),
			      "%s: read t%d: %s", what, i, gpo_errmsg());
		pos += n[i] * 4;
	}
	ck_assert_msg(!memcmp(src + soff, dst + doff, total * 4),
		      "%s: bytes differ after a round trip", what);
}

/*
 * Every pairing of pinned and pageable memory, at odd host offsets, on
 * each device of a context opened with the current debug variables.
 * @n: tensor sizes in floats.
 */
static void check_all_pairings(const uint64_t *n, int k, const char *tag)
{
	struct gpo_device *devs[MAX_DEV];
	struct gpo_ctx *ctx;
	uint64_t s = tu_rng(tag), total = 0;
	int ndev = open_all(&ctx, devs), d, i;
	size_t bytes;

	for (i = 0; i < k; i++)
		total += n[i];
	bytes = total * 4 + 64;
	for (d = 0; d < ndev; d++) {
		unsigned char *pin[2], *page[2];
		char what[128];
		struct gpo_optim *opt = make_opt(devs[d], n, k);

		for (i = 0; i < 2; i++) {
			ck_assert_msg(!gpo_host_alloc(devs[d], bytes,
						      (void **)&pin[i]),
				      "%s: gpo_host_alloc: %s",
				      tu_device_id(devs[d]), gpo_errmsg());
			page[i] = malloc(bytes);
			ck_assert_ptr_nonnull(page[i]);
		}
		snprintf(what, sizeof(what), "%s %s pinned->pinned",
			 tu_device_id(devs[d]), tag);
		round_trip(opt, n, k, pin[0], 0, pin[1], 0, &s, what);
		snprintf(what, sizeof(what), "%s %s pinned+3->pageable+5",
			 tu_device_id(devs[d]), tag);
		round_trip(opt, n, k, pin[0], 3, page[1], 5, &s, what);
		snprintf(what, sizeof(what), "%s %s pageable+1->pinned+7",
			 tu_device_id(devs[d]), tag);
		round_trip(opt, n, k, page[0], 1, pin[1], 7, &s, what);
		snprintf(what, sizeof(what), "%s %s pageable->pageable+2",
			 tu_device_id(devs[d]), tag);
		round_trip(opt, n, k, page[0], 0, page[1], 2, &s, what);
		/* a range that ends exactly at the pinned memory's end */
		snprintf(what, sizeof(what), "%s %s pinned tail",
			 tu_device_id(devs[d]), tag);
		round_trip(opt, n, k, pin[0], 64, pin[1], 64, &s, what);
		for (i = 0; i < 2; i++) {
			ck_assert_int_eq(gpo_host_free(devs[d], pin[i]), 0);
			free(page[i]);
		}
		gpo_optim_free(opt);
	}
	gpo_ctx_free(ctx);
}

/* Slots of 16 KiB: sizes around one slot, and many chunks. */
START_TEST(test_xfer_round_trips_through_small_slots)
{
	/* floats: 1 slot - 1, exactly 1, 1 + 1, then odd ones across many */
	static const uint64_t a[] = { 4095, 4096, 4097 };
	static const uint64_t b[] = { 7, 100003, 13, 40961 };
	static const uint64_t c[] = { 1, 3, 17 };

	setenv("GPUOPT_VULKAN_DEBUG", "nomap," SMALL_STAGING, 1);
	setenv("GPUOPT_OPENCL_DEBUG", SMALL_STAGING, 1);
	check_all_pairings(a, 3, "slot edges");
	check_all_pairings(b, 4, "many chunks");
	check_all_pairings(c, 3, "tiny");
	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_OPENCL_DEBUG");
}
END_TEST

/*
 * Staging copies split over threads (a machine with many cores does it
 * by itself): chunks of 16 MiB in default staging, in 3 parts.
 */
START_TEST(test_xfer_round_trips_with_copy_threads)
{
	static const uint64_t n[] = { 9, 5242883, 7 };

	if (tu_quick())
		return;
	setenv("GPUOPT_COPY_THREADS", "3", 1);
	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_OPENCL_DEBUG");
	check_all_pairings(n, 3, "copy threads");
	setenv("GPUOPT_VULKAN_DEBUG", "nomap", 1);
	check_all_pairings(n, 3, "copy threads, vulkan staging");
	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_COPY_THREADS");
}
END_TEST

/*
 * The paths a device takes by itself: mapped memory on lavapipe, and
 * above 16 MiB the slots of the default staging (OpenCL).
 */
START_TEST(test_xfer_round_trips_default_paths)
{
	static const uint64_t small[] = { 5, 1001, 65537 };
	static const uint64_t big[] = { 3, 4194311, 1048573 };

	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_OPENCL_DEBUG");
	check_all_pairings(small, 3, "default small");
	if (!tu_quick())
		check_all_pairings(big, 3, "default 20 MB");
}
END_TEST

START_TEST(test_xfer_host_alloc_bad_input)
{
	struct gpo_device *devs[MAX_DEV];
	struct gpo_ctx *ctx;
	int ndev = open_all(&ctx, devs), d;
	uint64_t s = tu_rng("bad input");

	for (d = 0; d < ndev; d++) {
		struct gpo_device *dev = devs[d];
		uint64_t n = 999;
		struct gpo_optim *opt = make_opt(dev, &n, 1);
		unsigned char *p = (void *)&n, *q;
		int local;

		ck_assert_int_eq(gpo_host_alloc(NULL, 64, (void **)&p),
				 -EINVAL);
		tu_check_errmsg("gpo_host_alloc(NULL dev)");
		ck_assert_int_eq(gpo_host_alloc(dev, 64, NULL), -EINVAL);
		tu_check_errmsg("gpo_host_alloc(NULL out)");
		ck_assert_int_eq(gpo_host_alloc(dev, 0, (void **)&p), -EINVAL);
		tu_check_errmsg("gpo_host_alloc(0 bytes)");
		ck_assert_ptr_eq(p, (void *)&n);
		ck_assert_int_eq(gpo_host_alloc(dev, SIZE_MAX / 2,
						(void **)&p), -ENOMEM);
		tu_check_errmsg("gpo_host_alloc(huge)");
		ck_assert_ptr_eq(p, (void *)&n);

		ck_assert_int_eq(gpo_host_alloc(dev, n * 4, (void **)&p), 0);
		ck_assert_ptr_nonnull(p);
		/* not the start of pinned memory, or not pinned at all */
		ck_assert_int_eq(gpo_host_free(dev, p + 4), -EINVAL);
		tu_check_errmsg("gpo_host_free(inside)");
		ck_assert_int_eq(gpo_host_free(dev, &local), -EINVAL);
		tu_check_errmsg("gpo_host_free(unknown)");
		ck_assert_int_eq(gpo_host_free(NULL, p), -EINVAL);
		ck_assert_int_eq(gpo_host_free(dev, NULL), 0);
		/* on another device: not its memory */
		if (ndev > 1)
			ck_assert_int_eq(gpo_host_free(devs[(d + 1) % ndev], p),
					 -EINVAL);
		/* none of that freed it: it still transfers */
		q = malloc(n * 4);
		ck_assert_ptr_nonnull(q);
		round_trip(opt, &n, 1, p, 0, q, 0, &s, "after bad frees");
		ck_assert_int_eq(gpo_host_free(dev, p), 0);
		ck_assert_int_eq(gpo_host_free(dev, p), -EINVAL);
		free(q);
		gpo_optim_free(opt);
	}
	gpo_ctx_free(ctx);
}
END_TEST

/*
 * Whether a range is pinned is decided for the whole range: one that
 * starts or ends outside pinned memory goes through staging.
 */
START_TEST(test_xfer_partly_pinned_range_is_not_pinned)
{
	struct gpo_device *devs[MAX_DEV];
	struct gpo_ctx *ctx;
	int ndev = open_all(&ctx, devs), d;

	for (d = 0; d < ndev; d++) {
		struct gpo_device *dev = devs[d];
		struct host_mem hm;
		unsigned char *p;
		size_t size = 10007;

		ck_assert_int_eq(gpo_host_alloc(dev, size, (void **)&p), 0);
		ck_assert_int_eq(gpo__host_find(dev, p, size, &hm), 1);
		ck_assert_ptr_eq(hm.ptr, p);
		ck_assert_uint_eq(hm.size, size);
		ck_assert_int_eq(gpo__host_find(dev, p + 1, size - 1, &hm), 1);
		ck_assert_int_eq(gpo__host_find(dev, p + 5, 1, &hm), 1);
		/* one byte past the end, one before the start */
		ck_assert_int_eq(gpo__host_find(dev, p + 1, size, &hm), 0);
		ck_assert_int_eq(gpo__host_find(dev, p + size - 1, 2, &hm), 0);
		ck_assert_int_eq(gpo__host_find(dev, p - 1, 2, &hm), 0);
		ck_assert_int_eq(gpo__host_find(dev, p + size, 1, &hm), 0);
		ck_assert_int_eq(gpo__host_find(dev, p, UINT64_MAX, &hm), 0);
		ck_assert_int_eq(gpo_host_free(dev, p), 0);
		ck_assert_int_eq(gpo__host_find(dev, p, 1, &hm), 0);
	}
	gpo_ctx_free(ctx);
}
END_TEST

/*
 * Copies queued when pinned memory is freed: a small write from pageable
 * memory waits in Vulkan's batch; the free must not lose or break it.
 * Also a step queued behind a write from pinned memory.
 */
START_TEST(test_xfer_free_pinned_with_work_queued)
{
	struct gpo_device *devs[MAX_DEV];
	struct gpo_ctx *ctx;
	int ndev = open_all(&ctx, devs), d, r;
	uint64_t s = tu_rng("free queued");

	for (d = 0; d < ndev; d++) {
		uint64_t n = 4099;
		struct gpo_optim *opt = make_opt(devs[d], &n, 1);
		unsigned char *pin, *src = malloc(n * 4), *back = malloc(n * 4);
		float *grad = malloc(n * 4);

		ck_assert_ptr_nonnull(src);
		ck_assert_ptr_nonnull(back);
		ck_assert_ptr_nonnull(grad);
		for (r = 0; r < 3; r++) {
			ck_assert_int_eq(gpo_host_alloc(devs[d], n * 4,
							(void **)&pin), 0);
			fill_bits(pin, n * 4, &s);
			ck_assert_int_eq(gpo_optim_write(opt, "param", NULL,
							 pin, n * 4), 0);
			fill_bits(src, n * 4, &s);
			/* queued: the batch has not run when the free comes */
			ck_assert_int_eq(gpo_optim_write(opt, "param", NULL,
							 src, n * 4), 0);
			ck_assert_int_eq(gpo_host_free(devs[d], pin), 0);
			memset(back, 0, n * 4);
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL,
							back, n * 4), 0);
			ck_assert_msg(!memcmp(src, back, n * 4),
				      "%s: the queued write was lost",
				      tu_device_id(devs[d]));
		}
		/* a step queued after a write from pinned memory, then a free */
		ck_assert_int_eq(gpo_host_alloc(devs[d], n * 4, (void **)&pin),
				 0);
		tu_fill(grad, n, &s, -1, 1);
		memcpy(pin, grad, n * 4);
		ck_assert_int_eq(gpo_optim_write(opt, "grad", NULL, pin, n * 4),
				 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
		ck_assert_int_eq(gpo_host_free(devs[d], pin), 0);
		ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, back,
						n * 4), 0);
		free(src);
		free(back);
		free(grad);
		gpo_optim_free(opt);
	}
	gpo_ctx_free(ctx);
}
END_TEST

/* ---- several threads on one device --------------------------------------- */

#define THREADS		4
#define ROUNDS		12

struct worker {
	struct gpo_device *dev;
	uint64_t seed;
	int fails;
	char msg[256];
};

static void *work(void *arg)
{
	struct worker *w = arg;
	/* odd sizes, one beyond a slot of the small staging */
	uint64_t n = SLOT_BYTES / 4 * 3 + 1 + (w->seed % 7) * 2;
	unsigned char *pin = NULL, *page = malloc(n * 4), *back = malloc(n * 4);
	struct gpo_optim *opt = NULL;
	uint64_t s = w->seed;
	int r, pinned;

	if (!page || !back || gpo_optim_new(w->dev, GPO_SGD, &opt) ||
	    gpo_optim_add_tensor(opt, "x", 1, &n, 0) < 0 ||
	    gpo_host_alloc(w->dev, n * 4, (void **)&pin)) {
		snprintf(w->msg, sizeof(w->msg), "setup: %s", gpo_errmsg());
		w->fails++;
		goto out;
	}
	for (r = 0; r < ROUNDS && !w->fails; r++) {
		pinned = r % 2;
		fill_bits(pinned ? pin : page, n * 4, &s);
		memset(back, 0, n * 4);
		if (gpo_optim_write(opt, "param", NULL, pinned ? pin : page,
				    n * 4) ||
		    gpo_optim_read(opt, "param", NULL, back, n * 4)) {
			snprintf(w->msg, sizeof(w->msg), "round %d: %s", r,
				 gpo_errmsg());
			w->fails++;
		} else if (memcmp(pinned ? pin : page, back, n * 4)) {
			snprintf(w->msg, sizeof(w->msg),
				 "round %d: bytes differ", r);
			w->fails++;
		}
	}
out:
	if (pin)
		gpo_host_free(w->dev, pin);
	gpo_optim_free(opt);
	free(page);
	free(back);
	return NULL;
}

START_TEST(test_xfer_threads_on_one_device)
{
	struct gpo_device *devs[MAX_DEV];
	struct worker w[THREADS];
	pthread_t th[THREADS];
	struct gpo_ctx *ctx;
	int ndev, d, i;
	uint64_t s = tu_rng("threads");

	setenv("GPUOPT_VULKAN_DEBUG", "nomap," SMALL_STAGING, 1);
	setenv("GPUOPT_OPENCL_DEBUG", SMALL_STAGING, 1);
	ndev = open_all(&ctx, devs);
	for (d = 0; d < ndev; d++) {
		for (i = 0; i < THREADS; i++) {
			memset(&w[i], 0, sizeof(w[i]));
			w[i].dev = devs[d];
			w[i].seed = s + 7919 * (uint64_t)(i + 1);
			ck_assert_int_eq(pthread_create(&th[i], NULL, work,
							&w[i]), 0);
		}
		for (i = 0; i < THREADS; i++)
			pthread_join(th[i], NULL);
		for (i = 0; i < THREADS; i++)
			ck_assert_msg(!w[i].fails, "%s thread %d: %s",
				      tu_device_id(devs[d]), i, w[i].msg);
	}
	gpo_ctx_free(ctx);
	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_OPENCL_DEBUG");
}
END_TEST

/*
 * The tensor engine's transfers (gpo_tensor_write/read): i32 input
 * tensors of odd lengths, from and to pinned and pageable memory at odd
 * offsets, through small slots and the default paths.
 */
static void check_tensor_bytes(const char *tag)
{
	static const uint64_t sizes[] = { 1, 4095, 4097, 25001 };
	const uint64_t most = 25001 * 4;
	struct gpo_device *devs[MAX_DEV];
	struct gpo_ctx *ctx;
	uint64_t s = tu_rng(tag);
	int ndev = open_all(&ctx, devs), d, k, i;

	for (d = 0; d < ndev; d++) {
		struct gpo_graph *g;
		struct gpo_tensor *t[4];
		unsigned char *pin, *page;
		char name[16];

		ck_assert_int_eq(gpo_graph_new(devs[d], &g), 0);
		for (k = 0; k < 4; k++) {
			snprintf(name, sizeof(name), "b%d", k);
			t[k] = gpo_tensor_input(g, name, GPO_I32, 1, &sizes[k]);
			ck_assert_msg(t[k] != NULL, "%s", gpo_errmsg());
		}
		ck_assert_int_eq(gpo_host_alloc(devs[d], 2 * most + 64,
						(void **)&pin), 0);
		page = malloc(2 * most + 64);
		ck_assert_ptr_nonnull(page);
		for (k = 0; k < 4; k++)
			for (i = 0; i < 4; i++) {
				/* i: pinned or pageable source and target */
				unsigned char *src = (i & 1 ? page : pin) + 1;
				unsigned char *dst = (i & 2 ? page : pin) +
						     most + 7 + i;
				uint64_t bytes = sizes[k] * 4;

				fill_bits(src, bytes, &s);
				memset(dst, 0, bytes);
				ck_assert_msg(!gpo_tensor_write(t[k], src,
								bytes),
					      "%s", gpo_errmsg());
				ck_assert_msg(!gpo_tensor_read(t[k], dst,
							       bytes),
					      "%s", gpo_errmsg());
				ck_assert_msg(!memcmp(src, dst, bytes),
					      "%s %s: %llu elements, case %d differ",
					      tu_device_id(devs[d]), tag,
					      (unsigned long long)sizes[k], i);
			}
		gpo_graph_free(g);
		ck_assert_int_eq(gpo_host_free(devs[d], pin), 0);
		free(page);
	}
	gpo_ctx_free(ctx);
}

START_TEST(test_xfer_tensor_odd_lengths)
{
	setenv("GPUOPT_VULKAN_DEBUG", "nomap," SMALL_STAGING, 1);
	setenv("GPUOPT_OPENCL_DEBUG", SMALL_STAGING, 1);
	check_tensor_bytes("tensor small slots");
	unsetenv("GPUOPT_VULKAN_DEBUG");
	unsetenv("GPUOPT_OPENCL_DEBUG");
	check_tensor_bytes("tensor default");
}
END_TEST

/* ---- checkpoints through pinned staging ---------------------------------- */

/*
 * Save and restore on every device, with direct and buffered I/O, at the
 * default chunks and at chunks of 8 KiB, three in flight (a tensor across
 * many chunks): the parameters and momentum come back byte for byte.
 */
START_TEST(test_xfer_checkpoint_through_staging_round_trips)
{
	static const uint64_t n[] = { 3, 100003, 4099 };
	struct gpo_device *devs[MAX_DEV];
	char dir[] = "/tmp/gpo_xfer_XXXXXX", path[64];
	uint64_t s = tu_rng("ckpt staging"), total = 100003 + 4099 + 3;
	unsigned char *want[2], *got = malloc(total * 4);
	const char *slots[2] = { "param", "momentum_buffer" };
	struct gpo_ctx *ctx;
	int ndev = open_all(&ctx, devs), d, k, i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/x.safetensors", dir);
	for (i = 0; i < 2; i++) {
		want[i] = malloc(total * 4);
		ck_assert_ptr_nonnull(want[i]);
	}
	ck_assert_ptr_nonnull(got);
	for (d = 0; d < ndev; d++) {
		for (k = 0; k < 4; k++) {
			struct gpo_optim *opt = make_opt(devs[d], n, 3);
			unsigned int flags = k % 2 ? GPO_CKPT_BUFFERED : 0;

			ck_assert_int_eq(gpo_optim_configure(opt, -1,
						"momentum=0.9"), 0);
			memset(&gpo__ckpt_tune, 0, sizeof(gpo__ckpt_tune));
			if (k >= 2) {
				gpo__ckpt_tune.chunk = 8192;
				gpo__ckpt_tune.nbuf = 3;
			}
			for (i = 0; i < 2; i++) {
				fill_bits(want[i], total * 4, &s);
				ck_assert_int_eq(gpo_optim_write(opt, slots[i],
						NULL, want[i], total * 4), 0);
			}
			ck_assert_msg(!gpo_optim_save(opt, path, flags),
				      "%s save: %s", tu_device_id(devs[d]),
				      gpo_errmsg());
			/* other bytes in the device, then the file's back */
			for (i = 0; i < 2; i++) {
				fill_bits(got, total * 4, &s);
				ck_assert_int_eq(gpo_optim_write(opt, slots[i],
						NULL, got, total * 4), 0);
			}
			ck_assert_msg(!gpo_optim_restore(opt, path, flags),
				      "%s restore: %s", tu_device_id(devs[d]),
				      gpo_errmsg());
			for (i = 0; i < 2; i++) {
				memset(got, 0, total * 4);
				ck_assert_int_eq(gpo_optim_read(opt, slots[i],
						NULL, got, total * 4), 0);
				ck_assert_msg(!memcmp(got, want[i], total * 4),
					      "%s %s (case %d): bytes differ",
					      tu_device_id(devs[d]), slots[i],
					      k);
			}
			gpo_optim_free(opt);
		}
	}
	memset(&gpo__ckpt_tune, 0, sizeof(gpo__ckpt_tune));
	unlink(path);
	rmdir(dir);
	for (i = 0; i < 2; i++)
		free(want[i]);
	free(got);
	gpo_ctx_free(ctx);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xfer");
	TCase *tc = tcase_create("xfer");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_xfer_round_trips_through_small_slots);
	tcase_add_test(tc, test_xfer_round_trips_default_paths);
	tcase_add_test(tc, test_xfer_round_trips_with_copy_threads);
	tcase_add_test(tc, test_xfer_host_alloc_bad_input);
	tcase_add_test(tc, test_xfer_partly_pinned_range_is_not_pinned);
	tcase_add_test(tc, test_xfer_free_pinned_with_work_queued);
	tcase_add_test(tc, test_xfer_threads_on_one_device);
	tcase_add_test(tc, test_xfer_checkpoint_through_staging_round_trips);
	tcase_add_test(tc, test_xfer_tensor_odd_lengths);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
