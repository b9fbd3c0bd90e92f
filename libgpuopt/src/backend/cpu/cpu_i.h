/* SPDX-License-Identifier: MIT */
/*
 * cpu_i.h - what the cpu backend's files share: its allocations, how a
 * kernel finds its buffers, and the kernels that live outside cpu.c
 */
#ifndef GPUOPT_CPU_I_H
#define GPUOPT_CPU_I_H

#include <stdint.h>
#include "backend/backend_i.h"

struct dev_mem {
	float *ptr;
	uint64_t size;
};

/* a kernel runs elements or groups [lo, hi) of a launch */
typedef void (*slice_fn)(const struct op_call *c, uint32_t lo, uint32_t hi);

/* buffer @i of the launch, from its binding's start; NULL if absent */
static inline float *bp(const struct op_call *c, int i)
{
	const struct dev_buf *b = &c->buf[i];

	if (!b->mem)
		return NULL;
	return (float *)((char *)b->mem->ptr + b->off);
}

static inline const uint32_t *bu(const struct op_call *c, int i)
{
	return (const uint32_t *)bp(c, i);
}

/* cast.c: the cast family (kernels/abi/cast.h), group units */
void gpo__cpu_cast(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_quant8(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_dequant8(const struct op_call *c, uint32_t lo, uint32_t hi);

/* tensor.c: the tensor engine's ops (kernels/abi/tensor.h), group units */
void gpo__cpu_matmul(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_matmul_big(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_unary(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_binary(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_unary_bwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_reduce(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_reduce_bwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_softmax(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_softmax_bwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_xent(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_xent_bwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_accuracy(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_gather_rows(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_embed_bwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_layernorm(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_layernorm_bwd(const struct op_call *c, uint32_t lo,
			    uint32_t hi);
void gpo__cpu_attn_fwd(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_attn_bwd_d(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_attn_bwd_dq(const struct op_call *c, uint32_t lo, uint32_t hi);
void gpo__cpu_attn_bwd_dkdv(const struct op_call *c, uint32_t lo,
			    uint32_t hi);

#endif /* GPUOPT_CPU_I_H */
