/* SPDX-License-Identifier: MIT */
/*
 * lamb.glsl - LAMB's update direction from the updated moments, as
 * the cpu backend's lamb_r():
 *   r = (m / bc1) / (sqrt(v / bc2) + eps) + wd * p
 * with the correctly rounded / and sqrt of precision.glsl
 */
#include "precision.glsl"

float lamb_r(float m, float v, float p, float bc1, float bc2, float eps,
	     float wd)
{
	precise float r = cr_div(cr_div(m, bc1), cr_sqrt(cr_div(v, bc2)) + eps) +
			  wd * p;

	return r;
}
