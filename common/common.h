/* SPDX-License-Identifier: MIT */
/*
 * common.h - the helpers that the library, the daemon (fsd/) and the tools
 * share: one copy of each.
 *
 *   err.c   the per-thread error message behind gpo_errmsg()
 *   num.c   numbers in the C locale whatever the process's locale:
 *           strict parsers, the shortest round-tripping formatter,
 *           snprintf in the C locale
 *   kv.c    the key=value tokenizer of settings texts (one for all)
 *   time.c  clocks in nanoseconds, the wall-clock stamp of logs
 *   dir.c   sorted directory listings
 *   sbuf.c  growable text buffers
 *   json.c  JSON strings from any bytes (jansson)
 *
 * The objects go into libgpuopt.a/.so and, for programs that do not link
 * the library (gpuoptctl), into build/lib/libgpocommon.a. Every global they
 * define starts with gpo__, so that a program's own parse_double() or
 * now_ns() links beside them; static inline helpers live in this header.
 * Functions return 0 (or a count) or a negative errno.
 */
#ifndef GPO_COMMON_H
#define GPO_COMMON_H

#include <locale.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#ifdef __GNUC__
#define GPO_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define GPO_PRINTF(a, b)
#endif

/* ---- err.c --------------------------------------------------------------- */

/*
 * gpo__err - set this thread's error message (formatted in the C locale)
 * and return @err, so that a failure path reads
 * "return gpo__err(-EINVAL, "lr %g < 0", lr);"
 */
int gpo__err(int err, const char *fmt, ...) GPO_PRINTF(2, 3);
/*
 * gpo__err_prefix - put "<fmt...>: " in front of this thread's message
 * (the one a failing callee left) and return @err. Never pass gpo_errmsg()
 * to gpo__err() for this: that formats the buffer into itself.
 */
int gpo__err_prefix(int err, const char *fmt, ...) GPO_PRINTF(2, 3);
void gpo__err_clear(void);
/* gpo__errmsg - this thread's last message, "" when none */
const char *gpo__errmsg(void);

/* ---- num.c --------------------------------------------------------------- */

/*
 * gpo__c_locale - the "C" locale object, made once (thread-safe); numbers
 * are read and written through it whatever setlocale() chose. Never fails:
 * without one it is LC_GLOBAL_LOCALE.
 */
locale_t gpo__c_locale(void);

/*
 * gpo__parse_u64 - a whole decimal number: digits only (no sign, no
 * blanks, nothing after), at most UINT64_MAX. 0 or -EINVAL.
 */
int gpo__parse_u64(const char *s, uint64_t *out);
/*
 * gpo__parse_double - a whole finite number as the C locale's strtod reads
 * it ("1e-3", "0.001"; not "inf", "nan", "0,001", " 1" or "1 ", nor a
 * value out of range: strtod's ERANGE). 0 or -EINVAL.
 */
int gpo__parse_double(const char *s, double *out);
/* gpo__parse_bool - "1", "true", "0", "false" (any case); 0 or -EINVAL */
int gpo__parse_bool(const char *s, int *out);
/* gpo__strtod - strtod() in the C locale, for texts with more after */
double gpo__strtod(const char *s, char **end);

/*
 * gpo__fmt_double - the shortest decimal text that the C locale's strtod
 * reads back as exactly @v (of %.1g .. %.17g, the shortest; a tie goes to
 * the form without an exponent): 0.001, 1e-08, 0.9, 10. Non-finite values
 * print as nan, inf, -inf. Returns what snprintf returns.
 */
int gpo__fmt_double(char *buf, size_t len, double v);

/* gpo__snprintf - snprintf() in the C locale */
int gpo__snprintf(char *buf, size_t len, const char *fmt, ...)
	GPO_PRINTF(3, 4);
int gpo__vsnprintf(char *buf, size_t len, const char *fmt, va_list ap);

/* ---- kv.c ---------------------------------------------------------------- */

/* One word of a settings text: pointers into the text, not terminated. */
struct gpo__kv {
	const char *key;
	size_t klen;
	const char *val;
	size_t vlen;
};

/*
 * gpo__kv_span - find the next "key=value" word at *@pos of a settings
 * text. Words are separated by blanks, newlines or ';'; a word that starts
 * with '#' begins a comment to the end of its line. Returns 1 with @w
 * pointing into the text, 0 at the end, -EINVAL (gpo__err() set) for a
 * word without '=' or with an empty key. *@pos moves past the word.
 */
int gpo__kv_span(const char **pos, struct gpo__kv *w);

/*
 * gpo__kv_next - gpo__kv_span() copied into @key and @value (NUL-ended);
 * -EINVAL also for a key or value longer than the buffers.
 */
int gpo__kv_next(const char **pos, char *key, size_t klen, char *value,
		 size_t vlen);

/* ---- time.c -------------------------------------------------------------- */

uint64_t gpo__now_ns(void);		/* CLOCK_MONOTONIC */
uint64_t gpo__realtime_ns(void);	/* CLOCK_REALTIME */
/* gpo__fmt_time - the wall clock now as "2025-01-31T12:00:00.123Z" */
void gpo__fmt_time(char *buf, size_t len);

/* ---- dir.c --------------------------------------------------------------- */

/*
 * gpo__dir_list - the names in directory @path, "." and ".." left out, and
 * those @keep refuses (when given), sorted by @cmp (a qsort comparator of
 * char *; strcmp order when NULL). Returns the count with *@out to free
 * with gpo__dir_free(), or -errno (*@out NULL).
 */
int gpo__dir_list(const char *path, int (*keep)(const char *name, void *arg),
		  void *arg, int (*cmp)(const void *, const void *),
		  char ***out);
void gpo__dir_free(char **names, int n);

/* ---- sbuf.c -------------------------------------------------------------- */

struct gpo__sbuf {
	char *buf;		/* NUL-terminated once anything was added */
	size_t len;
	size_t cap;
	int err;		/* -ENOMEM once an append failed */
};

void gpo__sbuf_init(struct gpo__sbuf *sb);
void gpo__sbuf_free(struct gpo__sbuf *sb);
void gpo__sbuf_reset(struct gpo__sbuf *sb);
int gpo__sbuf_add(struct gpo__sbuf *sb, const void *data, size_t len);
/* gpo__sbuf_reserve - room for @extra more bytes (and a NUL) */
int gpo__sbuf_reserve(struct gpo__sbuf *sb, size_t extra);
/* gpo__sbuf_resize - make room for @len bytes and set the length to @len */
int gpo__sbuf_resize(struct gpo__sbuf *sb, size_t len);
/* gpo__sbuf_printf - append, numbers in the C locale */
int gpo__sbuf_printf(struct gpo__sbuf *sb, const char *fmt, ...)
	GPO_PRINTF(2, 3);
int gpo__sbuf_vprintf(struct gpo__sbuf *sb, const char *fmt, va_list ap);
/* gpo__sbuf_read - copy what @sb holds from @off, at most @size bytes */
size_t gpo__sbuf_read(const struct gpo__sbuf *sb, char *buf, size_t size,
		      off_t off);

/* ---- json.c -------------------------------------------------------------- */

struct json_t;
/*
 * gpo__json_str - a jansson string of @s; where @s is not UTF-8 (a path,
 * a driver's name), its bytes >= 0x80 become '?'. NULL when out of memory.
 */
struct json_t *gpo__json_str(const char *s);

#endif /* GPO_COMMON_H */
