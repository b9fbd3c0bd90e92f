/* SPDX-License-Identifier: MIT */
/*
 * gpuopt_i.h - private definitions shared by the library's files
 */
#ifndef GPUOPT_I_H
#define GPUOPT_I_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include "gpuopt.h"
#include "backend/backend_i.h"
/* ARRAY_SIZE, GPO_PRINTF, gpo__err(), the parsers and gpo__kv_next() */
#include "common/common.h"

/* pool.c: sub-allocation from large device allocations */
struct pool_block;

struct pool {
	pthread_mutex_t lock;
	struct pool_block *blocks;
	uint64_t limit;
	uint64_t capacity;
	uint64_t used;
	uint64_t peak;
	uint64_t allocs;
	uint64_t frees;
	uint64_t failures;
};

void gpo__pool_init(struct pool *pool);
void gpo__pool_destroy(struct gpo_device *dev);
int gpo__pool_alloc(struct gpo_device *dev, uint64_t bytes, struct dev_buf *out);
void gpo__pool_free(struct gpo_device *dev, struct dev_buf *buf);

/*
 * hostmem.c: pinned host memory (gpo_host_alloc). A device keeps the
 * ranges it handed out, so that a transfer given a pointer into one can
 * copy by DMA straight from or to it.
 */
struct host_ranges {
	pthread_mutex_t lock;
	struct host_mem *v;		/* sorted by ptr */
	int n, cap;
};

void gpo__host_init(struct host_ranges *hr);
/* free what the caller left, before the backend closes */
void gpo__host_destroy(struct gpo_device *dev);
/*
 * gpo__host_find - 1 with *@out a copy of the pinned range holding all of
 * [@p, @p + @bytes), else 0. The copy stays usable while the caller
 * holds what the backend's host_free() takes before it frees.
 */
int gpo__host_find(struct gpo_device *dev, const void *p, uint64_t bytes,
		   struct host_mem *out);
/*
 * gpo__host_copy - memcpy() for staging chunks: split over a few threads
 * on a machine with cores to spare (one thread's copy is a third of what
 * the bus moves); GPUOPT_COPY_THREADS=N sets the count (1: plain memcpy)
 */
void gpo__host_copy(void *dst, const void *src, uint64_t bytes);

struct gpo_device {
	struct gpo_ctx *ctx;
	const struct backend_ops *ops;
	struct gpo_device_info info;
	void *priv;			/* the backend's */
	int opened;
	int gone;			/* a rescan no longer found it */
	int adopted;			/* runs on the caller's objects */
	/* serialises launch..wait sequences of different optimizers */
	pthread_mutex_t lock;
	uint64_t mem_align;		/* sub-allocation alignment, set by open */
	uint64_t max_alloc;		/* largest single allocation, by open */
	/*
	 * bytes one buffer argument of a group op may span, by open; 0: no
	 * limit. Element ops are windowed by the backend; group ops bind what
	 * they are given, so callers launch them in runs that fit.
	 */
	uint64_t max_binding;
	/*
	 * loop iterations one work-item may run in all before the driver
	 * ends its loops, by open; 0: no limit (lavapipe: 65535, abi/tensor.h)
	 */
	uint32_t loop_limit;
	struct pool pool;
	struct host_ranges host;	/* pinned host memory (hostmem.c) */
};

#define PROBE_LOG_MAX 4096

struct gpo_ctx {
	pthread_mutex_t lock;
	struct gpo_device **devs;
	int ndevs;
	char probe_log[PROBE_LOG_MAX];
};

/*
 * gpo__ctx_add_device - called by a backend's probe for each device it finds
 * @info: filled by the backend except index, id and enabled
 * @priv: the backend's per-device data, kept in dev->priv
 */
int gpo__ctx_add_device(struct gpo_ctx *ctx, const struct backend_ops *ops,
		   const struct gpo_device_info *info, void *priv);

/* gpo__ctx_log - append a line to the context's probe log */
void gpo__ctx_log(struct gpo_ctx *ctx, const char *fmt, ...) GPO_PRINTF(2, 3);

/*
 * gpo__ctx_adopt_device - called by a backend's adopt: add a device that
 * runs on the caller's objects (@priv holds them), open it, return it in
 * @out; on failure the device is not added and @priv is the caller's to
 * free. Never picked by "best", left alone by rescans.
 */
int gpo__ctx_adopt_device(struct gpo_ctx *ctx, const struct backend_ops *ops,
			  const struct gpo_device_info *info, void *priv,
			  struct gpo_device **out);

/* gpo__device_open - open on first use; takes ctx->lock */
int gpo__device_open(struct gpo_device *dev);

/* hparam.c */
struct hparams {
	double lr;
	double weight_decay;
	double momentum;
	double dampening;
	double beta1;
	double beta2;
	double eps;
	double alpha;
	double lr_decay;
	double initial_accumulator_value;
	double clip_norm;		/* optimizer-wide, kept in group 0 */
	double grad_scale;		/* optimizer-wide */
	/* loss scaling, optimizer-wide: 1 off, 0 dynamic, else fixed */
	double loss_scale;
	double init_scale;		/* dynamic: the first scale */
	double growth_interval;		/* dynamic: good steps to double */
	/*
	 * optimizer-wide: with f16/bf16 params, keep an f32 master copy
	 * (1, the default) or round stochastically (0, bf16)
	 */
	int master_weights;
	int nesterov;
	int amsgrad;
	int maximize;
	int centered;
	int check_finite;		/* optimizer-wide */
};

void gpo__hparams_defaults(enum gpo_optim_kind kind, struct hparams *hp);
int gpo__hparams_set(enum gpo_optim_kind kind, struct hparams *hp,
		const char *key, const char *value, int *is_global);
int gpo__hparams_get(enum gpo_optim_kind kind, const struct hparams *hp,
		const char *key, double *value);
int gpo__hparams_validate(enum gpo_optim_kind kind, const struct hparams *hp);
int gpo__hparams_describe(enum gpo_optim_kind kind, const struct hparams *hp,
		     char *buf, size_t len);

/* sched.c, used by optim.c */
double gpo__sched_lr_for(struct gpo_sched *s, double base_lr);

#endif /* GPUOPT_I_H */
