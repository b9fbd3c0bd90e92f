// SPDX-License-Identifier: MIT
/*
 * num.c - numbers read and written in the C locale, whatever locale the
 * process chose with setlocale(): a program under LANG=de_DE.UTF-8 still
 * writes lr=0.001 and reads it back.
 */
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "common/common.h"

static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static locale_t c_locale;

static void c_locale_make(void)
{
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

locale_t gpo__c_locale(void)
{
	pthread_once(&c_locale_once, c_locale_make);
	return c_locale ? c_locale : LC_GLOBAL_LOCALE;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

int gpo__parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !is_digit(*s))
		return -EINVAL;
	for (; is_digit(*s); s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s)
		return -EINVAL;
	*out = v;
	return 0;
}

double gpo__strtod(const char *s, char **end)
{
	return strtod_l(s, end, gpo__c_locale());
}

int gpo__parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || strchr(" \t\n\v\f\r", *s))
		return -EINVAL;
	errno = 0;
	v = gpo__strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int gpo__parse_bool(const char *s, int *out)
{
	if (!s)
		return -EINVAL;
	if (!strcmp(s, "1") || !strcasecmp(s, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(s, "0") || !strcasecmp(s, "false")) {
		*out = 0;
		return 0;
	}
	return -EINVAL;
}

int gpo__vsnprintf(char *buf, size_t len, const char *fmt, va_list ap)
{
	locale_t old = uselocale(gpo__c_locale());
	int n;

	n = vsnprintf(buf, len, fmt, ap);
	uselocale(old);
	return n;
}

int gpo__snprintf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = gpo__vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n;
}

int gpo__fmt_double(char *buf, size_t len, double v)
{
	char best[40], text[40];
	int prec, n, best_n = -1;

	if (isnan(v))
		return snprintf(buf, len, "nan");
	if (isinf(v))
		return snprintf(buf, len, v < 0 ? "-inf" : "inf");
	for (prec = 1; prec <= 17; prec++) {
		n = gpo__snprintf(text, sizeof(text), "%.*g", prec, v);
		if (n < 0 || (size_t)n >= sizeof(text))
			continue;
		if (gpo__strtod(text, NULL) != v)
			continue;
		if (best_n < 0 || n <= best_n) {
			memcpy(best, text, n + 1);
			best_n = n;
		}
		/* more digits only make a form without exponent longer */
		if (!strchr(text, 'e'))
			break;
	}
	if (best_n < 0)		/* %.17g always reads back */
		return gpo__snprintf(buf, len, "%.17g", v);
	return snprintf(buf, len, "%s", best);
}
