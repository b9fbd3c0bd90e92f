/* SPDX-License-Identifier: MIT */
/*
 * update.glsl - the gradient multiplier of the update kernels; include it
 * after SCAL_BUF() and the family header.
 *
 * gm = scal[GPO_SCAL_MUL] (unscale and clip factor) when the norm pass
 * ran, else 1, negated for maximize. With GPO_UPD_USE_SCAL and
 * scal[GPO_SCAL_SKIP] != 0 the step is skipped: every invocation reads
 * the same scal, so all return alike.
 */
float gm;

bool grad_mul()
{
	float m = 1.0;

	if (FLAG(GPO_UPD_USE_SCAL)) {
		if (scal[GPO_SCAL_SKIP] != 0.0)
			return false;
		m = scal[GPO_SCAL_MUL];
	}
	gm = FLAG(GPO_UPD_MAXIMIZE) ? -m : m;
	return true;
}

/* lamb_trust and lamb_apply skip like the others but never negate */
bool step_skipped()
{
	return FLAG(GPO_UPD_USE_SCAL) && scal[GPO_SCAL_SKIP] != 0.0;
}
