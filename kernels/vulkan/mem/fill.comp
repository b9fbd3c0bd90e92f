// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/* fill.comp - fill: dst = value */
#version 450
#include "common.glsl"
#include "abi/mem.h"

ELEM4_BUF(0, dst);

bool begin()
{
	return true;
}

void update4(uint i)
{
	dst4[i] = T4(args.value);
}

void update1(uint i)
{
	dst[i] = T(args.value);
}

#include "element.glsl"
