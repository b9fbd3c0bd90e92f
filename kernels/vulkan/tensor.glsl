/* SPDX-License-Identifier: MIT */
/*
 * tensor.glsl - what the tensor kernels share (abi/tensor.h): the
 * grid-stride loop, the output write with or without GPO_T_ACCUM, and
 * fixed trees over a workgroup for sums, maxima and first maxima.
 * Include after common.glsl, the family's header and group.glsl.
 */
#include "math.glsl"

/*
 * The grid-stride loop of tensor.h over @n items, @grp of @groups
 * groups, per invocation:
 *
 *	for (uint i = grid_first(grp, n); i < n; i = grid_next(i, n, groups))
 *
 * written so that nothing wraps at 2^32: a group past the items gets n
 * at once, and a stride of 2^32 or more ends every loop after its first
 * item (no item is that far past another).
 */
uint grid_first(uint grp, uint n)
{
	if (n == 0u || grp > (n - 1u) / WG_SIZE)
		return n;
	return grp * WG_SIZE + gl_LocalInvocationID.x;
}

uint grid_next(uint i, uint n, uint groups)
{
	if (groups >= (1u << 24) || n - i <= groups * WG_SIZE)
		return n;
	return i + groups * WG_SIZE;
}

/* the row loop of softmax.h and loss.h: rows grp, grp + groups, ... */
uint row_next(uint r, uint rows, uint groups)
{
	return rows - r <= groups ? rows : r + groups;
}

/*
 * Float max that keeps NaN (GLSL's max() may return either operand when
 * one is NaN): a row with a NaN has a NaN maximum, as torch's.
 */
float max_nan(float a, float b)
{
	return (a > b || is_nan(a)) ? a : b;
}

/* does (v, i) come before (w, j) as a first maximum (NaN the largest)? */
bool arg_before(float v, uint i, float w, uint j)
{
	bool vn = is_nan(v), wn = is_nan(w);

	if (vn != wn)
		return vn;
	if (!vn && v != w)
		return v > w;
	return i < j;
}

/* a barrier that also makes the group's shared writes visible */
void group_sync()
{
	memoryBarrierShared();
	barrier();
}

shared float tree_v[WG_SIZE];
shared uint tree_i[WG_SIZE];

/*
 * The trees: every invocation of the group calls them (they hold
 * barriers) and gets the group's result. The barrier on entry lets a
 * call follow another at once: nobody is still reading the last result
 * from tree_v[0] when invocation 0 writes its new value there.
 */
/*
 * part_sum: the sum over each part of @width (a power of two dividing
 * WG_SIZE) of consecutive invocations, to every one of the part.
 */
float part_sum(float v, uint width)
{
	uint t = gl_LocalInvocationID.x, l = t % width;

	group_sync();
	tree_v[t] = v;
	group_sync();
	for (uint s = width / 2u; s > 0u; s >>= 1) {
		if (l < s)
			tree_v[t] += tree_v[t + s];
		group_sync();
	}
	return tree_v[t - l];
}

float tree_sum(float v)
{
	return part_sum(v, WG_SIZE);
}

float tree_max(float v)
{
	uint t = gl_LocalInvocationID.x;

	group_sync();
	tree_v[t] = v;
	group_sync();
	for (uint s = WG_SIZE / 2u; s > 0u; s >>= 1) {
		if (t < s)
			tree_v[t] = max_nan(tree_v[t], tree_v[t + s]);
		group_sync();
	}
	return tree_v[0];
}

/*
 * The first maximum over the group: (v, i) in, the winner out. An
 * invocation that saw nothing passes i = 0xffffffff with v = -inf, which
 * loses to everything it meets (a real -inf has a smaller index).
 */
void tree_argmax(inout float v, inout uint i)
{
	uint t = gl_LocalInvocationID.x;

	group_sync();
	tree_v[t] = v;
	tree_i[t] = i;
	group_sync();
	for (uint s = WG_SIZE / 2u; s > 0u; s >>= 1) {
		if (t < s && arg_before(tree_v[t + s], tree_i[t + s],
					tree_v[t], tree_i[t])) {
			tree_v[t] = tree_v[t + s];
			tree_i[t] = tree_i[t + s];
		}
		group_sync();
	}
	v = tree_v[0];
	i = tree_i[0];
}

/* y[o] = r, or y[o] += r with GPO_T_ACCUM: an output is read only then */
#define STORE(y, o, r) \
	{ if (FLAG(GPO_T_ACCUM)) y[o] += (r); else y[o] = (r); }

/* a read-only float buffer, bound at binding b */
#define FLOAT_IN(b, name) \
	layout(set = 0, binding = b, std430) readonly buffer name##_r1 \
		{ float name[]; }

/* a read-only i32 buffer (labels, indices) */
#define INT_IN(b, name) \
	layout(set = 0, binding = b, std430) readonly buffer name##_i1 \
		{ int name[]; }
