// SPDX-License-Identifier: MIT
/*
 * kv.c - the key=value words of settings texts ("lr=0.1 momentum=0.9"),
 * for the library's configure and schedule texts and the daemon's configs
 */
#include <errno.h>
#include <string.h>
#include "common/common.h"

static int is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ';';
}

int gpo__kv_span(const char **pos, struct gpo__kv *w)
{
	const char *p = *pos, *start, *eq;
	size_t n;

	for (;;) {
		while (*p && is_sep(*p))
			p++;
		if (*p != '#')
			break;
		while (*p && *p != '\n')	/* a comment, to the line's end */
			p++;
	}
	*pos = p;
	if (!*p)
		return 0;
	start = p;
	while (*p && !is_sep(*p))
		p++;
	*pos = p;
	n = p - start;
	eq = memchr(start, '=', n);
	if (!eq || eq == start)
		return gpo__err(-EINVAL, "'%.*s' is not key=value",
				(int)(n > 64 ? 64 : n), start);
	w->key = start;
	w->klen = eq - start;
	w->val = eq + 1;
	w->vlen = p - eq - 1;
	return 1;
}

int gpo__kv_next(const char **pos, char *key, size_t klen, char *value,
		 size_t vlen)
{
	struct gpo__kv w;
	int ret;

	ret = gpo__kv_span(pos, &w);
	if (ret <= 0)
		return ret;
	if (w.klen >= klen)
		return gpo__err(-EINVAL, "key '%.*s' too long", (int)w.klen,
				w.key);
	memcpy(key, w.key, w.klen);
	key[w.klen] = '\0';
	if (w.vlen >= vlen)
		return gpo__err(-EINVAL, "value of '%s' too long", key);
	memcpy(value, w.val, w.vlen);
	value[w.vlen] = '\0';
	return 1;
}
