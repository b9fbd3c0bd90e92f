/* SPDX-License-Identifier: MIT */
/*
 * common.glsl - what every gpuopt compute shader shares
 *
 * The push constants are exactly the scalar tail of struct kernel_args
 * (backend_i.h): uint n, flags, aux0, aux1; float s[12] - 64 bytes, the
 * same block in every shader, so one pipeline layout serves them all.
 * Buffer args.buf[i] is storage buffer (set 0, binding i).
 *
 * No mediump and no relaxed precision anywhere: results are compared with
 * the cpu backend to 1e-5.
 */
#extension GL_GOOGLE_include_directive : require

layout(local_size_x = 256) in;
#define WG_SIZE 256u

layout(push_constant, std430) uniform Args {
	uint n;
	uint flags;
	uint aux0;
	uint aux1;
	float s[12];
} args;

/* the KF_* flags of backend_i.h */
#define KF_MAXIMIZE	(1u << 0)
#define KF_USE_SCAL	(1u << 1)
#define KF_CHECK_FINITE	(1u << 2)
#define KF_MOMENTUM	(1u << 3)
#define KF_NESTEROV	(1u << 4)
#define KF_FIRST	(1u << 5)
#define KF_AMSGRAD	(1u << 6)
#define KF_DECOUPLED	(1u << 7)
#define KF_CENTERED	(1u << 8)

/* flags are the same for every invocation: branches on them are uniform */
#define FLAG(f) ((args.flags & (f)) != 0u)

/*
 * A float buffer seen twice: name4[] for aligned float4 access (the views
 * the optimizer hands out start on 256 bytes) and name[] for the n % 4
 * elements at the end and for unaligned scalar access.
 */
#define FLOAT4_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_v4 \
		{ vec4 name##4[]; }; \
	layout(set = 0, binding = b, std430) buffer name##_f1 \
		{ float name[]; }

#define FLOAT_BUF(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_f1 \
		{ float name[]; }

#define UINT_BUF(b, name) \
	layout(set = 0, binding = b, std430) readonly buffer name##_u1 \
		{ uint name[]; }

/* scal: the 4 floats K_NORM_FINAL writes (gm, skip, norm, total) */
#define SCAL_BUF(b) \
	layout(set = 0, binding = b, std430) readonly buffer scal_f1 \
		{ float scal[]; }
