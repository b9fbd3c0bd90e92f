// SPDX-License-Identifier: MIT
/*
 * error.c - gpo_errmsg() and gpo_version()
 */
#include "core/gpuopt_i.h"

/* the message itself is common/err.c's, set through gpo__err() */
const char *gpo_errmsg(void)
{
	return gpo__errmsg();
}

const char *gpo_version(void)
{
	return "0.1.0";
}
