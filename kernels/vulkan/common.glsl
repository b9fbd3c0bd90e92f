/* SPDX-License-Identifier: MIT */
/*
 * common.glsl - what every gpuopt compute shader shares
 *
 * A shader includes this file, then its family's parameter header
 * ("abi/adam.h"), which declares the push-constant block `args` (the
 * family's struct, at most GPO_ARGS_MAX bytes: one pipeline layout with a
 * push range of GPO_ARGS_MAX bytes serves every shader). Buffer i of the
 * op's descriptor (backend/ops.c) is storage buffer (set 0, binding i).
 *
 * Each shader is compiled once per dtype its op has, with
 * -DGPO_DTYPE_F32 or -DGPO_DTYPE_I32 (its first lines say which:
 * "// dtypes: f32 i32"); T and T4 are that type and its 4-vector. The
 * 8-bit update kernels come in f32, f16 and bf16: their parameters'
 * dtype (update.glsl), their arithmetic f32 in every one. glslc
 * optimizes each module (-O) unless the shader's first lines say
 * otherwise ("// glslc: -O0": matmul_big, whose comment says why;
 * tests/tools/spv_glslc_line_is_applied.sh checks the build follows it).
 *
 * No mediump and no relaxed precision anywhere: results are compared with
 * the cpu backend to 1e-5.
 */
#extension GL_GOOGLE_include_directive : require

#include "abi/abi.h"

#if defined(GPO_DTYPE_F32)
#define T	float
#define T4	vec4
#elif defined(GPO_DTYPE_I32)
#define T	int
#define T4	ivec4
#elif defined(GPO_DTYPE_F16) || defined(GPO_DTYPE_BF16)
/* an f32 update kernel's module for f16/bf16 parameters (update.glsl) */
#define T	float
#define T4	vec4
#else
#error "compile with -DGPO_DTYPE_<dtype>"
#endif

layout(local_size_x = GPO_WG_SIZE) in;
#define WG_SIZE uint(GPO_WG_SIZE)

/* flags are the same for every invocation: branches on them are uniform */
#define FLAG(f) ((args.flags & (f)) != 0u)

/*
 * A buffer seen twice: name4[] for aligned 4-vector access (the views
 * the optimizer hands out start on 256 bytes) and name[] for the n % 4
 * elements at the end and for unaligned scalar access. ELEM4_BUF is of
 * the dtype compiled for, FLOAT4_BUF of float whatever it is.
 */
#define VEC4_BUF(b, name, S, S4) \
	layout(set = 0, binding = b, std430) buffer name##_v4 \
		{ S4 name##4[]; }; \
	layout(set = 0, binding = b, std430) buffer name##_f1 \
		{ S name[]; }

#define ELEM4_BUF(b, name)	VEC4_BUF(b, name, T, T4)
#define FLOAT4_BUF(b, name)	VEC4_BUF(b, name, float, vec4)

#define FLOAT_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_f1 \
		{ float name[]; }

#define UINT_BUF(b, name) \
	layout(set = 0, binding = b, std430) readonly buffer name##_u1 \
		{ uint name[]; }

/* scal: the GPO_SCAL_COUNT floats norm_final writes (abi.h) */
#define SCAL_BUF(b) \
	layout(set = 0, binding = b, std430) readonly buffer scal_f1 \
		{ float scal[]; }
