// SPDX-License-Identifier: MIT
// interop_vulkan_grad.comp - the interop example's own kernel: the
// gradient of 1/2 sum_i a_i (w_i - t_i)^2, g_i = a_i (w_i - t_i), for the
// first n parameters. Built to SPIR-V at build time (the Makefile's
// interop_vulkan rule), embedded in interop_vulkan.c.
#version 450

layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Params { float w[]; };
layout(std430, binding = 1) writeonly buffer Grads { float g[]; };
// (a_i, t_i): curvature and target of each parameter
layout(std430, binding = 2) readonly buffer Data { vec2 d[]; };

layout(push_constant) uniform Args { uint n; } args;

void main()
{
	uint i = gl_GlobalInvocationID.x;

	if (i < args.n)
		g[i] = d[i].x * (w[i] - d[i].y);
}
