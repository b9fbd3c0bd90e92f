// SPDX-License-Identifier: MIT
/*
 * time.c - clocks in nanoseconds and the wall-clock stamp of the logs
 */
#include <stdio.h>
#include <time.h>
#include "common/common.h"

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gpo__now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t gpo__realtime_ns(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void gpo__fmt_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
}
