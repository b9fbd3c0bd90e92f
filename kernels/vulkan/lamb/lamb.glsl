/* SPDX-License-Identifier: MIT */
/*
 * lamb.glsl - LAMB's update direction from the updated moments, as
 * the cpu backend's lamb_r():
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 * with the device's / and sqrt (Vulkan: within 2.5 and 3 ulp), not
 * precision.glsl's correctly rounded ones: LAMB's trust ratio divides
 * norms that are sums in a device-dependent order, so its steps differ
 * from the cpu's in the last bits whatever r does (test_optim_lamb checks
 * them against float64), and the emulated division and root, three and
 * one an element in both passes, made the step compute-bound: 256M
 * parameters on an H100 took 5.1 ms with them, 3.67 ms (98 % of the copy
 * limit) without (2026-11-25). The trust ratio keeps cr_div and cr_sqrt:
 * they run once a tensor.
 */
#include "precision.glsl"

float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	precise float r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p;

	return r;
}
