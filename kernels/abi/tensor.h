/* SPDX-License-Identifier: MIT */
/*
 * tensor.h - what the tensor engine's op families (matmul.h, ew.h,
 * reduce.h, softmax.h, loss.h, gather.h) share
 *
 * Tensor ops are group ops (GRID_GROUPS). The engine binds each buffer
 * from the start of its block (an arena or a flat optimizer buffer) and
 * says where a tensor starts by an element offset in the parameter
 * struct (off_*), so a view needs no alignment and one binding serves
 * every tensor of an arena. Offsets and counts are 32-bit: a buffer the
 * engine binds holds fewer than 2^32 elements, and fits the device's
 * largest binding (the engine checks both before it launches).
 *
 * Except matmul, softmax and the losses (whose groups have their own
 * meaning, see their headers), a tensor op runs over its n output
 * elements in a grid-stride loop:
 *
 *	for (i = group * GPO_WG_SIZE + local; i < n; i += groups * GPO_WG_SIZE)
 *
 * where @groups is the launch's workgroup count (the op_call's work,
 * repeated in the struct). A group past @groups does nothing.
 *
 * With GPO_T_ACCUM set, an op adds its result to what the output holds
 * (y += result) instead of writing it (y = result): how backward sums
 * the gradient contributions of a tensor used more than once. Without
 * it, the output is only written, never read (it may hold NaN).
 *
 * Every result is a function of the inputs alone: no atomics, sums in
 * a fixed order, so a device gives the same bits on every run.
 *
 * lavapipe (Mesa's llvmpipe, Vulkan on the CPU) ends the loops of a
 * work-item after 65535 iterations in all (LP_MAX_TGSI_LOOP_ITERATIONS,
 * counted over every loop of the invocation), silently. The engine keeps
 * what one work-item walks below that where it can (the sums of
 * embed_bwd are cut into launches of fewer rows); a kernel whose
 * work-item sums a longer axis by itself (reduce with inner > 1 over more
 * than ~65000 terms) gives wrong results there, and on no other device.
 */
#ifndef GPO_ABI_TENSOR_H
#define GPO_ABI_TENSOR_H
#include "abi.h"

#define GPO_T_ACCUM	(1u << 0)	/* y += result */

#define GPO_T_DIMS	4		/* shapes and strides, innermost last */

#endif
