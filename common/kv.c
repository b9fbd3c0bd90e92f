// SPDX-License-Identifier: MIT
/*
 * kv.c - the key=value words of settings texts ("lr=0.1 momentum=0.9")
 */
#include <errno.h>
#include <string.h>
#include "common/common.h"

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
