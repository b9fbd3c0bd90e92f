// SPDX-License-Identifier: MIT
/*
 * ops.c - every op the backends run, described by data, and the one
 * checked way to launch them
 *
 * A descriptor says what a kernel touches: the optional buffers a flag
 * turns on, what it reads and writes (Vulkan's barriers and the op test
 * use these), and which dtypes its sources are built for. The formulas
 * and the parameter structs are in kernels/abi/<family>.h.
 */
#include <stddef.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/embedded_i.h"
#include "abi/mem.h"
#include "abi/norm.h"
#include "abi/sgd.h"
#include "abi/adam.h"
#include "abi/rmsprop.h"
#include "abi/adagrad.h"
#include "abi/lion.h"
#include "abi/lamb.h"
#include "abi/objective.h"
#include "abi/matmul.h"
#include "abi/ew.h"
#include "abi/reduce.h"
#include "abi/softmax.h"
#include "abi/loss.h"
#include "abi/gather.h"
#include "abi/layernorm.h"
#include "abi/attention.h"
#include "abi/cast.h"

#define P4	(OP_RW | OP_VEC4)	/* a parameter or state view */
#define G4	(OP_R | OP_VEC4)	/* the gradient view */
#define S4	(OP_RW | OP_VEC4 | OP_OPT)	/* state a flag turns on */
#define SCAL	{ "scal", OP_R }
/* the half copy of the parameters (abi.h GPO_UPD_PARAM_F16/BF16) */
#define PHALF	{ "p_half", OP_W | OP_VEC4 | OP_OPT }
/* an update kernel that comes in the dtype of its parameters */
#define DT_PARAM	(DT(GPO_F32) | DT(GPO_F16) | DT(GPO_BF16))
#define BASE_WORD(s)	(unsigned int)(offsetof(struct s, p_base) / 4)

const struct gpo__op gpo__ops[OP_COUNT] = {
	[OP_COPY] = { "copy", "mem", GRID_ELEMENTS, 2,
		{ { "dst", OP_W | OP_VEC4 }, { "src", OP_R | OP_VEC4 } },
		sizeof(struct gpo_mem_args), DT(GPO_F32) | DT(GPO_I32) },
	[OP_FILL] = { "fill", "mem", GRID_ELEMENTS, 1,
		{ { "dst", OP_W | OP_VEC4 } },
		sizeof(struct gpo_mem_args), DT(GPO_F32) },
	[OP_NORM_PARTIAL] = { "norm_partial", "norm", GRID_GROUPS, 2,
		{ { "g", G4 }, { "partials", OP_W } },
		sizeof(struct gpo_norm_args), DT(GPO_F32) },
	[OP_NORM_FINAL] = { "norm_final", "norm", GRID_GROUPS, 2,
		{ { "partials", OP_R }, { "scal", OP_RW } },
		sizeof(struct gpo_norm_args), DT(GPO_F32) },
	[OP_NORM_SMALL] = { "norm_small", "norm", GRID_GROUPS, 2,
		{ { "g", G4 }, { "scal", OP_RW } },
		sizeof(struct gpo_norm_args), DT(GPO_F32) },
	[OP_SGD] = { "sgd", "sgd", GRID_ELEMENTS, GPO_SGD_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "momentum_buffer", S4 }, SCAL,
		  [GPO_SGD_BUF_HALF] = PHALF },
		sizeof(struct gpo_sgd_args), DT(GPO_F32),
		BASE_WORD(gpo_sgd_args) },
	[OP_ADAM] = { "adam", "adam", GRID_ELEMENTS, GPO_ADAM_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "exp_avg", P4 },
		  { "exp_avg_sq", P4 }, { "max_exp_avg_sq", S4 }, SCAL,
		  [GPO_ADAM_BUF_HALF] = PHALF },
		sizeof(struct gpo_adam_args), DT(GPO_F32),
		BASE_WORD(gpo_adam_args) },
	[OP_RMSPROP] = { "rmsprop", "rmsprop", GRID_ELEMENTS,
		GPO_RMSPROP_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "square_avg", P4 },
		  { "momentum_buffer", S4 }, { "grad_avg", S4 }, SCAL,
		  [GPO_RMSPROP_BUF_HALF] = PHALF },
		sizeof(struct gpo_rmsprop_args), DT(GPO_F32),
		BASE_WORD(gpo_rmsprop_args) },
	[OP_ADAGRAD] = { "adagrad", "adagrad", GRID_ELEMENTS,
		GPO_ADAGRAD_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "sum", P4 }, SCAL,
		  [GPO_ADAGRAD_BUF_HALF] = PHALF },
		sizeof(struct gpo_adagrad_args), DT(GPO_F32),
		BASE_WORD(gpo_adagrad_args) },
	[OP_LION] = { "lion", "lion", GRID_ELEMENTS, GPO_LION_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "exp_avg", P4 }, SCAL,
		  [GPO_LION_BUF_HALF] = PHALF },
		sizeof(struct gpo_lion_args), DT(GPO_F32),
		BASE_WORD(gpo_lion_args) },
	[OP_LAMB_PREP] = { "lamb_prep", "lamb", GRID_GROUPS, 7,
		{ { "p", OP_R }, { "g", OP_R }, { "exp_avg", OP_RW },
		  { "exp_avg_sq", OP_RW }, { "blocks", OP_R },
		  { "partials", OP_W }, SCAL },
		sizeof(struct gpo_lamb_args), DT_PARAM },
	[OP_LAMB_TRUST] = { "lamb_trust", "lamb", GRID_GROUPS, 4,
		{ { "tensors", OP_R }, { "partials", OP_R }, { "trust", OP_W },
		  SCAL },
		sizeof(struct gpo_lamb_args), DT(GPO_F32) },
	[OP_LAMB_APPLY] = { "lamb_apply", "lamb", GRID_GROUPS,
		GPO_LAMB_BUF_HALF + 1,
		{ { "p", OP_RW }, { "exp_avg", OP_R }, { "exp_avg_sq", OP_R },
		  { "blocks", OP_R }, { "trust", OP_R }, SCAL,
		  [GPO_LAMB_BUF_HALF] = { "p_half", OP_W | OP_OPT } },
		sizeof(struct gpo_lamb_args), DT_PARAM },
	[OP_OBJ_QUADRATIC] = { "obj_quadratic", "objective", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "g", OP_W }, { "partials", OP_W } },
		sizeof(struct gpo_objective_args), DT(GPO_F32) },
	[OP_OBJ_ROSENBROCK] = { "obj_rosenbrock", "objective", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "g", OP_W }, { "partials", OP_W } },
		sizeof(struct gpo_objective_args), DT(GPO_F32) },
	/*
	 * Tensor ops: every buffer bound from its block's start, tensors
	 * found by element offsets in the struct (abi/tensor.h). An output
	 * is OP_RW: with GPO_T_ACCUM it is read too.
	 */
	[OP_MATMUL] = { "matmul", "matmul", GRID_GROUPS, 3,
		{ { "a", OP_R }, { "b", OP_R }, { "c", OP_RW } },
		sizeof(struct gpo_matmul_args), DT(GPO_F32) },
	[OP_MATMUL_BIG] = { "matmul_big", "matmul", GRID_GROUPS, 3,
		{ { "a", OP_R }, { "b", OP_R }, { "c", OP_RW } },
		sizeof(struct gpo_matmul_args), DT(GPO_F32) },
	/* binary16 products, where there are no cooperative matrices */
	[OP_MATMUL_HALF] = { "matmul_half", "matmul", GRID_GROUPS, 3,
		{ { "a", OP_R }, { "b", OP_R }, { "c", OP_RW } },
		sizeof(struct gpo_matmul_args), DT(GPO_F32) },
	/* only on devices with cooperative matrices (abi/matmul.h) */
	[OP_MATMUL_COOP] = { "matmul_coop", "matmul", GRID_GROUPS, 3,
		{ { "a", OP_R }, { "b", OP_R }, { "c", OP_RW } },
		sizeof(struct gpo_matmul_args), DT(GPO_F32) },
	[OP_UNARY] = { "unary", "ew", GRID_GROUPS, 2,
		{ { "x", OP_R }, { "y", OP_RW } },
		sizeof(struct gpo_ew_args), DT(GPO_F32) },
	[OP_BINARY] = { "binary", "ew", GRID_GROUPS, 3,
		{ { "a", OP_R }, { "b", OP_R }, { "y", OP_RW } },
		sizeof(struct gpo_ew_args), DT(GPO_F32) },
	[OP_UNARY_BWD] = { "unary_bwd", "ew", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "dy", OP_R }, { "dx", OP_RW } },
		sizeof(struct gpo_ew_args), DT(GPO_F32) },
	[OP_REDUCE] = { "reduce", "reduce", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "y", OP_RW }, { "idx", OP_W | OP_OPT } },
		sizeof(struct gpo_reduce_args), DT(GPO_F32) },
	[OP_REDUCE_BWD] = { "reduce_bwd", "reduce", GRID_GROUPS, 3,
		{ { "dy", OP_R }, { "idx", OP_R | OP_OPT }, { "dx", OP_RW } },
		sizeof(struct gpo_reduce_args), DT(GPO_F32) },
	[OP_SOFTMAX] = { "softmax", "softmax", GRID_GROUPS, 2,
		{ { "x", OP_R }, { "y", OP_W } },
		sizeof(struct gpo_softmax_args), DT(GPO_F32) },
	[OP_SOFTMAX_BWD] = { "softmax_bwd", "softmax", GRID_GROUPS, 3,
		{ { "y", OP_R }, { "dy", OP_R }, { "dx", OP_RW } },
		sizeof(struct gpo_softmax_args), DT(GPO_F32) },
	[OP_XENT] = { "xent", "loss", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "lab", OP_R }, { "y", OP_W } },
		sizeof(struct gpo_loss_args), DT(GPO_F32) },
	[OP_XENT_BWD] = { "xent_bwd", "loss", GRID_GROUPS, 4,
		{ { "x", OP_R }, { "lab", OP_R }, { "dl", OP_R },
		  { "dx", OP_RW } },
		sizeof(struct gpo_loss_args), DT(GPO_F32) },
	[OP_ACCURACY] = { "accuracy", "loss", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "lab", OP_R }, { "y", OP_W } },
		sizeof(struct gpo_loss_args), DT(GPO_F32) },
	[OP_GATHER_ROWS] = { "gather_rows", "gather", GRID_GROUPS, 3,
		{ { "src", OP_R }, { "idx", OP_R }, { "dst", OP_RW } },
		sizeof(struct gpo_gather_args), DT(GPO_F32) | DT(GPO_I32) },
	[OP_EMBED_BWD] = { "embed_bwd", "gather", GRID_GROUPS, 3,
		{ { "idx", OP_R }, { "dy", OP_R }, { "dw", OP_RW } },
		sizeof(struct gpo_gather_args), DT(GPO_F32) },
	[OP_LAYERNORM] = { "layernorm", "layernorm", GRID_GROUPS, 3,
		{ { "x", OP_R }, { "y", OP_W }, { "stats", OP_W } },
		sizeof(struct gpo_layernorm_args), DT(GPO_F32) },
	[OP_LAYERNORM_BWD] = { "layernorm_bwd", "layernorm", GRID_GROUPS, 4,
		{ { "y", OP_R }, { "dy", OP_R }, { "stats", OP_R },
		  { "dx", OP_RW } },
		sizeof(struct gpo_layernorm_args), DT(GPO_F32) },
	[OP_ATTN_FWD] = { "attn_fwd", "attention", GRID_GROUPS, 5,
		{ { "q", OP_R }, { "k", OP_R }, { "v", OP_R }, { "y", OP_W },
		  { "l", OP_W } },
		sizeof(struct gpo_attn_args), DT(GPO_F32) },
	[OP_ATTN_BWD_D] = { "attn_bwd_d", "attention", GRID_GROUPS, 3,
		{ { "y", OP_R }, { "dy", OP_R }, { "d", OP_W } },
		sizeof(struct gpo_attn_args), DT(GPO_F32) },
	[OP_ATTN_BWD_DQ] = { "attn_bwd_dq", "attention", GRID_GROUPS, 7,
		{ { "q", OP_R }, { "k", OP_R }, { "v", OP_R }, { "dy", OP_R },
		  { "l", OP_R }, { "d", OP_R }, { "dq", OP_RW } },
		sizeof(struct gpo_attn_args), DT(GPO_F32) },
	[OP_ATTN_BWD_DKDV] = { "attn_bwd_dkdv", "attention", GRID_GROUPS, 8,
		{ { "q", OP_R }, { "k", OP_R }, { "v", OP_R }, { "dy", OP_R },
		  { "l", OP_R }, { "d", OP_R }, { "dk", OP_RW },
		  { "dv", OP_RW } },
		sizeof(struct gpo_attn_args), DT(GPO_F32) },
	/*
	 * The cast family: 16-bit and u8 views packed in 32-bit words, a
	 * partly covered last word read and written (abi/cast.h).
	 */
	[OP_CAST] = { "cast", "cast", GRID_GROUPS, 2,
		{ { "src", OP_R }, { "dst", OP_RW } },
		sizeof(struct gpo_cast_args), DT(GPO_F32) },
	[OP_QUANT8] = { "quantize8", "cast", GRID_GROUPS, 3,
		{ { "src", OP_R }, { "codes", OP_RW }, { "absmax", OP_W } },
		sizeof(struct gpo_cast_args), DT(GPO_F32) },
	[OP_DEQUANT8] = { "dequantize8", "cast", GRID_GROUPS, 3,
		{ { "codes", OP_R }, { "absmax", OP_R }, { "dst", OP_RW } },
		sizeof(struct gpo_cast_args), DT(GPO_F32) },
	/*
	 * Blockwise 8-bit state: one group a block of 256 (its absmax is
	 * the new state's), codes and absmax bound whole (offsets in the
	 * struct); bindings after the f32 kernel's, which keep their places;
	 * p and g read as float4s
	 */
	/*
	 * Half parameters: p_half where the f32 kernel's optional state
	 * was (which 8 bits do not keep), else after the others. The
	 * launch dtype is the parameters' where the backend has a kernel
	 * for it (DT_PARAM; Vulkan builds one module each), else f32 with
	 * the flags saying which half (optim.c's gpo__optim_param_call).
	 */
	[OP_ADAM8] = { "adam8", "adam", GRID_GROUPS, 8,
		{ { "p", P4 }, { "g", G4 }, { "exp_avg", OP_RW },
		  { "exp_avg_sq", OP_RW }, [GPO_ADAM8_BUF_HALF] = PHALF,
		  SCAL, { "exp_avg.absmax", OP_RW },
		  { "exp_avg_sq.absmax", OP_RW } },
		sizeof(struct gpo_adam_args), DT_PARAM,
		BASE_WORD(gpo_adam_args) },
	[OP_RMSPROP8] = { "rmsprop8", "rmsprop", GRID_GROUPS, 7,
		{ { "p", P4 }, { "g", G4 }, { "square_avg", OP_RW },
		  [GPO_RMSPROP8_BUF_HALF] = PHALF,
		  { "grad_avg", OP_RW | OP_OPT }, SCAL,
		  { "square_avg.absmax", OP_RW } },
		sizeof(struct gpo_rmsprop_args), DT_PARAM,
		BASE_WORD(gpo_rmsprop_args) },
	[OP_ADAGRAD8] = { "adagrad8", "adagrad", GRID_GROUPS,
		GPO_ADAGRAD8_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "sum", OP_RW }, SCAL,
		  { "sum.absmax", OP_RW }, [GPO_ADAGRAD8_BUF_HALF] = PHALF },
		sizeof(struct gpo_adagrad_args), DT_PARAM,
		BASE_WORD(gpo_adagrad_args) },
	[OP_LION8] = { "lion8", "lion", GRID_GROUPS, GPO_LION8_BUF_HALF + 1,
		{ { "p", P4 }, { "g", G4 }, { "exp_avg", OP_RW }, SCAL,
		  { "exp_avg.absmax", OP_RW }, [GPO_LION8_BUF_HALF] = PHALF },
		sizeof(struct gpo_lion_args), DT_PARAM,
		BASE_WORD(gpo_lion_args) },
};

/*
 * The u8 families' structs as backends read them by word: n first (the
 * cpu backend's u8 wrapper, Vulkan's quads()), q_groups right before
 * p_base (the cpu backend's u8 wrapper; abi.h)
 */
#define U8_ARGS_LAYOUT(s) \
	_Static_assert(offsetof(struct s, n) == 0, #s ": n first"); \
	_Static_assert(offsetof(struct s, q_groups) + 4 == \
		       offsetof(struct s, p_base), #s ": q_groups, p_base")
U8_ARGS_LAYOUT(gpo_adam_args);
U8_ARGS_LAYOUT(gpo_rmsprop_args);
U8_ARGS_LAYOUT(gpo_adagrad_args);
U8_ARGS_LAYOUT(gpo_lion_args);

int gpo__op_supported(struct gpo_device *dev, enum gpo__op_id op,
		      enum gpo_dtype dtype)
{
	if ((unsigned int)op >= OP_COUNT || (unsigned int)dtype >= GPO_DTYPES)
		return 0;
	if (!(gpo__ops[op].dtypes & DT(dtype)))
		return 0;
	return dev->ops->supports(dev, op, dtype);
}

int gpo__launch(struct gpo_device *dev, const struct op_call *call)
{
	const struct gpo__op *op;
	unsigned int i;

	if ((unsigned int)call->op >= OP_COUNT)
		return gpo__err(-EINVAL, "no op %d", call->op);
	op = &gpo__ops[call->op];
	if (!gpo__op_supported(dev, call->op, call->dtype))
		return gpo__err(-ENOSYS, "%s: no %s kernel for dtype %d",
				dev->info.id, op->name, call->dtype);
	for (i = 0; i < op->nbuf; i++) {
		const struct dev_buf *b = &call->buf[i];

		if (!b->mem && !(op->buf[i].role & OP_OPT))
			return gpo__err(-EINVAL, "%s: buffer %s missing",
					op->name, op->buf[i].name);
		if (b->mem && (op->buf[i].role & OP_VEC4) && (b->off & 15))
			return gpo__err(-EINVAL,
					"%s: buffer %s at offset %llu is not 16-byte aligned",
					op->name, op->buf[i].name,
					(unsigned long long)b->off);
	}
	for (; i < OP_MAX_BUF; i++)
		if (call->buf[i].mem)
			return gpo__err(-EINVAL, "%s: %u buffers given, %u taken",
					op->name, i + 1, op->nbuf);
	if (!call->work)
		return 0;
	if (call->work > UINT32_MAX)
		return gpo__err(-EINVAL, "%s: %llu work units (< 2^32 a launch)",
				op->name, (unsigned long long)call->work);
	/* element structs start with their count (abi.h) */
	if (op->grid == GRID_ELEMENTS &&
	    *(const uint32_t *)call->args != call->work)
		return gpo__err(-EINVAL, "%s: n %u, but %llu elements launched",
				op->name, *(const uint32_t *)call->args,
				(unsigned long long)call->work);
	return dev->ops->launch(dev, call);
}

const struct embedded_file *gpo__embedded_find(const struct embedded_file *tab,
					       const char *name)
{
	for (; tab->name; tab++)
		if (!strcmp(tab->name, name))
			return tab;
	return NULL;
}
