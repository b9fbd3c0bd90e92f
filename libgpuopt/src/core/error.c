// SPDX-License-Identifier: MIT
/*
 * error.c - per-thread error messages behind gpo_errmsg()
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "core/gpuopt_i.h"

static __thread char errmsg[512];

int gpo__err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(errmsg, sizeof(errmsg), fmt, ap);
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
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
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

const char *gpo_errmsg(void)
{
	return errmsg;
}

#define STR_(x) #x
#define STR(x) STR_(x)

const char *gpo_version(void)
{
	return STR(GPUOPT_VERSION_MAJOR) "." STR(GPUOPT_VERSION_MINOR) "."
		STR(GPUOPT_VERSION_PATCH);
}
