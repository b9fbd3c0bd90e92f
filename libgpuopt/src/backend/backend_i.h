/* SPDX-License-Identifier: MIT */
/*
 * backend_i.h - the one operations table every backend implements, and
 * the ops it runs, described by data
 *
 * An op is a descriptor (ops.c): its name, family, grid kind, buffers with
 * their roles, the size of its parameter struct and the dtypes it comes
 * in. The family's parameter struct and flags are in kernels/abi/<family>.h,
 * shared with the OpenCL and GLSL kernels. A backend launches any op from
 * its descriptor and never names one; it builds an op's program or
 * pipeline for a dtype on first use. The optimizer code never names a
 * backend. Adding an op is one descriptor, its kernels and one entry in
 * the op test (tests/ops).
 */
#ifndef GPUOPT_BACKEND_I_H
#define GPUOPT_BACKEND_I_H

#include <stdint.h>
#include "gpuopt.h"
#include "abi/abi.h"

struct gpo_device;
struct dev_mem;			/* a backend's device allocation */
struct dev_graph;		/* a backend's recorded launches */

/*
 * Pinned host memory: @size bytes at @ptr, page-locked and mapped for the
 * device; @priv is the backend's (NULL on the cpu backend).
 */
struct host_mem {
	unsigned char *ptr;
	uint64_t size;
	void *priv;
};

/* A sub-allocation handed out by the pool: @size bytes at @off in @mem. */
struct dev_buf {
	struct dev_mem *mem;
	uint64_t off;
	uint64_t size;
};

/*
 * How a launch's work is counted (struct op_call's @work):
 * GRID_ELEMENTS  elements; element kernels handle a float4 per work-item
 *		  in a grid-stride loop, so the backend may cap the grid
 * GRID_GROUPS	  exactly @work workgroups of GPO_WG_SIZE, because results
 *		  are defined per group (what makes reductions deterministic)
 */
enum op_grid {
	GRID_ELEMENTS,
	GRID_GROUPS,
};

/* buffer roles */
#define OP_R		(1u << 0)	/* read */
#define OP_W		(1u << 1)	/* written */
#define OP_RW		(OP_R | OP_W)
#define OP_OPT		(1u << 2)	/* may be absent (a flag decides) */
#define OP_VEC4		(1u << 3)	/* read as float4: 16-byte offset */

#define OP_MAX_BUF	8

struct op_buf_desc {
	const char *name;
	unsigned int role;
};

struct gpo__op {
	const char *name;	/* the kernel: entry point, .comp file */
	const char *family;	/* kernels/abi/<family>.h, kernel folders */
	enum op_grid grid;
	unsigned int nbuf;
	struct op_buf_desc buf[OP_MAX_BUF];
	unsigned int args_size;	/* the family's parameter struct */
	unsigned int dtypes;	/* bit (1u << GPO_xxx) per dtype it has */
	/*
	 * element ops with abi.h's GPO_PARAM_FIELDS: the word of p_base in
	 * the parameter struct, which a backend that cuts the launch into
	 * windows advances by each window's first element; 0: none
	 */
	unsigned int base_word;
};

#define DT(x)		(1u << (x))

enum gpo__op_id {
	OP_COPY,
	OP_FILL,
	OP_NORM_PARTIAL,
	OP_NORM_FINAL,
	OP_NORM_SMALL,
	OP_SGD,
	OP_ADAM,
	OP_RMSPROP,
	OP_ADAGRAD,
	OP_LION,
	OP_LAMB_PREP,
	OP_LAMB_TRUST,
	OP_LAMB_APPLY,
	OP_OBJ_QUADRATIC,
	OP_OBJ_ROSENBROCK,
	/* the tensor engine's (kernels/abi/tensor.h) */
	OP_MATMUL,
	OP_MATMUL_BIG,
	OP_MATMUL_HALF,
	OP_MATMUL_COOP,
	OP_UNARY,
	OP_BINARY,
	OP_UNARY_BWD,
	OP_REDUCE,
	OP_REDUCE_BWD,
	OP_SOFTMAX,
	OP_SOFTMAX_BWD,
	OP_XENT,
	OP_XENT_BWD,
	OP_ACCURACY,
	OP_GATHER_ROWS,
	OP_EMBED_BWD,
	OP_LAYERNORM,
	OP_LAYERNORM_BWD,
	OP_ATTN_FWD,
	OP_ATTN_BWD_D,
	OP_ATTN_BWD_DQ,
	OP_ATTN_BWD_DKDV,
	/* the cast family (kernels/abi/cast.h) */
	OP_CAST,
	OP_QUANT8,
	OP_DEQUANT8,
	/* optimizers with blockwise 8-bit state (state_dtype u8) */
	OP_ADAM8,
	OP_RMSPROP8,
	OP_ADAGRAD8,
	OP_LION8,
	OP_COUNT
};

extern const struct gpo__op gpo__ops[OP_COUNT];

/*
 * One launch. @buf[i] follows the descriptor's buffers; an absent
 * (OP_OPT) buffer is left zeroed and the backend binds something harmless
 * in its place. @args points to the family's parameter struct.
 */
struct op_call {
	enum gpo__op_id op;
	enum gpo_dtype dtype;
	uint64_t work;		/* elements or workgroups: the op's grid */
	struct dev_buf buf[OP_MAX_BUF];
	const void *args;
};

/*
 * A recorded step's readbacks (backend_ops.graph_end()) land one after
 * another in host memory, each at a multiple of GPO_RB_ALIGN bytes, at
 * most GPO_RB_MAX bytes in all.
 */
#define GPO_RB_ALIGN	16	/* a power of 2: ~15ull below */
#define GPO_RB_MAX	256
#define GPO_RB_COUNT	4

static inline uint64_t gpo__rb_offset(const struct dev_buf *rb,
				      unsigned int i)
{
	uint64_t off = 0;
	unsigned int j;

	for (j = 0; j < i; j++)
		off += (rb[j].size + GPO_RB_ALIGN - 1) & ~15ull;
	return off;
}

struct backend_ops {
	const char *name;	/* "cpu", "opencl", "vulkan" */
	/* find devices, register each with ctx_add_device(); an error here
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
	/*
	 * pinned host memory (may be NULL: plain aligned memory is as good);
	 * host_alloc fills hm->ptr and hm->priv for hm->size bytes, and
	 * host_free returns once no queued copy uses the range any more.
	 * write/read given a pointer into a range the device lists
	 * (gpo__host_find) copy by DMA straight from or to it.
	 */
	int (*host_alloc)(struct gpo_device *dev, struct host_mem *hm);
	void (*host_free)(struct gpo_device *dev, struct host_mem *hm);
	/* can this device run @op in @dtype? 1 or 0 */
	int (*supports)(struct gpo_device *dev, enum gpo__op_id op,
			enum gpo_dtype dtype);
	/*
	 * queue a launch, already checked by gpo__launch(); it may run only
	 * at the next wait or read. The first launch of an (op, dtype)
	 * builds its program or pipeline.
	 */
	int (*launch)(struct gpo_device *dev, const struct op_call *call);
	/*
	 * wait for everything launched; @device_ns (may be NULL) gets the
	 * device time from the first launch after the previous wait to the
	 * last one's end, 0 when the backend cannot tell
	 */
	int (*wait)(struct gpo_device *dev, uint64_t *device_ns);
	/*
	 * start what was launched on the device and return without waiting
	 * for it; launches, reads and writes after it are ordered after it,
	 * and wait() waits for it. NULL: launches run at once (cpu).
	 */
	int (*submit)(struct gpo_device *dev);
	/*
	 * Recorded launches (NULL: the backend has none). Between
	 * graph_begin() and graph_end(), under dev->lock with no transfer
	 * between, launches are collected into *@g (made on first use).
	 * graph_end() queues them without waiting (Vulkan: submitted, as a
	 * command buffer recorded the first time and replayed while the
	 * launches differ only in their parameter structs; OpenCL: on the
	 * queue, started by the next wait() or submit()) and returns 1;
	 * the @nrb ranges @rb[i] (rb[i].size bytes each) are copied at the
	 * end of the same submission to *@host, the i-th at
	 * gpo__rb_offset(rb, i), to be read after the next wait(). It
	 * returns 0 when the launches could not be recorded and went to
	 * the batch as usual (or none came), and discards them if @abort.
	 */
	int (*graph_begin)(struct gpo_device *dev, struct dev_graph **g);
	int (*graph_end)(struct gpo_device *dev, struct dev_graph *g,
			 int abort, const struct dev_buf *rb,
			 unsigned int nrb, const void **host);
	void (*graph_free)(struct gpo_device *dev, struct dev_graph *g);
	/* free bytes on the device as the driver sees them, 0 if unknown */
	uint64_t (*mem_free)(struct gpo_device *dev);
	/*
	 * wrap the caller's buffer @eb in a dev_mem that launches, reads and
	 * writes use like the backend's own, after checking that it is of
	 * this device (context, VkDevice), of a kind the backend takes and
	 * holds eb->size bytes; release() undoes it (the caller's buffer
	 * lives on). NULL where the backend imports nothing (-EINVAL).
	 */
	int (*import)(struct gpo_device *dev, const struct gpo_extbuf *eb,
		      struct dev_mem **out);
	void (*release)(struct gpo_device *dev, struct dev_mem *mem);
};

/*
 * Adopting the caller's objects (gpo_device_adopt_*): each backend's, by
 * way of gpo__ctx_adopt_device()
 */
int gpo__opencl_adopt(struct gpo_ctx *ctx, const struct gpo_opencl_handles *h,
		      struct gpo_device **out);
int gpo__vulkan_adopt(struct gpo_ctx *ctx, const struct gpo_vulkan_handles *h,
		      struct gpo_device **out);

/*
 * gpo__launch - check @call against its descriptor and queue it: the op
 * exists, the dtype is one it has and the device supports, every buffer
 * that is not OP_OPT is present, OP_VEC4 buffers start 16-byte aligned.
 * Returns 0, -EINVAL (a bad call: a library bug) or -ENOSYS (no kernel
 * for this dtype here), or the backend's error.
 */
int gpo__launch(struct gpo_device *dev, const struct op_call *call);

/* gpo__op_supported - 1 if @dev can run @op in @dtype, else 0 */
int gpo__op_supported(struct gpo_device *dev, enum gpo__op_id op,
		      enum gpo_dtype dtype);

extern const struct backend_ops gpo__cpu_backend_ops;
extern const struct backend_ops gpo__opencl_backend_ops;
extern const struct backend_ops gpo__vulkan_backend_ops;

#endif /* GPUOPT_BACKEND_I_H */
