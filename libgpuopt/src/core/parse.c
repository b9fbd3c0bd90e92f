// SPDX-License-Identifier: MIT
/*
 * parse.c - strict parsing of the numbers and words in settings texts
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/gpuopt_i.h"

int gpo__parse_double(const char *s, double *out)
{
	char *end;
	double v;

	if (!s || !*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(v))
		return -EINVAL;
	*out = v;
	return 0;
}

int gpo__parse_bool(const char *s, int *out)
{
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

int gpo__parse_u64(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end || errno == ERANGE)
		return -EINVAL;
	*out = v;
	return 0;
}

static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';';
}

int gpo__kv_next(const char **pos, char *key, size_t klen, char *value,
	    size_t vlen)
{
	const char *p = *pos, *word, *eq;
	size_t n;

	while (*p && is_sep(*p))
		p++;
	if (!*p) {
		*pos = p;
		return 0;
	}
	word = p;
	while (*p && !is_sep(*p))
		p++;
	*pos = p;
	eq = memchr(word, '=', p - word);
	if (!eq || eq == word)
		return gpo__err(-EINVAL, "'%.*s' is not key=value",
			       (int)(p - word), word);
	n = eq - word;
	if (n >= klen)
		return gpo__err(-EINVAL, "key '%.*s' too long", (int)n, word);
	memcpy(key, word, n);
	key[n] = '\0';
	n = p - eq - 1;
	if (n >= vlen)
		return gpo__err(-EINVAL, "value of '%s' too long", key);
	memcpy(value, eq + 1, n);
	value[n] = '\0';
	return 1;
}
