// SPDX-License-Identifier: MIT
/*
 * test_common.c - common/: the number parsers, the shortest double
 * formatter, the key=value tokenizer, sorted directory listings, text
 * buffers and clocks
 */
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "testutil.h"
#include "common/common.h"

/* ---- gpo__parse_u64 ------------------------------------------------------ */

START_TEST(test_parse_u64_accepts_whole_numbers)
{
	static const struct {
		const char *text;
		uint64_t want;
	} ok[] = {
		{ "0", 0 },
		{ "7", 7 },
		{ "00012", 12 },
		{ "4294967296", 4294967296ull },
		{ "18446744073709551615", UINT64_MAX },
		{ "018446744073709551615", UINT64_MAX },
	};
	uint64_t v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		v = 12345;
		ck_assert_msg(gpo__parse_u64(ok[i].text, &v) == 0, "'%s'",
			      ok[i].text);
		ck_assert_uint_eq(v, ok[i].want);
	}
}
END_TEST

START_TEST(test_parse_u64_refuses_overflow_signs_junk_empty)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "+1", "-1", "-0", "1a", "0x10", "1.0", "1e3",
		"18446744073709551616", "99999999999999999999",
		"184467440737095516150", "1\n", "\t2", "one",
	};
	uint64_t v = 42;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(gpo__parse_u64(bad[i], &v) == -EINVAL, "'%s'",
			      bad[i]);
	ck_assert_int_eq(gpo__parse_u64(NULL, &v), -EINVAL);
	ck_assert_uint_eq(v, 42);	/* a failed parse leaves it */
}
END_TEST

/* ---- gpo__parse_double, gpo__parse_bool --------------------------------- */

START_TEST(test_parse_double_accepts_numbers)
{
	static const struct {
		const char *text;
		double want;
	} ok[] = {
		{ "0", 0 }, { "0.001", 0.001 }, { "1e-3", 1e-3 },
		{ "-2.5", -2.5 }, { "+3", 3 }, { ".5", 0.5 }, { "5.", 5 },
		{ "1E+10", 1e10 }, { "0x1p-2", 0.25 },
		{ "1.7976931348623157e308", 1.7976931348623157e308 },
	};
	double v;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		ck_assert_msg(gpo__parse_double(ok[i].text, &v) == 0, "'%s'",
			      ok[i].text);
		ck_assert_msg(v == ok[i].want, "'%s' read as %.17g",
			      ok[i].text, v);
	}
}
END_TEST

START_TEST(test_parse_double_refuses_nonfinite_range_junk)
{
	static const char *const bad[] = {
		"", " 1", "1 ", "\n1", "1\n", "0,001", "1.2.3", "1e", "e3",
		"abc", "1x", "inf", "-inf", "INF", "infinity", "nan", "NaN",
		"-nan", "1e400", "-1e400", "1e-400", "--1", "0.5;",
	};
	double v = 42;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(gpo__parse_double(bad[i], &v) == -EINVAL,
			      "'%s'", bad[i]);
	ck_assert_int_eq(gpo__parse_double(NULL, &v), -EINVAL);
	ck_assert(v == 42);
}
END_TEST

START_TEST(test_parse_bool)
{
	static const char *const yes[] = { "1", "true", "TRUE", "True" };
	static const char *const no[] = { "0", "false", "FALSE", "False" };
	static const char *const bad[] = { "", "2", "yes", "no", "on",
					   " 1", "1 ", "truee", "01" };
	size_t i;
	int b;

	for (i = 0; i < ARRAY_SIZE(yes); i++) {
		b = -1;
		ck_assert_int_eq(gpo__parse_bool(yes[i], &b), 0);
		ck_assert_int_eq(b, 1);
	}
	for (i = 0; i < ARRAY_SIZE(no); i++) {
		b = -1;
		ck_assert_int_eq(gpo__parse_bool(no[i], &b), 0);
		ck_assert_int_eq(b, 0);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		ck_assert_msg(gpo__parse_bool(bad[i], &b) == -EINVAL, "'%s'",
			      bad[i]);
}
END_TEST

/* ---- gpo__fmt_double ----------------------------------------------------- */

static uint64_t next_u64(uint64_t *s)
{
	/* xorshift64* */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static void check_round_trip(double v)
{
	char buf[64], *end;
	double back;
	int n;

	n = gpo__fmt_double(buf, sizeof(buf), v);
	ck_assert_int_eq(n, (int)strlen(buf));
	ck_assert_msg(n > 0 && n <= 24, "%a printed as '%s'", v, buf);
	back = strtod_l(buf, &end, gpo__c_locale());
	ck_assert_msg(!*end, "%a printed as '%s'", v, buf);
	ck_assert_msg(!memcmp(&back, &v, sizeof(v)),
		      "%a printed as '%s' reads back as %a", v, buf, back);
}

/* fresh random bit patterns: every finite double prints and reads back */
START_TEST(test_fmt_double_round_trips_random_bits)
{
	uint64_t s = tu_rng("fmt_double_bits"), bits;
	double v;
	int i, n = tu_quick() ? 20000 : 200000;

	for (i = 0; i < n; i++) {
		bits = next_u64(&s);
		memcpy(&v, &bits, sizeof(v));
		if (!isfinite(v))
			continue;
		check_round_trip(v);
	}
}
END_TEST

/* and values of the sizes settings have, where the text is short */
START_TEST(test_fmt_double_round_trips_random_decimals)
{
	uint64_t s = tu_rng("fmt_double_decimals");
	char text[64];
	double v;
	int i, n = tu_quick() ? 10000 : 100000;

	for (i = 0; i < n; i++) {
		snprintf(text, sizeof(text), "%llue%d",
			 (unsigned long long)(next_u64(&s) % 1000000),
			 (int)(next_u64(&s) % 40) - 20);
		v = strtod_l(text, NULL, gpo__c_locale());
		check_round_trip(v);
		check_round_trip(-v);
	}
}
END_TEST

START_TEST(test_fmt_double_is_shortest)
{
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 0.001, "0.001" }, { 0.9, "0.9" }, { 0.999, "0.999" },
		{ 1e-08, "1e-08" }, { 3e-4, "0.0003" }, { 0, "0" },
		{ -0.0, "-0" }, { 1, "1" }, { 10, "10" }, { 100, "100" },
		{ 10000, "10000" }, { 1e5, "1e+05" }, { 0.1 + 0.2,
		"0.30000000000000004" }, { -2.5, "-2.5" }, { 123456, "123456" },
		{ 1.0 / 3, "0.3333333333333333" }, { 5e-324, "5e-324" },
		{ 1.7976931348623157e308, "1.7976931348623157e+308" },
	};
	char buf[64];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		gpo__fmt_double(buf, sizeof(buf), cases[i].v);
		ck_assert_str_eq(buf, cases[i].want);
	}
}
END_TEST

START_TEST(test_fmt_double_nonfinite_and_short_buffers)
{
	char buf[8];

	gpo__fmt_double(buf, sizeof(buf), NAN);
	ck_assert_str_eq(buf, "nan");
	gpo__fmt_double(buf, sizeof(buf), -NAN);
	ck_assert_str_eq(buf, "nan");
	gpo__fmt_double(buf, sizeof(buf), INFINITY);
	ck_assert_str_eq(buf, "inf");
	gpo__fmt_double(buf, sizeof(buf), -INFINITY);
	ck_assert_str_eq(buf, "-inf");
	/* like snprintf: the length it needed, the text cut and ended */
	ck_assert_int_eq(gpo__fmt_double(buf, 4, 0.30000000000000004), 19);
	ck_assert_str_eq(buf, "0.3");
	ck_assert_int_eq(gpo__fmt_double(NULL, 0, 0.25), 4);
}
END_TEST

/* ---- gpo__kv_next / gpo__kv_span ----------------------------------------- */

START_TEST(test_kv_splits_words)
{
	const char *text = "  lr=0.1;momentum=0.9\n\tbetas=0.9,0.999 \r\n"
			   "# a comment=not a word\nempty= x==y ;;";
	static const char *const want[][2] = {
		{ "lr", "0.1" }, { "momentum", "0.9" },
		{ "betas", "0.9,0.999" }, { "empty", "" }, { "x", "=y" },
	};
	const char *pos = text;
	char key[32], value[64];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
					      sizeof(value)), 1);
		ck_assert_str_eq(key, want[i][0]);
		ck_assert_str_eq(value, want[i][1]);
	}
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 0);
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 0);
	pos = "";
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 0);
	pos = " \n ; # only a comment";
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 0);
}
END_TEST

START_TEST(test_kv_refuses_bad_words)
{
	char key[4], value[4];
	const char *pos;

	pos = "lr";
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(gpo__errmsg(), "'lr' is not key=value"));
	pos = "=1 a=1";
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), -EINVAL);
	/* it moved past the bad word: the next one reads */
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 1);
	ck_assert_str_eq(key, "a");
	pos = "abcd=1";		/* the key does not fit 4 bytes */
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), -EINVAL);
	pos = "abc=1234";	/* nor does the value */
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), -EINVAL);
	pos = "abc=123";
	ck_assert_int_eq(gpo__kv_next(&pos, key, sizeof(key), value,
				      sizeof(value)), 1);
	ck_assert_str_eq(value, "123");
}
END_TEST

START_TEST(test_kv_span_points_into_the_text)
{
	const char *text = "model=mlp:784x256x10 a=b", *pos = text;
	struct gpo__kv w;

	ck_assert_int_eq(gpo__kv_span(&pos, &w), 1);
	ck_assert_ptr_eq(w.key, text);
	ck_assert_uint_eq(w.klen, 5);
	ck_assert_ptr_eq(w.val, text + 6);
	ck_assert_uint_eq(w.vlen, 14);
	ck_assert_int_eq(gpo__kv_span(&pos, &w), 1);
	ck_assert_int_eq(gpo__kv_span(&pos, &w), 0);
}
END_TEST

/* ---- gpo__dir_list ------------------------------------------------------- */

static int no_b(const char *name, void *arg)
{
	(*(int *)arg)++;
	return name[0] != 'b';
}

static int by_length(const void *a, const void *b)
{
	size_t x = strlen(*(char *const *)a), y = strlen(*(char *const *)b);

	return (x > y) - (x < y);
}

START_TEST(test_dir_list_sorted_real_dir)
{
	static const char *const files[] = { "zeta", "alpha", ".hidden",
					     "b1", "Mid", "a10", "a9" };
	char dir[] = "/tmp/gpuopt-common-XXXXXX", path[128], **names;
	int i, n, calls = 0;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (i = 0; i < (int)ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		close(open(path, O_CREAT | O_WRONLY, 0600));
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	ck_assert_int_eq(mkdir(path, 0700), 0);

	n = gpo__dir_list(dir, NULL, NULL, NULL, &names);
	ck_assert_int_eq(n, 8);		/* "." and ".." left out */
	{
		static const char *const want[] = { ".hidden", "Mid", "a10",
			"a9", "alpha", "b1", "sub", "zeta" };

		for (i = 0; i < n; i++)
			ck_assert_str_eq(names[i], want[i]);
	}
	gpo__dir_free(names, n);

	n = gpo__dir_list(dir, no_b, &calls, by_length, &names);
	ck_assert_int_eq(n, 7);
	ck_assert_int_eq(calls, 8);
	for (i = 1; i < n; i++)
		ck_assert_uint_le(strlen(names[i - 1]), strlen(names[i]));
	gpo__dir_free(names, n);

	for (i = 0; i < (int)ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/sub", dir);
	rmdir(path);
	n = gpo__dir_list(dir, NULL, NULL, NULL, &names);
	ck_assert_int_eq(n, 0);
	gpo__dir_free(names, n);
	ck_assert_int_eq(rmdir(dir), 0);

	names = (char **)1;
	ck_assert_int_eq(gpo__dir_list(dir, NULL, NULL, NULL, &names),
			 -ENOENT);
	ck_assert_ptr_null(names);
}
END_TEST

/* ---- gpo__sbuf, clocks --------------------------------------------------- */

START_TEST(test_sbuf_grows_and_prints_c_locale)
{
	struct gpo__sbuf sb;
	char out[8];
	int i;

	gpo__sbuf_init(&sb);
	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(gpo__sbuf_printf(&sb, "%d,%.1f;", i, 0.5), 0);
	ck_assert_uint_eq(sb.len, strlen(sb.buf));
	ck_assert(!strncmp(sb.buf, "0,0.5;1,0.5;", 12));
	ck_assert_uint_eq(gpo__sbuf_read(&sb, out, 4, 2), 4);
	ck_assert(!memcmp(out, "0.5;", 4));
	ck_assert_uint_eq(gpo__sbuf_read(&sb, out, 4, sb.len), 0);
	ck_assert_int_eq(gpo__sbuf_add(&sb, "xyz", 3), 0);
	ck_assert_str_eq(sb.buf + sb.len - 3, "xyz");
	gpo__sbuf_reset(&sb);
	ck_assert_uint_eq(sb.len, 0);
	ck_assert_str_eq(sb.buf, "");
	ck_assert_int_eq(gpo__sbuf_resize(&sb, 3), 0);
	ck_assert_uint_eq(sb.len, 3);
	ck_assert_int_eq(gpo__sbuf_reserve(&sb, 100000), 0);
	ck_assert_uint_ge(sb.cap, 100004);
	gpo__sbuf_free(&sb);
	ck_assert_ptr_null(sb.buf);
}
END_TEST

START_TEST(test_clocks_and_stamp)
{
	uint64_t a = gpo__now_ns(), b, r = gpo__realtime_ns();
	char stamp[40];

	b = gpo__now_ns();
	ck_assert_uint_le(a, b);
	ck_assert_uint_gt(r, 1600000000ull * 1000000000ull);
	gpo__fmt_time(stamp, sizeof(stamp));
	/* 2025-01-31T12:00:00.123Z */
	ck_assert_uint_eq(strlen(stamp), 24);
	ck_assert(stamp[4] == '-' && stamp[10] == 'T' && stamp[19] == '.' &&
		  stamp[23] == 'Z');
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("common");

	tcase_add_test(tc, test_parse_u64_accepts_whole_numbers);
	tcase_add_test(tc, test_parse_u64_refuses_overflow_signs_junk_empty);
	tcase_add_test(tc, test_parse_double_accepts_numbers);
	tcase_add_test(tc, test_parse_double_refuses_nonfinite_range_junk);
	tcase_add_test(tc, test_parse_bool);
	tcase_add_test(tc, test_fmt_double_round_trips_random_bits);
	tcase_add_test(tc, test_fmt_double_round_trips_random_decimals);
	tcase_add_test(tc, test_fmt_double_is_shortest);
	tcase_add_test(tc, test_fmt_double_nonfinite_and_short_buffers);
	tcase_add_test(tc, test_kv_splits_words);
	tcase_add_test(tc, test_kv_refuses_bad_words);
	tcase_add_test(tc, test_kv_span_points_into_the_text);
	tcase_add_test(tc, test_dir_list_sorted_real_dir);
	tcase_add_test(tc, test_sbuf_grows_and_prints_c_locale);
	tcase_add_test(tc, test_clocks_and_stamp);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
