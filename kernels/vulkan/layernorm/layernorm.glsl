/* SPDX-License-Identifier: MIT */
/*
 * layernorm.glsl - what layernorm.comp and layernorm_bwd.comp share: the
 * rows' blocks (abi/layernorm.h); a team's sums are tensor.glsl's
 * part_sum(v, GPO_LN_TEAM).
 */

/* the blocks of GPO_LN_ROWS rows (the last one short) */
uint ln_blocks(uint rows)
{
	return rows / GPO_LN_ROWS + (rows % GPO_LN_ROWS != 0u ? 1u : 0u);
}
