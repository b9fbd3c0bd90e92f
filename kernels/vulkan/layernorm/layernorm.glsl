/* SPDX-License-Identifier: MIT */
/*
 * layernorm.glsl - what layernorm.comp and layernorm_bwd.comp share: the
 * rows' blocks and a team's sum (abi/layernorm.h). Include after
 * tensor.glsl (tree_v, group_sync).
 */

/* the blocks of GPO_LN_ROWS rows (the last one short) */
uint ln_blocks(uint rows)
{
	return rows / GPO_LN_ROWS + (rows % GPO_LN_ROWS != 0u ? 1u : 0u);
}

/*
 * The sum of the @v of this invocation's team of GPO_LN_TEAM, in a fixed
 * tree, to each of them. Every invocation of the group calls it (it holds
 * barriers); the barrier on entry lets a call follow another at once.
 */
float team_sum(float v)
{
	uint t = gl_LocalInvocationID.x, l = t % GPO_LN_TEAM;

	group_sync();
	tree_v[t] = v;
	group_sync();
	for (uint s = GPO_LN_TEAM / 2u; s > 0u; s >>= 1) {
		if (l < s)
			tree_v[t] += tree_v[t + s];
		group_sync();
	}
	return tree_v[t - l];
}
