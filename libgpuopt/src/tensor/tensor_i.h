/* SPDX-License-Identifier: MIT */
/*
 * tensor_i.h - the graph of tensors, for the tensor and training files
 *
 * A graph is a list of tensors in the order they were made, which is an
 * order of their dependencies. Nothing touches the device while it is
 * built. Its first run plans it (emit.c): every tensor, gradient and
 * temporary gets its place in the arena by a bump allocator, and every
 * op becomes its launches (struct op_call, with a parameter struct of
 * the op's family). Planning runs twice, the first time only counting
 * bytes, so the arena's blocks are allocated at their right sizes and
 * the second pass hands out the same places. The arena is one block, or
 * several where the device limits one allocation (Vulkan on NVIDIA: 4
 * GiB): a place never straddles two blocks. After that a run is the launch lists,
 * queued as they are.
 */
#ifndef GPUOPT_TENSOR_I_H
#define GPUOPT_TENSOR_I_H

#include "core/gpuopt_i.h"
#include "abi/mem.h"
#include "abi/matmul.h"
#include "abi/ew.h"
#include "abi/reduce.h"
#include "abi/softmax.h"
#include "abi/loss.h"
#include "abi/gather.h"
#include "abi/layernorm.h"
#include "abi/attention.h"
#include "abi/cast.h"

#define T_DIMS		GPO_TENSOR_DIMS
#define T_ALIGN		64	/* elements: places in the arena, 256 bytes */
#define T_GROUPS_CAP	4096	/* workgroups of a grid-stride launch */

enum t_op {
	T_INPUT,	/* filled by the caller */
	T_PARAM,	/* an optimizer tensor */
	T_MATMUL,
	T_RESHAPE,	/* its source's elements and gradient: no launch */
	T_PERMUTE,	/* perm: a copy */
	T_SLICE,	/* start: its source's elements, its own gradient */
	T_UNARY,	/* fn: GPO_EW_*, alpha (DROPOUT: seed, site,
			 * thresh too) */
	T_BINARY,	/* fn: GPO_EW_ADD.., broadcasting */
	T_SOFTMAX,	/* fn: GPO_SM_* over the last dimension */
	T_REDUCE,	/* fn: GPO_RED_*, axis (-1: all), alpha */
	T_XENT,
	T_ACCURACY,
	T_ONE_HOT,
	T_LAYERNORM,	/* eps: rows to mean 0, variance 1 */
	T_EMBEDDING,	/* src[0] the table, src[1] the indices */
	T_ATTENTION,	/* alpha: the scale; src[0..2] q, k, v */
};

/* where a tensor's elements are: element @elem of block @blk */
struct tview {
	struct dev_buf blk;
	uint64_t elem;
};

struct gpo_tensor {
	struct gpo_graph *g;
	int id;
	char name[64];
	enum gpo_dtype dtype;
	int ndim;
	uint32_t shape[T_DIMS];
	uint64_t numel;

	enum t_op op;
	struct gpo_tensor *src[3];
	uint32_t fn;
	unsigned int flags;	/* GPO_MATMUL_* */
	int axis;		/* reductions */
	int perm[T_DIMS];	/* permutes: dimension i is src's perm[i] */
	uint64_t start;		/* slices: the first row */
	double alpha;
	double eps;		/* layer norms */
	uint32_t classes;	/* one-hot */
	uint64_t seed;		/* dropouts */
	uint32_t site, thresh;
	struct gpo_optim *opt;	/* T_PARAM */
	int opt_index;
	/*
	 * T_PARAM of f16/bf16 parameters: its elements and gradient are f32
	 * places in the arena, widened from the optimizer's half param
	 * buffer at the start of forward and rounded into its half grad
	 * buffer at the end of backward; @half_of: the param and grad
	 * buffers those casts were planned with
	 */
	int half;
	struct dev_buf half_of[2];

	int needs_grad;		/* a parameter depends on it... */
	int wants_grad;		/* ...and the loss depends on it */
	struct gpo_tensor *grad;	/* its gradient (gpo_tensor_grad()) */
	int grad_written;	/* planning: the next contribution adds */
	int uses;		/* planning: its places among ops' inputs */
	/*
	 * planning: an addition whose gradient is this tensor's too (emit.c's
	 * grad_aliases), or NULL
	 */
	struct gpo_tensor *grad_alias;

	struct tview st;	/* its elements */
	struct tview aux;	/* MAX: argmax; XENT/ACCURACY: per row;
				 * ONE_HOT: the identity; LAYERNORM: each
				 * row's mean and 1 / std; ATTENTION: each
				 * row's logsumexp; a half PARAM at an odd
				 * offset: the 2 floats of its first word */
	/*
	 * planning: its elements as binary16, cast for a half product by
	 * emit.c's mm_halve() in this pass (@h16_made), for the products
	 * after it to take
	 */
	struct tview h16;
	int h16_made;
};

/* a launch and the storage of its parameter struct */
struct launch {
	struct op_call call;
	union {
		struct gpo_mem_args mem;
		struct gpo_matmul_args mm;
		struct gpo_ew_args ew;
		struct gpo_reduce_args red;
		struct gpo_softmax_args sm;
		struct gpo_loss_args loss;
		struct gpo_gather_args gather;
		struct gpo_layernorm_args ln;
		struct gpo_attn_args attn;
		struct gpo_cast_args cast;
	} a;
};

struct llist {
	struct launch *v;
	size_t n, cap;
};

struct gpo_graph {
	struct gpo_device *dev;
	struct gpo_tensor **t;
	int nt, cap;
	struct gpo_tensor *loss;	/* after gpo_graph_backward() */
	/*
	 * backward's seed d loss / d loss: 1, or with @seed_dev the float
	 * at @seed (a loss scale the device keeps: gpo__graph_seed_from)
	 */
	int seed_dev;
	struct tview seed;
	int err;			/* the first error, sticky */
	char errmsg[512];
	uint32_t ndropout;		/* dropouts made: the next one's site */
	uint64_t step;			/* gpo_graph_set_step() */
	uint64_t step_launched;		/* the step the dropout launches hold */
	int mm_f16;			/* gpo_graph_set_matmul_f16() */

	int planned;
	int dry;			/* planning pass 1: count only */
	int plan_err;			/* a place that could not be had */
	struct dev_buf *blk;		/* the arena's blocks */
	uint64_t *blk_elems;		/* elements each holds (pass 1) */
	int nblk;			/* blocks allocated (pass 2) */
	int cur;			/* planning: the block being filled */
	uint64_t bump;			/* elements handed out in it */
	uint64_t blk_limit;		/* elements a block may hold */
	struct llist fwd, bwd;
	struct launch scratch;		/* what the dry pass fills */
};

/* graph.c */
struct gpo_tensor *gpo__tensor_new(struct gpo_graph *g, enum t_op op,
				   enum gpo_dtype dtype, int ndim,
				   const uint32_t *shape);
int gpo__graph_fail(struct gpo_graph *g, int err);
/* plan if not yet (or again), the step set; called with dev->lock held */
int gpo__graph_plan(struct gpo_graph *g);
/* queue @what's launches; dev->lock held */
int gpo__graph_launch(struct gpo_graph *g, unsigned int what);

/*
 * gpo__graph_launch_range - queue the forward launches (@forward) and
 * backward's launches [@from, @to); planned first; dev->lock held.
 * Queued one after another, the ranges 0..n are gpo__graph_launch()'s.
 */
int gpo__graph_launch_range(struct gpo_graph *g, int forward, size_t from,
			    size_t to);
/* the launches of the planned backward list */
size_t gpo__graph_bwd_launches(const struct gpo_graph *g);
/*
 * gpo__graph_last_writers - for range k = [k @unit, (k + 1) @unit) of
 * @buf's bytes (k < @n, the last one ending at buf->size: n must cover
 * @buf exactly), @last[k] = the index in the planned backward list of
 * the last launch that writes into it through @buf's dev_mem, -1 when
 * none does. After it, backward changes nothing of the range.
 */
int gpo__graph_last_writers(const struct gpo_graph *g,
			    const struct dev_buf *buf, uint64_t unit,
			    uint64_t n, int64_t *last);

/* emit.c */
int gpo__graph_emit(struct gpo_graph *g);
int gpo__graph_reemit(struct gpo_graph *g);
/* give the arena's blocks back (nothing may be queued that uses them) */
void gpo__graph_free_arena(struct gpo_graph *g);
/*
 * gpo__graph_seed_from - seed backward with the float at element @elem
 * of @buf instead of 1 (the loss scale), read when the backward runs.
 * Before the graph is planned: -EBUSY after.
 */
int gpo__graph_seed_from(struct gpo_graph *g, const struct dev_buf *buf,
			 uint64_t elem);

/* the gradient tensors of what the loss depends on (once, at backward) */
int gpo__graph_make_grads(struct gpo_graph *g);
/* the tensor whose gradient @t's is: its reshapes' source */
struct gpo_tensor *gpo__tensor_root(struct gpo_tensor *t);
/* set the step in the launches of the graph's dropouts */
void gpo__graph_patch_step(struct gpo_graph *g);
/* the binding of @n elements at @v (a 256-byte aligned window) */
void gpo__view_bind(const struct tview *v, uint64_t n, struct dev_buf *out,
		    uint32_t *off);

#endif /* GPUOPT_TENSOR_I_H */
