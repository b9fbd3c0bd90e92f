/* SPDX-License-Identifier: MIT */
/*
 * train_i.h - training: what the engine reads of a dataset (data.c)
 */
#ifndef GPUOPT_TRAIN_I_H
#define GPUOPT_TRAIN_I_H

#include <stdint.h>
#include "core/gpuopt_i.h"

/* Samples in host memory: x [n, features] row-major f32, y [n] labels. */
struct dataset_part {
	float *x;
	int32_t *y;
	uint64_t n;
};

/*
 * A loaded dataset. Both parts live in one allocation each for x and y,
 * training first: with a held-out split the evaluation part is simply the
 * file's tail. Labels are in 0..classes-1.
 */
struct gpo_dataset {
	struct dataset_part train;
	struct dataset_part eval;	/* n == 0: nothing to evaluate on */
	uint32_t features;
	uint32_t classes;
	int eval_held_out;		/* eval is the last floor(N / 10) of train's file */
	char *source;			/* the training file(s), for messages */
	char *eval_source;		/* where eval came from */
	float *xbuf;			/* what train.x and eval.x point into */
	int32_t *ybuf;
	uint64_t host_bytes;
	int is_bytes;			/* GPO_DATASET_BYTES: train.n and
					 * eval.n count bytes, x and y are
					 * NULL */
	uint8_t *bytes;			/* the file: train, then eval */
};

/*
 * gpo__dataset_order - the order of the training samples in @epoch
 * @order: ds->train.n entries
 *
 * The identity when @shuffle is 0; else a permutation drawn from (@seed,
 * GPO_RNG_STREAM(GPO_RNG_SHUFFLE, @epoch)), the same on every backend and
 * rank count. Returns 0, or -EINVAL (NULL arguments) or -EOVERFLOW (more
 * than UINT32_MAX samples).
 */
int gpo__dataset_order(const struct gpo_dataset *ds, uint64_t seed,
		       uint64_t epoch, int shuffle, uint32_t *order);

/* gpo__dataset_order() of @n samples (@what names them in messages) */
int gpo__sample_order(uint64_t n, uint64_t seed, uint64_t epoch,
		      int shuffle, uint32_t *order, const char *what);

/*
 * gpo__window_phase - a byte dataset's phase in @epoch: where its
 * windows start, 0..@max, drawn from (@seed, GPO_RNG_STREAM(
 * GPO_RNG_SHUFFLE, @epoch | GPO_RNG_PHASE_BIT), 0) (a sub-stream the
 * order's permutations never use); 0 when @max is 0
 */
#define GPO_RNG_PHASE_BIT	(1ull << 47)
uint32_t gpo__window_phase(uint64_t seed, uint64_t epoch, uint32_t max);

/*
 * Sharded steps (libgpuopt-mpi's comm/ sets them): the batch is cut into
 * @shards micro-shards of batch / shards rows, and this process runs
 * shards [@lo, @hi) one after another. After each one's backward the
 * optimizer's grad buffer holds that shard's gradient (it is written, not
 * added to) and @shard_done gets it with the shard's mean loss and
 * accuracy; then @reduce must leave the batch's gradient in the grad
 * buffer and its loss and accuracy in *loss and *acc before the
 * optimizer steps (or @step steps in its place). shards 0: plain steps.
 */
struct train_shards {
	uint32_t shards, lo, hi;
	int (*shard_done)(void *arg, uint32_t shard, double loss, double acc);
	int (*reduce)(void *arg, double *loss, double *acc);
	/* NULL: the model's optimizer steps; else this does (ZeRO-1) */
	int (*step)(void *arg, struct gpo_step_info *si);
	/*
	 * NULL: the last shard's backward runs in one piece. Else in
	 * segments: the grad buffer's buckets of @bucket_bytes (the last
	 * one shorter) in the order backward finishes them go to
	 * @last_begin before the first is queued, and after each segment
	 * is submitted @last_ready(arg, r) learns that the first r of them
	 * are final on the device (dev->lock not held; reads are ordered
	 * after the segment). Then @shard_done as for the others.
	 */
	uint64_t bucket_bytes;
	int (*last_begin)(void *arg, const uint64_t *order, uint64_t n);
	int (*last_ready)(void *arg, uint64_t ready);
	void *arg;
};

/*
 * gpo__train_set_shards - set @s (copied) on @t, rebuilding its training
 * graph for batch / shards rows; -EINVAL: batch_size not a multiple of
 * shards, a bad range
 */
int gpo__train_set_shards(struct gpo_train *t, const struct train_shards *s);

/* the optimizer @t steps (the model's) */
struct gpo_optim *gpo__train_optim(const struct gpo_train *t);

/* ---- model.c: models from a spec ---------------------------------------- */

enum model_act {
	ACT_RELU, ACT_GELU, ACT_GELU_TANH, ACT_TANH, ACT_SIGMOID, ACT_COUNT
};

enum model_loss { LOSS_XENT, LOSS_MSE };

enum model_kind { MODEL_MLP, MODEL_GPT };

#define MODEL_MAX_WIDTHS	65

/* how a parameter tensor starts */
enum init_kind { INIT_UNIFORM, INIT_NORMAL, INIT_CONST };

struct init_spec {
	enum init_kind kind;
	double a;		/* the bound, the standard deviation, the value */
};

struct gpo_model {
	struct gpo_optim *opt;
	char spec[256];
	enum model_kind kind;
	uint32_t width[MODEL_MAX_WIDTHS];	/* mlp: in, hidden..., out */
	int nwidth;
	enum model_act act;
	enum model_loss loss;
	uint64_t seed;
	uint32_t layers, heads, dim, ctx;	/* gpt */
	double dropout;
	struct init_spec *init;			/* one per optimizer tensor */
	/* gpo_model_sample(): a gpt graph of one sequence, built once */
	struct gpo_graph *sg;
	struct gpo_tensor *sx, *slogits;
};

/*
 * gpo__model_forward - the model's outputs for @x in @g; @train 0 leaves
 * out dropout (evaluation, sampling)
 */
struct gpo_tensor *gpo__model_forward(struct gpo_model *m, struct gpo_graph *g,
				      struct gpo_tensor *x, int train);

/* the model's loss of @logits against i32 @labels, in @g */
struct gpo_tensor *gpo__model_loss(struct gpo_model *m, struct gpo_graph *g,
				   struct gpo_tensor *logits,
				   struct gpo_tensor *labels);

/* ---- gpt.c: the byte-level GPT-2 ---------------------------------------- */

#define GPT_VOCAB	256

/*
 * gpo__gpt_new - parse @spec ("gpt:...") and @opts into @m and add its
 * parameters to m->opt, with m->init filled; on failure the optimizer's
 * tensors are the caller's to drop
 */
int gpo__gpt_new(struct gpo_model *m, const char *spec, const char *opts);

/* gpo__gpt_forward - logits [B * S, 256] of i32 @x [B, S], S <= ctx */
struct gpo_tensor *gpo__gpt_forward(struct gpo_model *m, struct gpo_graph *g,
				    struct gpo_tensor *x, int train);

/* gpo__gpt_free - what gpo_model_sample() kept */
void gpo__gpt_free(struct gpo_model *m);

#endif /* GPUOPT_TRAIN_I_H */
