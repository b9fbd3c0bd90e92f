// SPDX-License-Identifier: MIT
// dtypes: f32
// recorded: yes
/*
 * matmul.comp - matmul: C_z (+)= alpha * op(A_z) op(B_z) (abi/matmul.h),
 * one 64 x 64 tile of one C_z a workgroup.
 *
 * The 256 invocations are a 16 x 16 grid, each owning a 4 x 4 block of
 * the tile (rows 4 ty .. 4 ty + 3, columns 4 tx .. 4 tx + 3) in
 * registers. k goes by in steps of KS: the step's 64 x KS slice of op(A)
 * and KS x 64 slice of op(B) are staged in shared memory, k-major
 * (as[p][i], bs[p][j]), so that the inner loop reads four rows' A values
 * and four columns' B values as two 16-byte words. Each invocation
 * loads four elements of each slice; which four depends on the
 * transpose, so that neighbouring invocations read neighbouring
 * addresses of the matrix in memory either way. The next step's slices
 * are fetched into registers while the current one is multiplied.
 *
 * Elements past m, n or k load as 0 and results past m or n are not
 * stored, so no size needs to be a multiple of anything. Every element
 * of C sums p = 0, 1, ..., k - 1 in order: the same order everywhere.
 */
#version 450
#include "matmul/tile.glsl"
