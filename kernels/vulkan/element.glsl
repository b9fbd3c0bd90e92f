/* SPDX-License-Identifier: MIT */
/*
 * element.glsl - main() of the element kernels
 *
 * One invocation per float4 over args.n elements in a grid-stride loop
 * (the backend caps the dispatch, so there may be fewer invocations than
 * float4s); the last n % 4 elements go to the first invocations, scalar.
 * The kernel defines, before including this file:
 *   bool begin()           false: do nothing (a skipped step)
 *   void update4(uint i)   elements 4i .. 4i+3 (float4 index i)
 *   void update1(uint i)   element i alone
 */
void main()
{
	uint n4 = args.n >> 2;
	uint stride = gl_NumWorkGroups.x * WG_SIZE;
	uint id = gl_GlobalInvocationID.x;

	if (!begin())
		return;
	for (uint i = id; i < n4; i += stride)
		update4(i);
	if (id < (args.n & 3u))
		update1(n4 * 4u + id);
}
