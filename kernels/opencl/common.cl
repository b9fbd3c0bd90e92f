/* SPDX-License-Identifier: MIT */
/*
 * common.cl - what every OpenCL kernel of gpuopt shares
 *
 * The backend builds one program per op family and dtype: this file, then
 * kernels/opencl/<family>/<family>.cl, with their #include lines expanded
 * from the sources embedded in the library, as OpenCL C 1.2 (NVIDIA
 * reports OpenCL 3.0 but compiles OpenCL C 1.2). The build options define
 * GPO_DTYPE_<dtype>, which picks T below.
 *
 * Argument convention (opencl.c sets them in this order): each buffer of
 * the op's descriptor as a pointer plus its offset in elements (BUF), so
 * that one device allocation serves every sub-allocation of the pool
 * without sub-buffers; then the family's parameter struct of
 * kernels/abi/<family>.h, by value. Offsets of buffers that element
 * kernels read as float4 are multiples of 4 elements (gpo__launch checks
 * OP_VEC4 buffers).
 */
#include "abi/abi.h"

/*
 * The cpu backend is the numerical reference and does not contract a * b
 * + c into fma; neither do we, so that both give the same float rounding.
 * The kernels move bytes: the extra instructions cost nothing.
 */
#pragma OPENCL FP_CONTRACT OFF

/*
 * T: the element type of the dtype this program is built for, for the
 * kernels that come in several (copy). f16 and bf16 would be stored as
 * ushort and converted (vload_half), u8 as uchar, i64 as long.
 */
#if defined(GPO_DTYPE_F32)
#define T	float
#define T4	float4
#elif defined(GPO_DTYPE_I32)
#define T	int
#define T4	int4
#elif defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
/* an f32 update kernel's program for f16/bf16 parameters (lamb.cl) */
#define T	float
#define T4	float4
#else
#error "no GPO_DTYPE_xxx defined, or one without OpenCL kernels"
#endif

#define KERNEL \
	__kernel __attribute__((reqd_work_group_size(GPO_WG_SIZE, 1, 1)))

#define BUF(type, x)	__global type *x, ulong x##_off
#define VIEW(x)		(x += x##_off)

/*
 * Element kernels: the float4s [0, n / 4), one per work-item (the loop
 * only runs again if the grid is short), then work-item 0 does the last
 * n % 4 elements. The per-kernel body takes a
 * count of valid lanes; the loop passes the constant 4, which folds the
 * partial loads and stores below into plain vector accesses.
 */
#define FOR_EACH_FLOAT4(i, n) \
	for (uint i = get_global_id(0); i < ((n) >> 2); i += get_global_size(0))
#define TAIL_START(n)	(((n) >> 2) << 2)
#define HAS_TAIL(n)	(get_global_id(0) == 0 && ((n) & 3) != 0)

static inline float4 ld4(__global const float *x, uint e, uint cnt)
{
	float4 v = (float4)(0.0f);

	if (cnt == 4)
		return *(__global const float4 *)(x + e);
	v.x = x[e];
	if (cnt > 1)
		v.y = x[e + 1];
	if (cnt > 2)
		v.z = x[e + 2];
	return v;
}

static inline void st4(__global float *x, uint e, uint cnt, float4 v)
{
	if (cnt == 4) {
		*(__global float4 *)(x + e) = v;
		return;
	}
	x[e] = v.x;
	if (cnt > 1)
		x[e + 1] = v.y;
	if (cnt > 2)
		x[e + 2] = v.z;
}

/*
 * The gradient multiplier of abi.h: scal[GPO_SCAL_MUL] when the norm pass
 * ran (unscale and clip), negated for maximize. Returns 0 when the step is
 * to be skipped (non-finite gradients). Uniform over the launch.
 */
static inline int grad_mul(__global const float *scal, uint flags, float *gm)
{
	float m = 1.0f;

	if (flags & GPO_UPD_USE_SCAL) {
		if (scal[GPO_SCAL_SKIP] != 0.0f)
			return 0;
		m = scal[GPO_SCAL_MUL];
	}
	*gm = (flags & GPO_UPD_MAXIMIZE) ? -m : m;
	return 1;
}

/* With GPO_UPD_USE_SCAL, scal[GPO_SCAL_SKIP] != 0 means: skip this step. */
static inline int step_skipped(__global const float *scal, uint flags)
{
	return (flags & GPO_UPD_USE_SCAL) && scal[GPO_SCAL_SKIP] != 0.0f;
}

/*
 * Tree sums of two values per work-item at once; every work-item gets the
 * totals. A fixed tree: the same inputs give the same bits on every run.
 */
static inline float2 wg_sum2(__local float2 *tmp, float2 v)
{
	uint lid = get_local_id(0);

	tmp[lid] = v;
	barrier(CLK_LOCAL_MEM_FENCE);
	for (uint s = GPO_WG_SIZE / 2; s > 0; s >>= 1) {
		if (lid < s)
			tmp[lid] += tmp[lid + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = tmp[0];
	/* tmp may be reused right after: nobody may still read tmp[0] */
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/* Elements [start, end) of group @grp in norm_partial's layout (norm.h). */
static inline void group_range(uint grp, uint n, uint chunk, uint *start,
			       uint *end)
{
	ulong s = (ulong)grp * chunk, e = s + chunk;

	*start = (uint)min(s, (ulong)n);
	*end = (uint)min(e, (ulong)n);
}
