// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * reduce.comp - reduce: SUM or MAX of x [outer, len, inner] over len into
 * y [outer, inner] (abi/reduce.h), MAX optionally with the first index of
 * the maximum into idx (GPO_RED_IDX).
 *
 * inner == 1: a workgroup per output, rows grp, grp + groups, ...; each
 * invocation takes r = t, t + 256, ... in order, and a fixed tree joins
 * the 256 partial results. inner > 1: an invocation per output, r in
 * order, grid-stride over the n outputs.
 */
#version 450
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "abi/reduce.h"
#include "group.glsl"
#include "tensor.glsl"

FLOAT_IN(0, x);
FLOAT_BUF(1, y);
layout(set = 0, binding = 2, std430) writeonly buffer idx_i1 { int idx[]; };

/* output (o, i): its result, written with idx when asked */
void put(uint o, uint i, float v, uint at)
{
	uint out_i = FLAG(GPO_RED_TOUT) ? i * args.outer + o :
					  o * args.inner + i;

	STORE(y, args.off_y + out_i, args.alpha * v);
	if (args.fn == GPO_RED_MAX && FLAG(GPO_RED_IDX))
		idx[args.off_idx + out_i] = int(at);
}

#define RED_BATCH	16u

/*
 * One output by one invocation: r = 0 .. len - 1 in order. len 0 gives
 * 0 (SUM), or -inf at index 0 (MAX).
 */
void reduce_one(uint o, uint i)
{
	uint base = args.off_x + o * args.len * args.inner + i, at = 0u;
	float v = args.fn == GPO_RED_MAX ? -f_inf() : 0.0;

	if (args.fn == GPO_RED_MAX) {
		for (uint r = 0u; r < args.len; r++) {
			float w = x[base + r * args.inner];

			if (r == 0u || arg_before(w, r, v, at)) {
				v = w;
				at = r;
			}
		}
	} else {
		uint r = 0u;

		/*
		 * RED_BATCH loads in flight at once, added in order: a
		 * column of thousands walked one load at a time waits on
		 * memory for each (the gradients of biases)
		 */
		for (; args.len - r >= RED_BATCH; r += RED_BATCH) {
			float w[RED_BATCH];

			[[unroll]] for (uint q = 0u; q < RED_BATCH; q++)
				w[q] = x[base + (r + q) * args.inner];
			[[unroll]] for (uint q = 0u; q < RED_BATCH; q++)
				v += w[q];
		}
		for (; r < args.len; r++)
			v += x[base + r * args.inner];
	}
	put(o, i, v, at);
}

/* One output (row o, inner 1) by the whole group. */
void reduce_row(uint o)
{
	uint t = gl_LocalInvocationID.x, base = args.off_x + o * args.len;
	uint at = 0xffffffffu;
	float v;

	if (args.fn == GPO_RED_MAX) {
		v = -f_inf();
		for (uint r = t; r < args.len; r += WG_SIZE) {
			float w = x[base + r];

			if (arg_before(w, r, v, at)) {
				v = w;
				at = r;
			}
		}
		tree_argmax(v, at);
		if (args.len == 0u)
			at = 0u;
	} else {
		v = 0.0;
		for (uint r = t; r < args.len; r += WG_SIZE)
			v += x[base + r];
		v = tree_sum(v);
	}
	if (t == 0u)
		put(o, 0u, v, at);
}

void main()
{
	uint grp = group_index();

	if (grp >= args.groups)
		return;
	if (args.inner == 1u) {
		for (uint o = grp; o < args.outer;
		     o = row_next(o, args.outer, args.groups))
			reduce_row(o);
		return;
	}
	for (uint k = grid_first(grp, args.n); k < args.n;
	     k = grid_next(k, args.n, args.groups))
		reduce_one(k / args.inner, k % args.inner);
}
