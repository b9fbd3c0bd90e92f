// SPDX-License-Identifier: MIT
/*
 * sbuf.c - growable text buffers; numbers in them are in the C locale
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/common.h"

void gpo__sbuf_init(struct gpo__sbuf *sb)
{
	memset(sb, 0, sizeof(*sb));
}

void gpo__sbuf_free(struct gpo__sbuf *sb)
{
	free(sb->buf);
	gpo__sbuf_init(sb);
}

void gpo__sbuf_reset(struct gpo__sbuf *sb)
{
	sb->len = 0;
	sb->err = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

static int sbuf_grow(struct gpo__sbuf *sb, size_t need)
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

int gpo__sbuf_reserve(struct gpo__sbuf *sb, size_t extra)
{
	return sbuf_grow(sb, sb->len + extra + 1);
}

int gpo__sbuf_add(struct gpo__sbuf *sb, const void *data, size_t len)
{
	int ret = sbuf_grow(sb, sb->len + len + 1);

	if (ret)
		return ret;
	memcpy(sb->buf + sb->len, data, len);
	sb->len += len;
	sb->buf[sb->len] = '\0';
	return 0;
}

int gpo__sbuf_resize(struct gpo__sbuf *sb, size_t len)
{
	int ret = sbuf_grow(sb, len + 1);

	if (ret)
		return ret;
	sb->len = len;
	sb->buf[len] = '\0';
	return 0;
}

size_t gpo__sbuf_read(const struct gpo__sbuf *sb, char *buf, size_t size,
		      off_t off)
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

int gpo__sbuf_vprintf(struct gpo__sbuf *sb, const char *fmt, va_list ap)
{
	va_list aq;
	int n, ret;

	va_copy(aq, ap);
	n = gpo__vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return -EINVAL;
	ret = sbuf_grow(sb, sb->len + n + 1);
	if (ret)
		return ret;
	gpo__vsnprintf(sb->buf + sb->len, n + 1, fmt, ap);
	sb->len += n;
	return 0;
}

int gpo__sbuf_printf(struct gpo__sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = gpo__sbuf_vprintf(sb, fmt, ap);
	va_end(ap);
	return ret;
}
