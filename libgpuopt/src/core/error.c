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

#define STR_(x) #x
#define STR(x) STR_(x)

const char *gpo_version(void)
{
	return STR(GPUOPT_VERSION_MAJOR) "." STR(GPUOPT_VERSION_MINOR) "."
		STR(GPUOPT_VERSION_PATCH);
}
