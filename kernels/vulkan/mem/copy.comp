// SPDX-License-Identifier: MIT
// dtypes: f32 i32
// recorded: yes
/* copy.comp - copy: dst = src; the bandwidth yardstick */
#version 450
#include "common.glsl"
#include "abi/mem.h"

ELEM4_BUF(0, dst);
ELEM4_BUF(1, src);

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
