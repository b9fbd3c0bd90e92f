// SPDX-License-Identifier: MIT
/* copy.comp - K_COPY: dst = src; the bandwidth yardstick */
#version 450
#include "common.glsl"

FLOAT4_BUF(0, dst);
FLOAT4_BUF(1, src);

bool begin()
{
	return true;
}

void update4(uint i)
{
	dst4[i] = src4[i];
}

void update1(uint i)
{
	dst[i] = src[i];
}

#include "element.glsl"
