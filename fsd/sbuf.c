// SPDX-License-Identifier: MIT
/*
 * sbuf.c - growable text buffers, number and time formatting, the
 * per-thread error message of the request being served, mkdir -p
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include "fs_i.h"

void sbuf_init(struct sbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void sbuf_free(struct sbuf *sb)
{
	free(sb->buf);
	sbuf_init(sb);
}

void sbuf_reset(struct sbuf *sb)
{
	sb->len = 0;
	sb->err = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

static int sbuf_grow(struct sbuf *sb, size_t need)
{
	size_t cap = sb->cap ? sb->cap : 256;
	char *p;

	if (sb->err)
		return sb->err;
	if (need <= sb->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	p = realloc(sb->buf, cap);
	if (!p) {
		sb->err = -ENOMEM;
		return sb->err;
	}
	sb->buf = p;
	sb->cap = cap;
	return 0;
}

int sbuf_add(struct sbuf *sb, const void *data, size_t len)
{
	int ret = sbuf_grow(sb, sb->len + len + 1);

	if (ret)
		return ret;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int sbuf_resize(struct sbuf *sb, size_t len)
{
	int ret = sbuf_grow(sb, len + 1);

	if (ret)
		return ret;
	sb->len = len;
	sb->buf[len] = '\0';
	return 0;
}

size_t sbuf_read(const struct sbuf *sb, char *buf, size_t size, off_t off)
{
	size_t n;

	if (off < 0 || (size_t)off >= sb->len)
		return 0;
	n = sb->len - off;
	if (n > size)
		n = size;
	memcpy(buf, sb->buf + off, n);
	return n;
}

int sbuf_vprintf(struct sbuf *sb, const char *fmt, va_list ap)
{
	va_list aq;
	int n, ret;

	va_copy(aq, ap);
	n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	ret = sbuf_grow(sb, sb->len + n + 1);
	if (ret)
		return ret;
	vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	sb->len += n;
	return 0;
}

int sbuf_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = sbuf_vprintf(sb, fmt, ap);
	va_end(ap);
	return ret;
}

void fmt_double(char *buf, size_t len, double v)
{
	int prec;

	if (isnan(v)) {
		snprintf(buf, len, "nan");
		return;
	}
	for (prec = 6; prec < 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
	snprintf(buf, len, "%.17g", v);
}

void fmt_time(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	char s[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03ldZ", s, ts.tv_nsec / 1000000);
}

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

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static __thread char err_msg[512];

int fs_err(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
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
