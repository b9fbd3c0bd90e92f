/* SPDX-License-Identifier: MIT */
/*
 * objective.cl - the built-in objectives (demos, the daemon's quadratic:N
 * and rosenbrock:N models): each group writes the gradient of its chunk
 * [i * aux1, (i + 1) * aux1) of the n elements and the sum of their loss
 * terms in partials[2i] (partials[2i + 1] = 0). Scalar loads: rosenbrock
 * reads its neighbours, and neither is on an optimizer's hot path.
 */

/* loss_i = 0.5 c_i (x_i - 1)^2, c_i = 1 + i % 7; g_i = c_i (x_i - 1) */
KERNEL void obj_quadratic(BUF(const float, x), BUF(float, g),
			  BUF(float, part), KARGS)
{
	__local float tmp[WG_SIZE];
	uint grp = get_group_id(0), start, end;
	float loss = 0.0f;

	VIEW(x);
	VIEW(g);
	VIEW(part);
	group_range(grp, n, aux1, &start, &end);
	for (uint i = start + get_local_id(0); i < end; i += WG_SIZE) {
		float c = (float)(1 + i % 7), d = x[i] - 1.0f;

		g[i] = c * d;
		loss += 0.5f * c * d * d;
	}
	loss = wg_sum(tmp, loss);
	if (get_local_id(0) == 0) {
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0.0f;
	}
}

/*
 * loss_i = 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2 for i < n - 1;
 * g_i = -400 x_i (x_{i+1} - x_i^2) - 2 (1 - x_i)   [i < n - 1]
 *       + 200 (x_i - x_{i-1}^2)                      [i > 0]
 */
KERNEL void obj_rosenbrock(BUF(const float, x), BUF(float, g),
			   BUF(float, part), KARGS)
{
	__local float tmp[WG_SIZE];
	uint grp = get_group_id(0), start, end;
	float loss = 0.0f;

	VIEW(x);
	VIEW(g);
	VIEW(part);
	group_range(grp, n, aux1, &start, &end);
	for (uint i = start + get_local_id(0); i < end; i += WG_SIZE) {
		float xi = x[i], gi = 0.0f;

		if (i + 1 < n) {
			float t = x[i + 1] - xi * xi, u = 1.0f - xi;

			loss += 100.0f * t * t + u * u;
			gi += -400.0f * xi * t - 2.0f * u;
		}
		if (i > 0)
			gi += 200.0f * (xi - x[i - 1] * x[i - 1]);
		g[i] = gi;
	}
	loss = wg_sum(tmp, loss);
	if (get_local_id(0) == 0) {
		part[2 * grp] = loss;
		part[2 * grp + 1] = 0.0f;
	}
}
