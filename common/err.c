// SPDX-License-Identifier: MIT
/*
 * err.c - the per-thread error message that gpo_errmsg() returns
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
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

int gpo__err_prefix(int err, const char *fmt, ...)
{
	char prefix[256], msg[sizeof(errmsg)];
	va_list ap;
	int n;

	/* the arguments may point into errmsg: format before overwriting it */
	va_start(ap, fmt);
	gpo__vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(msg, errmsg, sizeof(msg));
	n = snprintf(errmsg, sizeof(errmsg), "%s%s", prefix, msg[0] ? ": " : "");
	if (n >= 0 && (size_t)n < sizeof(errmsg))
		snprintf(errmsg + n, sizeof(errmsg) - n, "%s", msg);
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
