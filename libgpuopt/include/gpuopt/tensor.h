/* SPDX-License-Identifier: MIT */
/*
 * gpuopt/tensor.h - tensors on a device and reverse-mode autodiff
 * (included by gpuopt.h)
 *
 * A graph is built once, by calling the op functions below, and then run
 * as often as wanted: its launches are worked out on the first run and
 * replayed after, with no allocation and no host round trip. Tensors are
 * row-major and contiguous, of at most GPO_TENSOR_DIMS dimensions; every
 * tensor but parameters lives in one arena the graph takes from the
 * device's pool on its first run.
 *
 * The op functions return the new tensor, or NULL on failure. A failure
 * is kept by the graph: later ops given a NULL return NULL too, and
 * gpo_graph_status() (or the first run) returns the first error, with
 * gpo_errmsg() describing it. So a model is written as expressions, and
 * checked once:
 *
 *	h = gpo_relu(g, gpo_add(g, gpo_matmul(g, x, w, GPO_MATMUL_TB), b));
 *	loss = gpo_cross_entropy(g, h, y);
 *	ret = gpo_graph_backward(g, loss);
 *
 * Parameters are views of an optimizer's tensors: backward writes their
 * gradients where gpo_optim_step() reads them. f32 tensors, i32 labels.
 * An optimizer's f16/bf16 parameters (gpo_optim_set_param_dtype()) are
 * f32 in the graph: each forward run starts by widening them (exactly),
 * and backward ends by rounding their f32 gradients to nearest even into
 * the optimizer's half grad buffer; activations stay f32 (half
 * activations: not yet). Calls on one graph must not run concurrently.
 */
#ifndef GPUOPT_TENSOR_H
#define GPUOPT_TENSOR_H

#ifdef __cplusplus
extern "C" {
#endif

struct gpo_graph;
struct gpo_tensor;

#define GPO_TENSOR_DIMS	4

/*
 * gpo_graph_new - an empty graph on @dev
 * Returns 0, -EINVAL or -ENOMEM.
 */
int gpo_graph_new(struct gpo_device *dev, struct gpo_graph **out);

/* gpo_graph_free - free @g, its tensors and its arena (NULL: nothing) */
void gpo_graph_free(struct gpo_graph *g);

/*
 * gpo_graph_status - the first error met while building @g, or 0
 * gpo_errmsg() is set to its message again.
 */
int gpo_graph_status(struct gpo_graph *g);

/*
 * gpo_tensor_input - a tensor the caller fills (gpo_tensor_write())
 * @name:  for messages (may be NULL)
 * @dtype: GPO_F32, GPO_I32 for labels, or GPO_F16 for a matmul operand
 *         (an f16 tensor goes to gpo_matmul() alone)
 * @shape: @ndim sizes (1..GPO_TENSOR_DIMS), each >= 1
 */
struct gpo_tensor *gpo_tensor_input(struct gpo_graph *g, const char *name,
				    enum gpo_dtype dtype, int ndim,
				    const uint64_t *shape);

/*
 * gpo_tensor_param - the optimizer tensor @name of @opt, as a tensor that
 * takes gradients; @opt must be on the graph's device, its parameters in
 * f32, or in f16/bf16 with gradients of the same dtype (then the tensor
 * is their f32 widening, made by each forward run, and its gradient,
 * gpo_tensor_grad(), the f32 one before rounding)
 */
struct gpo_tensor *gpo_tensor_param(struct gpo_graph *g,
				    struct gpo_optim *opt, const char *name);

/* flags of gpo_matmul(): use the transpose of a (b) as stored */
#define GPO_MATMUL_TA	(1u << 0)
#define GPO_MATMUL_TB	(1u << 1)

/*
 * gpo_matmul - op(a) · op(b), with op() the transpose when asked
 * a and b have 2 dimensions, or 3 with equal leading (batch) sizes.
 * a or b may be f16 (the result is f32): then every product is one of
 * f16 values, the f32 operand rounded to nearest even, summed in f32 (on
 * tensor cores where the device has them; gpo_graph_set_matmul_f16()).
 */
struct gpo_tensor *gpo_matmul(struct gpo_graph *g, struct gpo_tensor *a,
			      struct gpo_tensor *b, unsigned int flags);

/*
 * gpo_reshape - @x with the shape @shape (@ndim sizes, the same number of
 * elements): a view of the same memory, no copy; its gradient is @x's
 */
struct gpo_tensor *gpo_reshape(struct gpo_graph *g, struct gpo_tensor *x,
			       int ndim, const uint64_t *shape);

/*
 * gpo_permute - @x with its dimensions reordered: dimension i of the
 * result is dimension @perm[i] of @x (a copy), as torch.permute
 */
struct gpo_tensor *gpo_permute(struct gpo_graph *g, struct gpo_tensor *x,
			       const int *perm);

/*
 * gpo_slice - @x[start : start + length] along its first dimension: a
 * view of the same memory, no copy (its gradient is its own, added into
 * @x's slice)
 */
struct gpo_tensor *gpo_slice(struct gpo_graph *g, struct gpo_tensor *x,
			     uint64_t start, uint64_t length);

/* gpo_transpose - @x with dimensions @d0 and @d1 swapped (a copy) */
struct gpo_tensor *gpo_transpose(struct gpo_graph *g, struct gpo_tensor *x,
				 int d0, int d1);

/*
 * Element-wise arithmetic with broadcasting (numpy's and torch's rules:
 * shapes aligned at the right, a size of 1 stretches). gpo_add() of a
 * [rows, cols] matrix and a [cols] vector adds a bias.
 */
struct gpo_tensor *gpo_add(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b);
struct gpo_tensor *gpo_sub(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b);
struct gpo_tensor *gpo_mul(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b);
struct gpo_tensor *gpo_div(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b);

/* gpo_scale - alpha * x */
struct gpo_tensor *gpo_scale(struct gpo_graph *g, struct gpo_tensor *x,
			     double alpha);

/*
 * Element-wise functions. gpo_gelu() is torch's default (erf) form,
 * gpo_gelu_tanh() its approximate='tanh' form.
 */
struct gpo_tensor *gpo_relu(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_gelu(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_gelu_tanh(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_tanh(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_sigmoid(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_exp(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_log(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_square(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_sqrt(struct gpo_graph *g, struct gpo_tensor *x);

/* softmax and log-softmax over the last dimension, stable */
struct gpo_tensor *gpo_softmax(struct gpo_graph *g, struct gpo_tensor *x);
struct gpo_tensor *gpo_log_softmax(struct gpo_graph *g, struct gpo_tensor *x);

/*
 * gpo_causal_softmax - softmax(@scale * x) over the last dimension of x
 * [..., T, T], row i of each matrix masked to its first i + 1 entries
 * (the rest are 0): causal self-attention's weights
 */
struct gpo_tensor *gpo_causal_softmax(struct gpo_graph *g,
				      struct gpo_tensor *x, double scale);

/*
 * gpo_causal_attention - softmax(@scale q k^T, causal mask) v for q, k, v
 * of one shape [BH, T, hd] (hd at most 128): the composition of
 * gpo_matmul(q, k, GPO_MATMUL_TB), gpo_causal_softmax() and gpo_matmul(.,
 * v) in fused kernels that never store the T x T scores (flash-attention
 * style), nor visit the blocks above the diagonal. Deterministic.
 */
struct gpo_tensor *gpo_causal_attention(struct gpo_graph *g,
					struct gpo_tensor *q,
					struct gpo_tensor *k,
					struct gpo_tensor *v, double scale);

/*
 * gpo_layer_norm - torch.nn.functional.layer_norm over the last dimension
 * @w, @b: [D] scale and shift (either may be NULL: 1 and 0)
 * @eps:   added to the (biased) variance, 1e-5 as torch's default
 */
struct gpo_tensor *gpo_layer_norm(struct gpo_graph *g, struct gpo_tensor *x,
				  struct gpo_tensor *w, struct gpo_tensor *b,
				  double eps);

/*
 * gpo_embedding - the rows of @table [V, D] that i32 @idx names: a tensor
 * of @idx's shape with D appended (an index outside [0, V) gives a row of
 * 0). The gradient sums into the table's rows in a fixed order (no
 * atomics): the same bits on every run.
 */
struct gpo_tensor *gpo_embedding(struct gpo_graph *g, struct gpo_tensor *table,
				 struct gpo_tensor *idx);

/*
 * gpo_dropout - each element of @x kept with probability 1 - @p and
 * scaled by 1 / (1 - @p), or zeroed. Element i's draw is a function of
 * (@seed, the graph's step, this dropout's number in the graph, i) alone
 * (Philox4x32-10), so every backend gives the same mask, and backward uses
 * forward's. @p 0 returns @x itself; @p must be in [0, 1).
 */
struct gpo_tensor *gpo_dropout(struct gpo_graph *g, struct gpo_tensor *x,
			       double p, uint64_t seed);

/*
 * gpo_graph_set_step - the step the graph's dropouts draw for on its next
 * runs (0 until set); the trainer sets it to the optimizer's data
 * position before each step
 */
void gpo_graph_set_step(struct gpo_graph *g, uint64_t step);

/*
 * gpo_graph_set_matmul_f16 - @on 1: every matmul of the graph, forward
 * and backward, multiplies its f32 operands rounded to f16 (to nearest
 * even, as loaded, or cast once into a half-size copy where the product
 * reads a large operand several times: the same bits) and sums in f32,
 * on tensor cores where the device has them (gpo_device_info's coopmat);
 * 0 (the default): f32 products. Set before the first run.
 * Returns 0, -EINVAL (NULL @g, @on not 0 or 1), -EBUSY (the graph ran).
 */
int gpo_graph_set_matmul_f16(struct gpo_graph *g, int on);

/*
 * Reductions over dimension @axis (negative counts from the end), which
 * is removed from the shape (a scalar is shape [1]). gpo_max()'s gradient
 * goes to the first maximum.
 */
struct gpo_tensor *gpo_sum(struct gpo_graph *g, struct gpo_tensor *x,
			   int axis);
struct gpo_tensor *gpo_mean(struct gpo_graph *g, struct gpo_tensor *x,
			    int axis);
struct gpo_tensor *gpo_max(struct gpo_graph *g, struct gpo_tensor *x,
			   int axis);

/*
 * gpo_cross_entropy - the mean over rows of -log softmax(logits)[label]
 * @logits: [rows, classes] f32
 * @labels: [rows] i32, each in [0, classes) (else the loss is NaN)
 * Returns a [1] tensor, as torch.nn.functional.cross_entropy.
 */
struct gpo_tensor *gpo_cross_entropy(struct gpo_graph *g,
				     struct gpo_tensor *logits,
				     struct gpo_tensor *labels);

/* gpo_mse - the mean of (a - b)^2 over all elements: a [1] tensor */
struct gpo_tensor *gpo_mse(struct gpo_graph *g, struct gpo_tensor *a,
			   struct gpo_tensor *b);

/* gpo_one_hot - [rows, classes] f32 of i32 @labels [rows] (no gradient) */
struct gpo_tensor *gpo_one_hot(struct gpo_graph *g, struct gpo_tensor *labels,
			       uint32_t classes);

/*
 * gpo_accuracy - the fraction of rows whose largest logit (the first, on
 * ties) is at the label: a [1] tensor, no gradient
 */
struct gpo_tensor *gpo_accuracy(struct gpo_graph *g, struct gpo_tensor *logits,
				struct gpo_tensor *labels);

/*
 * gpo_graph_backward - add the backward pass of the scalar @loss: after
 * each run, every parameter's gradient (and gpo_tensor_grad() of every
 * tensor @loss depends on) holds d loss / d tensor. Once per graph.
 * Returns 0 or the graph's error; -EINVAL if @loss is not [1] or after
 * the graph has run.
 */
int gpo_graph_backward(struct gpo_graph *g, struct gpo_tensor *loss);

/* what gpo_graph_run() runs */
#define GPO_RUN_FORWARD		(1u << 0)
#define GPO_RUN_BACKWARD	(1u << 1)	/* after the forward pass */

/*
 * gpo_graph_run - queue the forward pass (and the backward pass) on the
 * device, without waiting. The first run allocates the arena and works
 * out the launches. Reading a tensor waits for what it needs.
 * Returns 0 or -errno: the graph's error, -ENOMEM (the pool), -ENOSYS (an
 * op without a kernel on this device), -ENODEV (the device was lost).
 */
int gpo_graph_run(struct gpo_graph *g, unsigned int what);

/*
 * gpo_tensor_write, gpo_tensor_read - the whole tensor from or into host
 * memory; @bytes must be its size. Reads wait for the graph's queued runs.
 */
int gpo_tensor_write(struct gpo_tensor *t, const void *src, size_t bytes);
int gpo_tensor_read(struct gpo_tensor *t, void *dst, size_t bytes);

/*
 * gpo_tensor_grad - the gradient of @t: a tensor to read after a backward
 * run, there from gpo_graph_backward() on; NULL when the loss does not
 * depend on @t through a parameter (or before gpo_graph_backward()). A
 * tensor used once, as a term of a sum of its shape, shares the sum's
 * gradient memory (the same values; no copy backward).
 */
struct gpo_tensor *gpo_tensor_grad(struct gpo_tensor *t);

/* gpo_tensor_shape - the number of dimensions; @shape gets the sizes */
int gpo_tensor_shape(const struct gpo_tensor *t, uint64_t *shape);

/* gpo_tensor_numel - the number of elements */
uint64_t gpo_tensor_numel(const struct gpo_tensor *t);

/* one kernel's share of a profiled run */
struct gpo_op_time {
	const char *op;		/* the kernel: "matmul", "softmax_bwd", ... */
	unsigned int pass;	/* GPO_RUN_FORWARD or GPO_RUN_BACKWARD */
	uint64_t launches;
	uint64_t ns;		/* device time, summed */
};

/*
 * gpo_graph_profile - run @what once, launch by launch, waiting for each,
 * and sum the device time of each kernel per pass into @out (at most @max
 * entries, in the order first met). The results are those of
 * gpo_graph_run(); only the time differs (nothing overlaps).
 * Returns the number of entries, or -errno: gpo_graph_run()'s, -EINVAL,
 * -ENOSPC (more kernels than @max).
 */
int gpo_graph_profile(struct gpo_graph *g, unsigned int what,
		      struct gpo_op_time *out, int max);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPT_TENSOR_H */
