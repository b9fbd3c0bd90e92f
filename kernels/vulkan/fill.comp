// SPDX-License-Identifier: MIT
/* fill.comp - K_FILL: dst = s0 */
#version 450
#include "common.glsl"

FLOAT4_BUF(0, dst);

bool begin()
{
	return true;
}

void update4(uint i)
{
	dst4[i] = vec4(args.s[0]);
}

void update1(uint i)
{
	dst[i] = args.s[0];
}

#include "element.glsl"
