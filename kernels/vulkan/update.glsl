/* SPDX-License-Identifier: MIT */
/*
 * update.glsl - the gradient multiplier of the update kernels; include it
 * after SCAL_BUF().
 *
 * gm = scal[0] (unscale and clip factor) when the norm pass ran, else 1,
 * negated for maximize. With KF_USE_SCAL and scal[1] != 0 the step is
 * skipped: every invocation reads the same scal, so all return alike.
 */
float gm;

bool grad_mul()
{
	float m = 1.0;

	if (FLAG(KF_USE_SCAL)) {
		if (scal[1] != 0.0)
			return false;
		m = scal[0];
	}
	gm = FLAG(KF_MAXIMIZE) ? -m : m;
	return true;
}

/* LAMB_TRUST and LAMB_APPLY skip like the others but never negate */
bool step_skipped()
{
	return FLAG(KF_USE_SCAL) && scal[1] != 0.0;
}
