/* SPDX-License-Identifier: MIT */
/*
 * lamb.glsl - LAMB's update direction from the updated moments, as
 * the cpu backend's lamb_r():
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 */
float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	return (m / bc1) / (sqrt(v / bc2) + eps) + wd * p;
}
