/* SPDX-License-Identifier: MIT */
/*
 * cast.glsl - what the cast family's shaders share (abi/cast.h): 16-bit
 * and u8 views are packed in 32-bit words, and one invocation writes a
 * whole word, so no two invocations share one.
 */
#define UINT_RW(b, name) \
	layout(set = 0, binding = b, std430) buffer name##_w1 \
		{ uint name[]; }

#define CAST_SIGNED	((args.flags & GPO_CAST_SIGNED) != 0u)
