// SPDX-License-Identifier: MIT
/*
 * err.c - the per-thread error message of the request being served,
 * mkdir -p (text buffers, numbers and clocks are common/'s)
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs_i.h"

int fs_mkdirs(const char *path, mode_t mode)
{
	char buf[PATH_MAX], *p;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

void fs_escape(char *dst, size_t len, const char *src)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;

	if (!len)
		return;
	for (; *src; src++) {
		unsigned char c = *src;
		char e[5];
		size_t k;

		if (c == '\\' || c == '\n' || c == '\t' || c == '\r') {
			e[0] = '\\';
			e[1] = c == '\n' ? 'n' : c == '\t' ? 't' :
			       c == '\r' ? 'r' : '\\';
			k = 2;
		} else if (c < 0x20 || c >= 0x7f) {
			e[0] = '\\';
			e[1] = 'x';
			e[2] = hex[c >> 4];
			e[3] = hex[c & 15];
			k = 4;
		} else {
			e[0] = c;
			k = 1;
		}
		if (n + k >= len)	/* never half an escape */
			break;
		memcpy(dst + n, e, k);
		n += k;
	}
	dst[n] = '\0';
}

static __thread char err_msg[512];

int fs_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	gpo__vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	return err;
}

int fs_lib_err(int err)
{
	const char *m = gpo_errmsg();

	if (!m || !*m)
		m = strerror(-err);
	/* the library's message can be the thread's own buffer: copy first */
	snprintf(err_msg, sizeof(err_msg), "%s", m);
	return err;
}

const char *fs_errmsg(void)
{
	return err_msg;
}

void fs_err_clear(void)
{
	err_msg[0] = '\0';
}
