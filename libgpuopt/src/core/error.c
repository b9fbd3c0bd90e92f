// SPDX-License-Identifier: MIT
/*
 * error.c - per-thread error messages behind gpo_errmsg()
 */
#include <stdarg.h>
#include <stdio.h>
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

void gpo__err_clear(void)
{
	errmsg[0] = '\0';
}

const char *gpo_errmsg(void)
{
	return errmsg;
}

const char *gpo_version(void)
{
	return "0.1.0";
}
