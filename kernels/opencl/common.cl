/* SPDX-License-Identifier: MIT */
/*
 * common.cl - what every OpenCL kernel of gpuopt shares
 *
 * The backend builds one program from all the kernels/opencl files,
 * this one first, as OpenCL C 1.2 (NVIDIA reports OpenCL 3.0 but compiles
 * OpenCL C 1.2).
 *
 * Argument convention (backend_opencl.c sets them in this order): each
 * buffer of backend_i.h as a pointer plus its offset in elements (BUF), so
 * that one device allocation serves every sub-allocation of the pool
 * without sub-buffers; then the scalars of struct kernel_args (KARGS).
 * Offsets of buffers that element kernels read as float4 are multiples of
 * 4 elements (pool and group views are 256-byte aligned).
 */

/*
 * The cpu backend is the numerical reference and does not contract a * b
 * + c into fma; neither do we, so that both give the same float rounding.
 * The kernels move bytes: the extra instructions cost nothing.
 */
#pragma OPENCL FP_CONTRACT OFF

#define WG_SIZE		256	/* KERNEL_WG_SIZE */

#define KF_MAXIMIZE	(1u << 0)
#define KF_USE_SCAL	(1u << 1)
#define KF_CHECK_FINITE	(1u << 2)
#define KF_MOMENTUM	(1u << 3)
#define KF_NESTEROV	(1u << 4)
#define KF_FIRST	(1u << 5)
#define KF_AMSGRAD	(1u << 6)
#define KF_DECOUPLED	(1u << 7)
#define KF_CENTERED	(1u << 8)

#define KERNEL __kernel __attribute__((reqd_work_group_size(WG_SIZE, 1, 1)))

#define BUF(type, x)	__global type *x, ulong x##_off
#define VIEW(x)		(x += x##_off)

#define KARGS uint n, uint flags, uint aux0, uint aux1, \
	float s0, float s1, float s2, float s3, float s4, float s5, \
	float s6, float s7, float s8, float s9, float s10, float s11

/*
 * Element kernels: the float4s [0, n / 4), one per work-item (the loop
 * only runs again if the grid is short), then work-item 0 does the last
 * n % 4 elements. The per-kernel body takes a
 * count of valid lanes; the loop passes the constant 4, which folds the
 * partial loads and stores below into plain vector accesses.
 */
#define FOR_EACH_FLOAT4(i) \
	for (uint i = get_global_id(0); i < (n >> 2); i += get_global_size(0))
#define TAIL_START	((n >> 2) << 2)
#define HAS_TAIL	(get_global_id(0) == 0 && (n & 3) != 0)

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
 * The gradient multiplier of backend_i.h: scal[0] when the norm pass ran
 * (unscale and clip), negated for maximize. Returns 0 when the step is to
 * be skipped (non-finite gradients). Uniform over the launch.
 */
static inline int grad_mul(__global const float *scal, uint flags, float *gm)
{
	float m = 1.0f;

	if (flags & KF_USE_SCAL) {
		if (scal[1] != 0.0f)
			return 0;
		m = scal[0];
	}
	*gm = (flags & KF_MAXIMIZE) ? -m : m;
	return 1;
}

/* With KF_USE_SCAL, scal[1] != 0 means: skip this step. */
static inline int step_skipped(__global const float *scal, uint flags)
{
	return (flags & KF_USE_SCAL) && scal[1] != 0.0f;
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
	for (uint s = WG_SIZE / 2; s > 0; s >>= 1) {
		if (lid < s)
			tmp[lid] += tmp[lid + s];
		barrier(CLK_LOCAL_MEM_FENCE);
	}
	v = tmp[0];
	/* tmp may be reused right after: nobody may still read tmp[0] */
	barrier(CLK_LOCAL_MEM_FENCE);
	return v;
}

/* Elements [start, end) of group @grp in the K_NORM_PARTIAL layout. */
static inline void group_range(uint grp, uint n, uint chunk, uint *start,
			       uint *end)
{
	ulong s = (ulong)grp * chunk, e = s + chunk;

	*start = (uint)min(s, (ulong)n);
	*end = (uint)min(e, (ulong)n);
}
