// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * matmul_half.comp - matmul_half: matmul (matmul.comp) whose products are
 * of binary16 values (abi/matmul.h: GPO_MM_F16_A/B, GPO_MM_ROUND), on
 * devices without cooperative matrices.
 */
#version 450
#define GPO_MM_HALF
#include "matmul/tile.glsl"
