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

/* ---- model.c: models from a spec ---------------------------------------- */

enum model_act {
	ACT_RELU, ACT_GELU, ACT_GELU_TANH, ACT_TANH, ACT_SIGMOID, ACT_COUNT
};

enum model_loss { LOSS_XENT, LOSS_MSE };

#define MODEL_MAX_WIDTHS	65

struct gpo_model {
	struct gpo_optim *opt;
	char spec[256];
	uint32_t width[MODEL_MAX_WIDTHS];	/* in, hidden..., out */
	int nwidth;
	enum model_act act;
	enum model_loss loss;
	uint64_t seed;
};

/* the model's loss of @logits against i32 @labels, in @g */
struct gpo_tensor *gpo__model_loss(struct gpo_model *m, struct gpo_graph *g,
				   struct gpo_tensor *logits,
				   struct gpo_tensor *labels);

#endif /* GPUOPT_TRAIN_I_H */
