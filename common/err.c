// SPDX-License-Identifier: MIT
/*
 * err.c - the per-thread error message that gpo_errmsg() returns
 */
#include <stdarg.h>
#include "common/common.h"

static __thread char errmsg[512];

int gpo__err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gpo__vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
	va_end(ap);
	return err;
}

void gpo__err_clear(void)
{
	errmsg[0] = '\0';
}

const char *gpo__errmsg(void)
{
	return errmsg;
}
