/* SPDX-License-Identifier: MIT */
/*
 * worker_i.h - inside gpuoptfs-worker: one job's optimizer and its model
 *
 * A model kind is a small table of operations, so a new kind (a dataset
 * trained through the tensor engine) is a new table here and nothing in
 * the protocol or the daemon changes.
 */
#ifndef WORKER_I_H
#define WORKER_I_H

#include <stdint.h>
#include <gpuopt.h>
#include "proto.h"

struct wk;

struct model_ops {
	const char *name;
	/* fill the flat start params @x of @b->numel floats */
	int (*init)(struct wk *w, const struct wp_build *b, float *x);
	/*
	 * or (when set, instead of the tensors of @b and init) make the
	 * model's tensors and start params in @opt from the model text
	 * @text, keeping what it needs in *@state
	 */
	int (*setup)(struct wk *w, const struct wp_build *b,
		     struct gpo_optim *opt, const char *text, void **state,
		     uint64_t *steps_per_epoch);
	/* free *state of setup() (before its optimizer goes) */
	void (*release)(void *state);
	/* one step: measure the loss, step the optimizer, report in @st */
	int (*step)(struct wk *w, struct wp_stat *st);
	/* the loss now without stepping, or -ENOSYS */
	int (*eval)(struct wk *w, double *loss);
	/* a line about the model for messages */
	void (*describe)(struct wk *w, char *buf, size_t len);
	/* @n bytes after @prompt, or NULL: the model generates nothing */
	int (*sample)(struct wk *w, const void *prompt, size_t len,
		      double temperature, uint64_t seed, void *out, size_t n);
};

struct wk {
	const char *job;
	struct gpo_ctx *ctx;
	struct gpo_device *dev;	/* the optimizer's, once built */
	struct gpo_optim *opt;
	struct gpo_sched *sched;
	const struct model_ops *model;
	void *mstate;		/* the model's, from setup() */
	char model_name[32];
	struct wp_tensor *t;
	uint32_t ntensors;
	uint64_t numel;
	char schedule[32];
	void *map;			/* the whole memfd, mapped */
	uint64_t map_size;
	void *shm;			/* the command's bytes: map + wp_req.off */
	uint64_t shm_size;		/* from there to the end */
	char msg[WP_MSG_MAX];	/* the error of the command being served */
	unsigned int fault;	/* FAULT_* for this job, tests only */
	/*
	 * gpuoptfs-worker-mpi (a job with ranks=): this process is rank
	 * @rank of @nranks; rank 0 speaks to the daemon and hands every
	 * command that changes the model to the others (worker.c). @comm
	 * is the gpo_comm a model trained on data attaches to.
	 */
	int rank;
	int nranks;
	void *comm;
	/*
	 * a model attaches to @comm at its first step, so that what the
	 * daemon sets before (settings, params, a restore) is in it;
	 * with zero=1 (@zero) each rank's shard optimizer then holds the
	 * state, and @attached says that one is in use
	 */
	int zero;
	int attached;
	int timeout_s;		/* the longest wait on the others; 0: none */
	int mpi_broken;		/* a wait timed out: the job must end */
};

#define FAULT_ABORT	0x1	/* abort() in the first step, as a driver */
#define FAULT_HANG	0x2	/* stop answering in the first step */
#define FAULT_EXIT	0x4	/* exit(3) in the first step */
#define FAULT_OOM	0x8	/* allocate until the limit stops it */

/* wk_err - set the command's error message and return @err */
int wk_err(struct wk *w, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* wk_lib_err - the same with the library's gpo_errmsg() */
int wk_lib_err(struct wk *w, int err);
/* wk_fault - the test build's injected fault, when one is due now */
void wk_fault(struct wk *w);
/* wk_step_info - copy a library step's numbers into @st */
void wk_step_info(struct wk *w, const struct gpo_step_info *si,
		  struct wp_stat *st);

/* models.c */
const struct model_ops *model_ops_find(const char *name);

#endif /* WORKER_I_H */
