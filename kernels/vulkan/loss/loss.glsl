/* SPDX-License-Identifier: MIT */
/*
 * loss.glsl - what the loss kernels share (abi/loss.h): the buffers of
 * logits and labels, and a row's max and sum of exponentials by the
 * whole workgroup in a fixed order.
 */
FLOAT_IN(0, x);
INT_IN(1, lab);

/*
 * row_lse - for row @r: its max @m and s = sum_j exp(x_j - m), each
 * invocation taking j = t, t + 256, ... in order, fixed trees after.
 */
void row_lse(uint r, out float m, out float s)
{
	uint t = gl_LocalInvocationID.x, xo = args.off_x + r * args.len;

	m = -f_inf();
	for (uint j = t; j < args.len; j += WG_SIZE)
		m = max_nan(m, x[xo + j]);
	m = tree_max(m);
	s = 0.0;
	for (uint j = t; j < args.len; j += WG_SIZE)
		s += exp_acc(x[xo + j] - m);
	s = tree_sum(s);
}

/* the label of row @r, or -1 when it is outside [0, len) */
int row_label(uint r)
{
	int l = lab[args.off_lab + r];

	return (l < 0 || uint(l) >= args.len) ? -1 : l;
}
