/* SPDX-License-Identifier: MIT */
/*
 * backend_i.h - the one operations table every backend implements
 *
 * The optimizer code never names a backend; a backend never knows which
 * optimizer it runs. It runs kernels by id over device buffers, with the
 * argument layout documented below. Adding a backend is one new file and
 * one line in backend_list[] (device.c).
 */
#ifndef GPUOPT_BACKEND_I_H
#define GPUOPT_BACKEND_I_H

#include <stdint.h>
#include "gpuopt.h"

struct gpo_device;
struct dev_mem;			/* a backend's device allocation */

/* A sub-allocation handed out by the pool: @size bytes at @off in @mem. */
struct dev_buf {
	struct dev_mem *mem;
	uint64_t off;
	uint64_t size;
};

/*
 * Kernel ids. Element kernels work over @n float32 elements: one work-item
 * per float4 with a scalar tail, any grid (grid-stride loops). Group kernels
 * run exactly the number of 256-wide workgroups given, because their results
 * are defined per group (that is what makes reductions deterministic).
 *
 * Buffers (args.buf[i]) and scalars (args.s[i]) per kernel:
 *
 * K_COPY        element  buf0 dst, buf1 src
 * K_FILL        element  buf0 dst; s0 value
 * K_NORM_PARTIAL group(aux0) buf0 g, buf1 partials (2 floats per group);
 *               group i covers elements [i*aux1, min(n, (i+1)*aux1)), aux1
 *               a multiple of 4; partials[2i] = sum of g^2 over them,
 *               partials[2i+1] = 1.0 if any of them is inf or NaN, else 0
 * K_NORM_FINAL  group(1)  buf0 partials (aux0 groups), buf1 scal (4 floats)
 *               total = sum of partials[2i] (fixed order), bad = any
 *               partials[2i+1] != 0; s0 inv_scale, s1 clip_norm (0: none)
 *               scal[2] = sqrt(total) * inv_scale    (the gradient norm)
 *               scal[0] = inv_scale * (clip_norm > 0 ?
 *                         min(1, clip_norm / (scal[2] + 1e-6)) : 1)
 *               scal[1] = bad && (flags & KF_CHECK_FINITE) ? 1 : 0
 *               scal[3] = total
 *
 * The update kernels below read g as g * gm where gm = scal[0] if
 * KF_USE_SCAL is set (else 1), and do nothing at all if KF_USE_SCAL is set
 * and scal[1] != 0. The last buffer is always scal. KF_MAXIMIZE negates g
 * (after scaling). Formulas are torch 1.13's, written out in README.md.
 *
 * K_SGD         element  buf0 p, buf1 g, buf2 momentum_buffer, buf3 scal
 *               s0 lr, s1 weight_decay, s2 momentum, s3 dampening,
 *               s4 1 - dampening
 *               flags KF_MOMENTUM, KF_NESTEROV, KF_FIRST (buf = d_p)
 * K_ADAM        element  buf0 p, buf1 g, buf2 exp_avg, buf3 exp_avg_sq,
 *               buf4 max_exp_avg_sq (only with KF_AMSGRAD), buf5 scal
 *               s0 lr, s1 beta1, s2 beta2, s3 eps, s4 weight_decay,
 *               s5 step_size (lr / bias_correction1),
 *               s6 bias_correction2_sqrt, s7 decay (1 - lr * wd),
 *               s8 1 - beta1, s9 1 - beta2
 *               flags KF_AMSGRAD, KF_DECOUPLED (AdamW: p *= s7 first;
 *               otherwise g += wd * p)
 * K_RMSPROP     element  buf0 p, buf1 g, buf2 square_avg,
 *               buf3 momentum_buffer (KF_MOMENTUM), buf4 grad_avg
 *               (KF_CENTERED), buf5 scal
 *               s0 lr, s1 alpha, s2 eps, s3 weight_decay, s4 momentum,
 *               s5 1 - alpha
 * K_ADAGRAD     element  buf0 p, buf1 g, buf2 sum, buf3 scal
 *               s0 clr (lr / (1 + (step - 1) * lr_decay)), s1 weight_decay,
 *               s2 eps
 * K_LION        element  buf0 p, buf1 g, buf2 exp_avg, buf3 scal
 *               s0 lr, s1 beta1, s2 beta2, s3 decay (1 - lr * wd),
 *               s4 1 - beta1, s5 1 - beta2
 *
 * Every "1 - x" scalar is computed in double on the host and then
 * rounded: (1.0f - (float)0.999) is off by up to 1.3e-5 relative, torch
 * computes it from Python floats. Kernels use these, never 1.0f - x.
 *
 * LAMB runs three kernels over a block table built at allocation: the flat
 * state is cut into blocks of at most LAMB_BLOCK elements, none crossing
 * a tensor's end. blocks: 4 uint32 per block {tensor, start, count, 0};
 * tensors: 2 uint32 per tensor {first block, block count}.
 * The LAMB group kernels get whole buffers; workgroup i handles block
 * b = aux1 + i (aux1: the first block of the parameter group launched).
 * Blocks start at any element offset (tensor starts), so these kernels
 * cannot assume float4 alignment.
 * K_LAMB_PREP   group(aux0 = blocks) buf0 p, buf1 g, buf2 exp_avg,
 *               buf3 exp_avg_sq, buf4 blocks, buf5 partials (2 floats per
 *               block), buf6 scal
 *               s0 beta1, s1 beta2, s2 eps, s3 weight_decay,
 *               s4 bias_correction1, s5 bias_correction2,
 *               s6 1 - beta1, s7 1 - beta2
 *               updates m, v; r = (m/bc1) / (sqrt(v/bc2) + eps) + wd * p;
 *               partials[2b] = sum p^2, partials[2b+1] = sum r^2 over the
 *               block (p before the update)
 * K_LAMB_TRUST  one result per tensor, n = tensors (the backend picks
 *               the grid: a work-item or a workgroup per tensor)
 *               buf0 tensors, buf1 partials, buf2 trust (1 float per
 *               tensor), buf3 scal; sums each tensor's block partials in
 *               a fixed order (any tree, the same every step); trust =
 *               (pn > 0 && rn > 0) ? pn / rn : 1
 * K_LAMB_APPLY  group(aux0 = blocks) buf0 p, buf1 exp_avg, buf2 exp_avg_sq,
 *               buf3 blocks, buf4 trust, buf5 scal
 *               s0 lr, s2 eps, s3 weight_decay, s4 bc1, s5 bc2
 *               p -= lr * trust[tensor] * r, r recomputed from m, v, p
 *
 * Built-in objectives (for demos and the daemon's quadratic:N and
 * rosenbrock:N models), group kernels laid out like K_NORM_PARTIAL:
 * group i covers elements [i*aux1, min(n, (i+1)*aux1)), writes the
 * gradient there and partials[2i] = the loss terms of those elements,
 * partials[2i+1] = 0. buf0 x (whole, n elements), buf1 g, buf2 partials.
 * K_OBJ_QUADRATIC  loss_i = 0.5 * c_i * (x_i - 1)^2, c_i = 1 + (i % 7);
 *                  g_i = c_i * (x_i - 1)
 * K_OBJ_ROSENBROCK loss_i = 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 for
 *                  i < n - 1, 0 for i = n - 1;
 *                  g_i = -400 x_i (x_{i+1} - x_i^2) - 2 (1 - x_i)  [i < n-1]
 *                        + 200 (x_i - x_{i-1}^2)                     [i > 0]
 *
 * The LAMB kernels skip the step on scal[1] like the others (with
 * KF_USE_SCAL); they do not use KF_MAXIMIZE's negation in TRUST/APPLY
 * (PREP negates g).
 */
enum kernel_id {
	K_COPY = 0,
	K_FILL,
	K_NORM_PARTIAL,
	K_NORM_FINAL,
	K_SGD,
	K_ADAM,
	K_RMSPROP,
	K_ADAGRAD,
	K_LION,
	K_LAMB_PREP,
	K_LAMB_TRUST,
	K_LAMB_APPLY,
	K_OBJ_QUADRATIC,
	K_OBJ_ROSENBROCK,
	K_COUNT
};

enum kernel_grid {
	GRID_ELEMENTS,		/* n elements, float4 per work-item */
	GRID_ITEMS,		/* n work-items, one element each */
	GRID_GROUPS,		/* exactly aux0 workgroups of 256 */
};

#define KERNEL_WG_SIZE	256
#define LAMB_BLOCK	4096	/* elements per LAMB block */
#define NORM_MAX_GROUPS	1024

/* flags */
#define KF_MAXIMIZE	(1u << 0)
#define KF_USE_SCAL	(1u << 1)
#define KF_CHECK_FINITE	(1u << 2)
#define KF_MOMENTUM	(1u << 3)
#define KF_NESTEROV	(1u << 4)
#define KF_FIRST	(1u << 5)
#define KF_AMSGRAD	(1u << 6)
#define KF_DECOUPLED	(1u << 7)
#define KF_CENTERED	(1u << 8)

struct kernel_desc {
	const char *name;	/* OpenCL kernel and Vulkan .comp file name */
	unsigned int nbuf;
	enum kernel_grid grid;
};

extern const struct kernel_desc gpo__kernel_table[K_COUNT];

#define KARG_NBUF	8
#define KARG_NSCAL	12

/*
 * The scalar part (from @n on) is laid out exactly as the Vulkan push
 * constant block and the OpenCL kernels' trailing arguments:
 * uint n, flags, aux0, aux1; float s[12] (64 bytes).
 * A buffer the kernel does not use may be left zeroed; backends must then
 * bind something harmless in its place.
 */
struct kernel_args {
	struct dev_buf buf[KARG_NBUF];
	uint32_t n;
	uint32_t flags;
	uint32_t aux0;
	uint32_t aux1;
	float s[KARG_NSCAL];
};

struct backend_ops {
	const char *name;	/* "cpu", "opencl", "vulkan" */
	/* find devices, register each with gpo__ctx_add_device(); an error here
	 * only skips the backend */
	int (*probe)(struct gpo_ctx *ctx);
	/* make the device usable; sets dev->mem_align, dev->max_alloc */
	int (*open)(struct gpo_device *dev);
	void (*close)(struct gpo_device *dev);
	int (*alloc)(struct gpo_device *dev, uint64_t bytes,
		     struct dev_mem **out);
	void (*free)(struct gpo_device *dev, struct dev_mem *mem);
	/*
	 * write/read/copy are ordered after every kernel launched before
	 * them; read returns once the data is in @dst, write once @src may
	 * be reused.
	 */
	int (*write)(struct gpo_device *dev, const struct dev_buf *dst,
		     uint64_t off, const void *src, uint64_t bytes);
	int (*read)(struct gpo_device *dev, const struct dev_buf *src,
		    uint64_t off, void *dst, uint64_t bytes);
	/* queue a kernel; it may run only at the next wait or read */
	int (*launch)(struct gpo_device *dev, enum kernel_id k,
		      const struct kernel_args *args);
	/*
	 * wait for everything launched; @device_ns (may be NULL) gets the
	 * device time from the first launch after the previous wait to the
	 * last one's end, 0 when the backend cannot tell
	 */
	int (*wait)(struct gpo_device *dev, uint64_t *device_ns);
	/* free bytes on the device as the driver sees them, 0 if unknown */
	uint64_t (*mem_free)(struct gpo_device *dev);
};

extern const struct backend_ops gpo__cpu_backend_ops;
extern const struct backend_ops gpo__opencl_backend_ops;
extern const struct backend_ops gpo__vulkan_backend_ops;

#endif /* GPUOPT_BACKEND_I_H */
