// SPDX-License-Identifier: MIT
/*
 * test_dtype.c - element types: names and sizes, the f16/bf16 conversions
 * against a float64 reference, buffers and slots of every dtype written,
 * read and checkpointed bit-exactly on every device, the step refusing
 * what it has no kernel for, and bad gpo_optim_set_dtype() calls.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "ckpt/ckpt_i.h"
#include "ckpt_util.h"
#include "core/dtype_i.h"

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

static uint64_t next64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_bytes(void *p, size_t n, uint64_t *s)
{
	unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (unsigned char)next64(s);
}

static float bits_f(uint32_t x)
{
	float f;

	memcpy(&f, &x, 4);
	return f;
}

/* ---- names, sizes, parsing ------------------------------------------------ */

START_TEST(test_dtype_names_sizes_parse_round_trip)
{
	static const char *const names[] = { "f32", "f16", "bf16", "u8",
					     "i32", "i64" };
	static const size_t sizes[] = { 4, 2, 2, 1, 4, 8 };
	static const char *const bad[] = { "", "F32", "float32", "f8", "bf",
					   "f32 ", "i16", "u8x" };
	size_t i;

	ck_assert_int_eq(GPO_DTYPES, 6);
	for (i = 0; i < GPO_DTYPES; i++) {
		ck_assert_str_eq(gpo_dtype_name(i), names[i]);
		ck_assert_uint_eq(gpo_dtype_size(i), sizes[i]);
		ck_assert_int_eq(gpo_dtype_parse(names[i]), (int)i);
	}
	ck_assert_uint_eq(gpo_dtype_size(GPO_DTYPES), 0);
	ck_assert_uint_eq(gpo_dtype_size((enum gpo_dtype)-1), 0);
	ck_assert_str_eq(gpo_dtype_name(GPO_DTYPES), "unknown");
	ck_assert_str_eq(gpo_dtype_name((enum gpo_dtype)-1), "unknown");
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		ck_assert_int_eq(gpo_dtype_parse(bad[i]), -EINVAL);
		tu_check_errmsg(bad[i]);
	}
	ck_assert_int_eq(gpo_dtype_parse(NULL), -EINVAL);
	tu_check_errmsg("gpo_dtype_parse(NULL)");
}
END_TEST

/* ---- conversions ---------------------------------------------------------- */

/* The value of 16-bit float @k from its fields, in double. */
static double f16_value(uint16_t k)
{
	int e = (k >> 10) & 0x1f, m = k & 0x3ff;
	double v;

	if (e == 0x1f)
		v = m ? NAN : INFINITY;
	else if (e)
		v = ldexp(1.0 + m / 1024.0, e - 15);
	else
		v = ldexp(m, -24);
	return k & 0x8000 ? -v : v;
}

static double bf16_value(uint16_t k)
{
	int e = (k >> 7) & 0xff, m = k & 0x7f;
	double v;

	if (e == 0xff)
		v = m ? NAN : INFINITY;
	else if (e)
		v = ldexp(1.0 + m / 128.0, e - 127);
	else
		v = ldexp(m, -133);
	return k & 0x8000 ? -v : v;
}

struct fmt16 {
	const char *name;
	double (*value)(uint16_t);
	uint16_t max_finite;		/* positive, by bit pattern */
	uint16_t inf;
	uint16_t quiet;			/* the quiet-NaN mantissa bit */
	uint16_t (*to)(float);
	float (*from)(uint16_t);
};

static const struct fmt16 f16 = { "f16", f16_value, 0x7bff, 0x7c00, 0x0200,
				  gpo__f32_to_f16, gpo__f16_to_f32 };
static const struct fmt16 bf16 = { "bf16", bf16_value, 0x7f7f, 0x7f80, 0x0040,
				   gpo__f32_to_bf16, gpo__bf16_to_f32 };

/*
 * The nearest value of @fmt to @x, ties to the even pattern, by search
 * over the format's values (non-negative patterns order as their values);
 * at or beyond max + half an ulp, inf.
 */
static uint16_t ref_round(const struct fmt16 *fmt, double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0, lo = 0, hi = fmt->max_finite;
	double a = fabs(x), top, over;

	top = fmt->value(fmt->max_finite);
	over = top + (top - fmt->value(fmt->max_finite - 1)) / 2;
	if (a >= over)
		return sign | fmt->inf;
	if (a >= top)
		return sign | fmt->max_finite;
	/* largest k with value(k) <= a */
	while (lo < hi) {
		uint16_t mid = (uint16_t)((lo + hi + 1) / 2);

		if (fmt->value(mid) <= a)
			lo = mid;
		else
			hi = mid - 1;
	}
	if (a - fmt->value(lo) > fmt->value(lo + 1) - a ||
	    (a - fmt->value(lo) == fmt->value(lo + 1) - a && (lo & 1)))
		lo++;
	return sign | lo;
}

static void check_one(const struct fmt16 *fmt, uint32_t xbits)
{
	float x = bits_f(xbits);
	uint16_t got = fmt->to(x), want;

	if (isnan(x)) {
		ck_assert_msg((got & 0x7fff) > fmt->inf && (got & fmt->quiet) &&
			      (got & 0x8000) == ((xbits >> 16) & 0x8000),
			      "%s(NaN %08x) = %04x, not a quiet NaN of its sign",
			      fmt->name, xbits, got);
		return;
	}
	want = ref_round(fmt, (double)x);
	ck_assert_msg(got == want, "%s(%a = %08x) = %04x, float64 reference %04x",
		      fmt->name, (double)x, xbits, got, want);
}

/* Every 16-bit pattern to f32 is exact; and back gives the same pattern. */
static void check_exhaustive_widening(const struct fmt16 *fmt)
{
	uint32_t k;

	for (k = 0; k < 0x10000; k++) {
		float f = fmt->from((uint16_t)k);
		double want = fmt->value((uint16_t)k);

		if (isnan(want)) {
			ck_assert_msg(isnan(f), "%s %04x: not NaN", fmt->name, k);
			ck_assert_int_eq(!!signbit(f), !!(k & 0x8000));
			continue;
		}
		ck_assert_msg((double)f == want && !signbit(f) == !(k & 0x8000),
			      "%s %04x -> %a, want %a", fmt->name, k, (double)f,
			      want);
		ck_assert_msg(fmt->to(f) == k, "%s %04x does not round-trip",
			      fmt->name, k);
	}
}

/*
 * f32 -> 16 bits: every midpoint between neighbours and the floats around
 * it (the ties and the values just off them), a stride through all 2^32
 * patterns, random patterns, and the specials.
 */
static void check_narrowing(const struct fmt16 *fmt, uint64_t *rng)
{
	static const uint32_t special[] = {
		0x00000000, 0x80000000, 0x00000001, 0x80000001, 0x007fffff,
		0x00800000, 0x7f7fffff, 0xff7fffff, 0x7f800000, 0xff800000,
		0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fbfffff,
		0x7fffffff, 0x477fefff, 0x477ff000, 0x477ff001, 0x33000000,
		0x33000001, 0x32ffffff, 0x387fffff, 0x38800000, 0x3f800000,
	};
	uint32_t k, i;
	uint64_t x;

	for (i = 0; i < ARRAY_SIZE(special); i++)
		check_one(fmt, special[i]);
	for (k = 0; k < fmt->max_finite; k++) {
		double mid = (fmt->value((uint16_t)k) +
			      fmt->value((uint16_t)(k + 1))) / 2;
		float m = (float)mid;
		uint32_t b;

		memcpy(&b, &m, 4);
		for (i = 0; i < 5; i++) {
			check_one(fmt, b - 2 + i);
			check_one(fmt, (b - 2 + i) | 0x80000000u);
		}
	}
	for (x = 0; x < (1ull << 32); x += tu_quick() ? 65537 : 4099)
		check_one(fmt, (uint32_t)x);
	for (i = 0; i < (tu_quick() ? 100000u : 2000000u); i++)
		check_one(fmt, (uint32_t)next64(rng));
}

START_TEST(test_f16_conversions_match_float64_reference)
{
	uint64_t rng = tu_rng("dtype_f16");

	check_exhaustive_widening(&f16);
	check_narrowing(&f16, &rng);
}
END_TEST

START_TEST(test_bf16_conversions_match_float64_reference)
{
	uint64_t rng = tu_rng("dtype_bf16");

	check_exhaustive_widening(&bf16);
	check_narrowing(&bf16, &rng);
}
END_TEST

/* ---- buffers of every dtype ---------------------------------------------- */

/* w [n/13 + 1, 13] and b [3] in group 0, v [5, 7] in group 1 */
static struct gpo_optim *make_opt(struct gpo_device *dev,
				  enum gpo_optim_kind kind, uint64_t n)
{
	uint64_t sw[2] = { n / 13 + 1, 13 }, sb[1] = { 3 }, sv[2] = { 5, 7 };
	struct gpo_optim *opt;

	ck_assert_int_eq(gpo_optim_new(dev, kind, &opt), 0);
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "w", 2, sw, 0), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "v", 2, sv, 1), 0);
	ck_assert_int_ge(gpo_optim_add_tensor(opt, "b", 1, sb, 0), 0);
	return opt;
}

struct buf_dt {
	const char *buffer;
	enum gpo_dtype dt;
};

/* adamw with amsgrad: param, grad and three slots, each its own dtype */
static const struct buf_dt mixed[] = {
	{ "param", GPO_F16 },
	{ "grad", GPO_I32 },
	{ "exp_avg", GPO_BF16 },
	{ "exp_avg_sq", GPO_U8 },
	{ "max_exp_avg_sq", GPO_I64 },
};

static struct gpo_optim *make_mixed(struct gpo_device *dev, uint64_t n)
{
	struct gpo_optim *opt = make_opt(dev, GPO_ADAMW, n);
	size_t i;

	ck_assert_int_eq(gpo_optim_configure(opt, -1, "amsgrad=1"), 0);
	for (i = 0; i < ARRAY_SIZE(mixed); i++) {
		ck_assert_msg(!gpo_optim_set_dtype(opt, mixed[i].buffer,
						   mixed[i].dt), "%s",
			      gpo_errmsg());
		ck_assert_int_eq(gpo_optim_dtype(opt, mixed[i].buffer),
				 mixed[i].dt);
	}
	return opt;
}

static size_t buf_bytes(struct gpo_optim *opt, const char *buffer)
{
	return gpo_optim_numel(opt) *
	       gpo_dtype_size(gpo_optim_dtype(opt, buffer));
}

/* Fresh random bytes into every buffer of @opt; returns them, by buffer. */
static void write_all(struct gpo_optim *opt, unsigned char **data,
		      uint64_t *rng)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(mixed); i++) {
		size_t n = buf_bytes(opt, mixed[i].buffer);

		data[i] = malloc(n);
		fill_bytes(data[i], n, rng);
		ck_assert_msg(!gpo_optim_write(opt, mixed[i].buffer, NULL,
					       data[i], n), "%s: %s",
			      mixed[i].buffer, gpo_errmsg());
	}
}

static void expect_all(struct gpo_optim *opt, unsigned char **data,
		       const char *where)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(mixed); i++) {
		size_t n = buf_bytes(opt, mixed[i].buffer);
		unsigned char *got = malloc(n);

		memset(got, 0xa5, n);
		ck_assert_msg(!gpo_optim_read(opt, mixed[i].buffer, NULL, got,
					      n), "%s", gpo_errmsg());
		ck_assert_msg(!memcmp(got, data[i], n),
			      "%s: %s (%s) differs", where, mixed[i].buffer,
			      gpo_dtype_name(mixed[i].dt));
		free(got);
	}
}

static void free_all(unsigned char **data)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(mixed); i++)
		free(data[i]);
}

/*
 * Where a tensor of make_opt() is in the whole-buffer view: groups in
 * order without their padding, w and b in group 0, v (35) in group 1.
 */
static uint64_t flat_pos(struct gpo_optim *opt,
			 const struct gpo_tensor_info *ti)
{
	if (ti->group)
		return gpo_optim_numel(opt) - 35;
	return ti->offset;	/* group 0 starts at element 0 */
}

START_TEST(test_every_dtype_round_trips_bit_exactly_every_device)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t sizes[] = { 1, 61, 1000, 4099 }, rng = tu_rng("dtype_rt");
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	size_t k, i;

	for (d = 0; d < nd; d++) {
		for (k = 0; k < ARRAY_SIZE(sizes); k++) {
			struct gpo_optim *opt = make_mixed(devs[d], sizes[k]);
			unsigned char *data[ARRAY_SIZE(mixed)], *zero, *got;
			const char *const names[] = { "w", "v", "b" };
			struct gpo_tensor_info ti;
			size_t n = buf_bytes(opt, "exp_avg_sq");

			/* a fresh slot is zero in its own dtype */
			zero = calloc(1, n);
			got = malloc(n);
			memset(got, 0xa5, n);
			ck_assert_int_eq(gpo_optim_read(opt, "exp_avg_sq", NULL,
							got, n), 0);
			ck_assert(!memcmp(got, zero, n));
			free(zero);
			free(got);

			write_all(opt, data, &rng);
			expect_all(opt, data, tu_device_id(devs[d]));

			/* tensor by tensor, at offsets in elements of each dtype */
			for (i = 0; i < ARRAY_SIZE(mixed); i++) {
				size_t es = gpo_dtype_size(mixed[i].dt), t;

				for (t = 0; t < 3; t++) {
					int ix = gpo_optim_find_tensor(opt,
								       names[t]);

					ck_assert_int_eq(gpo_optim_tensor_info(opt,
							ix, &ti), 0);
					ck_assert_int_eq(ti.dtype, GPO_F16);
					got = malloc(ti.numel * es);
					fill_bytes(got, ti.numel * es, &rng);
					ck_assert_int_eq(gpo_optim_write(opt,
						mixed[i].buffer, names[t], got,
						ti.numel * es), 0);
					memcpy(data[i] + flat_pos(opt, &ti) * es,
					       got, ti.numel * es);
					free(got);
				}
			}
			expect_all(opt, data, "per tensor");
			/* a wrong size names the dtype */
			ck_assert_int_eq(gpo_optim_write(opt, "exp_avg", "v",
							 data[2], 35 * 4),
					 -EINVAL);
			ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "bf16"));
			ck_assert_int_eq(gpo_optim_read(opt, "param", NULL,
							data[0],
							gpo_optim_numel(opt) * 4),
					 -EINVAL);
			ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "f16"));
			expect_all(opt, data, "after bad calls");
			free_all(data);
			gpo_optim_free(opt);
		}
	}
}
END_TEST

/* ---- checkpoints ---------------------------------------------------------- */

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gpuopt-dtype-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_file_and_dir(const char *path)
{
	unlink(path);
	rmdir(dir);
}

START_TEST(test_checkpoint_keeps_each_dtype_bit_exactly)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t rng = tu_rng("dtype_ckpt");
	int nd = tu_devices(devs, TU_MAX_DEVICES), i, j, t, found = 0;
	unsigned char *data[ARRAY_SIZE(mixed)];
	struct gpo_ckpt_tensor ct;
	struct gpo_ckpt *ck;
	char path[128];

	make_dir();
	snprintf(path, sizeof(path), "%s/x.safetensors", dir);
	for (i = 0; i < nd; i++) {
		struct gpo_optim *src = make_mixed(devs[i], 2000);

		write_all(src, data, &rng);
		ck_assert_int_eq(gpo_optim_set_step(src, 7), 0);
		ck_assert_msg(!gpo_optim_save(src, path, 0), "%s", gpo_errmsg());

		/* each tensor in its dtype's safetensors name */
		ck_assert_int_eq(gpo_ckpt_open(path, 0, &ck), 0);
		ck_assert_int_eq(gpo_ckpt_verify(ck), 0);
		for (t = 0; !gpo_ckpt_tensor(ck, t, &ct); t++) {
			static const char *const st[] = { "F32", "F16", "BF16",
							  "U8", "I32", "I64" };
			const char *slot = strrchr(ct.name, '/') + 1;
			size_t k;

			if (!strncmp(ct.name, "param/", 6))
				slot = "param";
			/* the u8 slot's absmax blocks (test_optim_u8) */
			if (!strncmp(ct.name, "absmax/", 7)) {
				ck_assert_str_eq(ct.name, "absmax/exp_avg_sq");
				ck_assert_str_eq(ct.dtype, "F32");
				found += 100;
				continue;
			}
			for (k = 0; k < ARRAY_SIZE(mixed); k++)
				if (!strcmp(mixed[k].buffer, slot))
					break;
			ck_assert_uint_lt(k, ARRAY_SIZE(mixed));
			ck_assert_str_eq(ct.dtype, st[mixed[k].dt]);
			found++;
		}
		gpo_ckpt_close(ck);
		/* param and the three slots, 3 tensors each; no grad */
		ck_assert_int_eq(found, 112);
		found = 0;

		for (j = 0; j < nd; j++) {
			struct gpo_optim *dst = make_mixed(devs[j], 2000);
			unsigned char *grad;
			size_t gb = buf_bytes(dst, "grad");

			ck_assert_msg(!gpo_optim_restore(dst, path, 0),
				      "%s -> %s: %s", tu_device_id(devs[i]),
				      tu_device_id(devs[j]), gpo_errmsg());
			ck_assert_int_eq(gpo_optim_steps_done(dst), 7);
			/* gradients are not saved: compare the rest */
			grad = malloc(gb);
			ck_assert_int_eq(gpo_optim_read(dst, "grad", NULL, grad,
							gb), 0);
			memcpy(data[1], grad, gb);
			free(grad);
			expect_all(dst, data, tu_device_id(devs[j]));
			gpo_optim_free(dst);
		}
		free_all(data);
		gpo_optim_free(src);
	}
	remove_file_and_dir(path);
}
END_TEST

/* No conversion: the file's dtypes must be the optimizer's. */
START_TEST(test_checkpoint_of_other_dtypes_is_einval_and_changes_nothing)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t rng = tu_rng("dtype_ckpt_mismatch");
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	unsigned char *data[ARRAY_SIZE(mixed)], *before[ARRAY_SIZE(mixed)];
	char path[128];

	make_dir();
	snprintf(path, sizeof(path), "%s/x.safetensors", dir);
	for (d = 0; d < nd; d++) {
		struct gpo_optim *src = make_mixed(devs[d], 300), *dst;

		write_all(src, data, &rng);
		ck_assert_int_eq(gpo_optim_save(src, path, 0), 0);

		/* the same optimizer but exp_avg in f16 */
		dst = make_mixed(devs[d], 300);
		ck_assert_int_eq(gpo_optim_set_dtype(dst, "exp_avg", GPO_F16),
				 0);
		write_all(dst, before, &rng);
		ck_assert_int_eq(gpo_optim_restore(dst, path, 0), -EINVAL);
		ck_assert_msg(strstr(gpo_errmsg(), "BF16") &&
			      strstr(gpo_errmsg(), "f16"), "%s", gpo_errmsg());
		expect_all(dst, before, "after a refused restore");
		free_all(before);
		gpo_optim_free(dst);

		/* an all-f32 optimizer */
		dst = make_opt(devs[d], GPO_ADAMW, 300);
		ck_assert_int_eq(gpo_optim_configure(dst, -1, "amsgrad=1"), 0);
		ck_assert_int_eq(gpo_optim_restore(dst, path, 0), -EINVAL);
		tu_check_errmsg("restore into f32");
		ck_assert_int_eq(gpo_optim_dtype(dst, "param"), GPO_F32);
		gpo_optim_free(dst);
		free_all(data);
		gpo_optim_free(src);
	}
	remove_file_and_dir(path);
}
END_TEST

/*
 * The strict reader takes exactly gpuopt's six dtypes: param/b (F32 [3])
 * turned into another dtype of the same 12 bytes in the file's own
 * header (the header's checksum skipped, as the fuzz harness does).
 */
START_TEST(test_strict_reader_takes_only_gpuopt_dtypes)
{
	static const struct {
		const char *entry;
		int strict, foreign;
	} cases[] = {
		{ "\"param/b\":{\"dtype\":\"F32\",\"shape\":[3]", 0, 0 },
		{ "\"param/b\":{\"dtype\":\"I32\",\"shape\":[3]", 0, 0 },
		{ "\"param/b\":{\"dtype\":\"BF16\",\"shape\":[6]", 0, 0 },
		{ "\"param/b\":{\"dtype\":\"U8\",\"shape\":[12]", 0, 0 },
		{ "\"param/b\":{\"dtype\":\"I16\",\"shape\":[6]", -EPROTO, 0 },
		{ "\"param/b\":{\"dtype\":\"U32\",\"shape\":[3]", -EPROTO, 0 },
		{ "\"param/b\":{\"dtype\":\"BOOL\",\"shape\":[12]", -EPROTO,
		  0 },
		{ "\"param/b\":{\"dtype\":\"F8_E4M3\",\"shape\":[12]",
		  -EPROTO, 0 },
		{ "\"param/b\":{\"dtype\":\"F4\",\"shape\":[24]", -EPROTO,
		  -EPROTO },
	};
	const char *orig = "\"param/b\":{\"dtype\":\"F32\",\"shape\":[3]";
	struct gpo_optim *opt;
	struct gpo_device *dev;
	char path[128], *file, *at, *copy;
	size_t len, k, hlen;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	opt = make_opt(dev, GPO_SGD, 100);
	make_dir();
	snprintf(path, sizeof(path), "%s/x.safetensors", dir);
	ck_assert_int_eq(gpo_optim_save(opt, path, 0), 0);
	file = cu_slurp(path, &len);
	at = strstr(file + 8, orig);
	ck_assert_ptr_nonnull(at);
	memcpy(&hlen, file, 8);
	for (k = 0; k < ARRAY_SIZE(cases); k++) {
		size_t pad = strlen(cases[k].entry) - strlen(orig);
		size_t off = (size_t)(at - file);
		int ret;

		/* the header's trailing spaces make room for a longer entry */
		ck_assert_uint_ge(strlen(cases[k].entry), strlen(orig));
		ck_assert(file[8 + hlen - 1 - pad] == ' ');
		copy = malloc(len);
		memcpy(copy, file, off);
		memcpy(copy + off, cases[k].entry, strlen(cases[k].entry));
		memcpy(copy + off + strlen(cases[k].entry), at + strlen(orig),
		       8 + hlen - off - strlen(orig) - pad);
		memcpy(copy + 8 + hlen, file + 8 + hlen, len - 8 - hlen);
		ret = gpo__ckpt_check_mem(copy, len, CKPT_NO_HEADER_SUM, NULL);
		ck_assert_msg(ret == cases[k].strict, "%s: strict %d: %s",
			      cases[k].entry, ret, gpo_errmsg());
		if (ret)
			ck_assert_msg(strstr(gpo_errmsg(), "param/b"), "%s",
				      gpo_errmsg());
		ret = gpo__ckpt_check_mem(copy, len, CKPT_NO_HEADER_SUM |
					  GPO_CKPT_FOREIGN, NULL);
		ck_assert_msg(ret == cases[k].foreign, "%s: foreign %d: %s",
			      cases[k].entry, ret, gpo_errmsg());
		free(copy);
	}
	free(file);
	gpo_optim_free(opt);
	remove_file_and_dir(path);
}
END_TEST

/* ---- the step ------------------------------------------------------------- */

struct refusal {
	enum gpo_optim_kind kind;
	const char *config;
	const char *buffer;
	enum gpo_dtype dt;
	const char *msg;
};

static const struct refusal refusals[] = {
	{ GPO_ADAMW, "", "exp_avg", GPO_BF16,
	  "adamw: exp_avg in bf16 but exp_avg_sq in f32: the state slots a step uses must share one dtype" },
	{ GPO_ADAM, "", "param", GPO_F16,
	  "adam: param in f16, grad in f32: the gradients must be in the parameters' dtype" },
	{ GPO_SGD, "momentum=0.9", "momentum_buffer", GPO_U8,
	  "sgd: momentum_buffer in u8: no kernel for this dtype yet" },
	{ GPO_LAMB, "", "grad", GPO_BF16,
	  "lamb: grad in bf16: no kernel for this dtype yet" },
	{ GPO_ADAGRAD, "", "sum", GPO_F16,
	  "adagrad: sum in f16: no kernel for this dtype yet" },
	{ GPO_RMSPROP, "centered=1", "grad_avg", GPO_I32,
	  "rmsprop: grad_avg in i32: no kernel for this dtype yet" },
	{ GPO_LION, "", "exp_avg", GPO_I64,
	  "lion: exp_avg in i64: no kernel for this dtype yet" },
};

/* every buffer the optimizer has now, as bytes */
static size_t snap(struct gpo_optim *opt, unsigned char **out)
{
	int ns = gpo_optim_slot_count(opt), i;
	size_t total = 0, n;

	*out = NULL;
	for (i = -2; i < ns; i++) {
		const char *b = i == -2 ? "param" : i == -1 ? "grad" :
				gpo_optim_slot_name(opt, i);

		n = buf_bytes(opt, b);
		*out = realloc(*out, total + n);
		ck_assert_int_eq(gpo_optim_read(opt, b, NULL, *out + total, n),
				 0);
		total += n;
	}
	return total;
}

START_TEST(test_step_on_non_f32_is_enosys_and_changes_nothing)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	uint64_t rng = tu_rng("dtype_step");
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	size_t k;

	for (d = 0; d < nd; d++) {
		for (k = 0; k < ARRAY_SIZE(refusals); k++) {
			const struct refusal *r = &refusals[k];
			struct gpo_optim *opt = make_opt(devs[d], r->kind, 500);
			unsigned char *before, *after, *x;
			struct gpo_step_info info = { .step = 12345 };
			size_t n, m;
			int i, ns;

			ck_assert_int_eq(gpo_optim_configure(opt, -1,
							     r->config), 0);
			ck_assert_int_eq(gpo_optim_set_dtype(opt, r->buffer,
							     r->dt), 0);
			n = buf_bytes(opt, "param");
			x = malloc(n);
			fill_bytes(x, n, &rng);
			ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, x,
							 n), 0);
			free(x);
			ns = gpo_optim_slot_count(opt);
			for (i = -1; i < ns; i++) {
				const char *b = i < 0 ? "grad" :
						gpo_optim_slot_name(opt, i);

				m = buf_bytes(opt, b);
				x = malloc(m);
				fill_bytes(x, m, &rng);
				ck_assert_int_eq(gpo_optim_write(opt, b, NULL,
								 x, m), 0);
				free(x);
			}
			n = snap(opt, &before);
			ck_assert_int_eq(gpo_optim_step(opt, &info), -ENOSYS);
			ck_assert_str_eq(gpo_errmsg(), r->msg);
			ck_assert_uint_eq(info.step, 12345);
			ck_assert_uint_eq(gpo_optim_steps_done(opt), 0);
			ck_assert_uint_eq(snap(opt, &after), n);
			ck_assert_msg(!memcmp(before, after, n),
				      "%s: %s: the refused step changed data",
				      tu_device_id(devs[d]), r->msg);
			free(before);
			free(after);
			gpo_optim_free(opt);
		}
	}
}
END_TEST

START_TEST(test_objective_on_non_f32_is_enosys)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	uint64_t shape = 100;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt;
		double loss = 42;

		ck_assert_int_eq(gpo_optim_new(devs[d], GPO_SGD, &opt), 0);
		ck_assert_int_ge(gpo_optim_add_tensor(opt, "x", 1, &shape, 0),
				 0);
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "grad", GPO_BF16),
				 0);
		ck_assert_int_eq(gpo_optim_objective(opt, "rosenbrock", &loss),
				 -ENOSYS);
		ck_assert_str_eq(gpo_errmsg(),
				 "rosenbrock: grad in bf16: no kernel for this dtype yet");
		ck_assert(loss == 42);
		gpo_optim_free(opt);
	}
}
END_TEST

/* A slot in another dtype that the configuration does not use is no bar. */
START_TEST(test_unused_slot_in_another_dtype_does_not_stop_the_step)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt = make_opt(devs[d], GPO_SGD, 100);

		ck_assert_int_eq(gpo_optim_set_dtype(opt, "momentum_buffer",
						     GPO_BF16), 0);
		ck_assert_msg(!gpo_optim_step(opt, NULL), "%s", gpo_errmsg());
		ck_assert_int_eq(gpo_optim_slot_count(opt), 0);
		/* once momentum is on, the slot is needed: refused */
		ck_assert_int_eq(gpo_optim_configure(opt, -1, "momentum=0.5"),
				 0);
		ck_assert_int_eq(gpo_optim_step(opt, NULL), -ENOSYS);
		ck_assert_uint_eq(gpo_optim_steps_done(opt), 1);
		gpo_optim_free(opt);
	}
}
END_TEST

/* ---- initial values ------------------------------------------------------- */

START_TEST(test_adagrad_sum_starts_at_initial_value_in_its_dtype)
{
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;
	const enum gpo_dtype dts[] = { GPO_F16, GPO_BF16 };
	size_t k, i, n;

	for (d = 0; d < nd; d++) {
		for (k = 0; k < ARRAY_SIZE(dts); k++) {
			struct gpo_optim *opt = make_opt(devs[d], GPO_ADAGRAD,
							 3000);
			uint16_t *got, want0, want1;

			ck_assert_int_eq(gpo_optim_configure(opt, 0,
				"initial_accumulator_value=0.1"), 0);
			ck_assert_int_eq(gpo_optim_configure(opt, 1,
				"initial_accumulator_value=3.3"), 0);
			ck_assert_int_eq(gpo_optim_set_dtype(opt, "sum",
							     dts[k]), 0);
			want0 = dts[k] == GPO_F16 ? 0x2e66 : 0x3dcd;
			want1 = dts[k] == GPO_F16 ? 0x429a : 0x4053;
			n = gpo_optim_numel(opt);
			got = malloc(n * 2);
			ck_assert_msg(!gpo_optim_read(opt, "sum", NULL, got,
						      n * 2), "%s",
				      gpo_errmsg());
			for (i = 0; i < n; i++)
				ck_assert_msg(got[i] == (i < n - 35 ? want0 :
							 want1),
					      "%s: sum[%zu] = %04x",
					      gpo_dtype_name(dts[k]), i, got[i]);
			/* reset brings it back */
			memset(got, 0, n * 2);
			ck_assert_int_eq(gpo_optim_write(opt, "sum", NULL, got,
							 n * 2), 0);
			ck_assert_int_eq(gpo_optim_reset(opt), 0);
			ck_assert_int_eq(gpo_optim_read(opt, "sum", "v", got,
							35 * 2), 0);
			for (i = 0; i < 35; i++)
				ck_assert_uint_eq(got[i], want1);
			free(got);
			gpo_optim_free(opt);
		}
	}
}
END_TEST

/* Integers have no form of 0.1 yet: refused, and 0 works. */
START_TEST(test_adagrad_integer_sum_with_initial_value_is_enosys)
{
	struct gpo_optim *opt;
	struct gpo_device *dev;
	int32_t buf[1200];
	size_t n;

	ck_assert_int_eq(gpo_device_select(tu_ctx(), "cpu", &dev), 0);
	opt = make_opt(dev, GPO_ADAGRAD, 1000);
	/* (u8 sum is blockwise 8-bit state: test_optim_u8) */
	ck_assert_int_eq(gpo_optim_set_dtype(opt, "sum", GPO_I32), 0);
	ck_assert_int_eq(gpo_optim_configure(opt, 1,
					     "initial_accumulator_value=0.1"),
			 0);
	n = gpo_optim_numel(opt);
	ck_assert_uint_le(n, ARRAY_SIZE(buf));
	ck_assert_int_eq(gpo_optim_read(opt, "sum", NULL, buf, n * 4),
			 -ENOSYS);
	ck_assert_ptr_nonnull(strstr(gpo_errmsg(), "i32"));
	ck_assert_int_eq(gpo_optim_configure(opt, 1,
					     "initial_accumulator_value=0"), 0);
	memset(buf, 0xff, n * 4);
	ck_assert_int_eq(gpo_optim_read(opt, "sum", NULL, buf, n * 4), 0);
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(buf[i], 0);
	gpo_optim_free(opt);
}
END_TEST

/* ---- gpo_optim_set_dtype() errors ---------------------------------------- */

static void expect_dtypes(struct gpo_optim *opt, const char *const *names,
			  const enum gpo_dtype *want, int n)
{
	int i;

	for (i = 0; i < n; i++)
		ck_assert_msg(gpo_optim_dtype(opt, names[i]) == (int)want[i],
			      "%s is %d, want %d", names[i],
			      gpo_optim_dtype(opt, names[i]), want[i]);
}

START_TEST(test_bad_set_dtype_is_an_error_and_changes_nothing)
{
	static const char *const names[] = { "param", "grad", "exp_avg",
					     "exp_avg_sq", "max_exp_avg_sq" };
	enum gpo_dtype want[] = { GPO_F32, GPO_F32, GPO_F32, GPO_F32,
				  GPO_F32 };
	struct gpo_device *devs[TU_MAX_DEVICES];
	int nd = tu_devices(devs, TU_MAX_DEVICES), d;

	for (d = 0; d < nd; d++) {
		struct gpo_optim *opt = make_opt(devs[d], GPO_ADAM, 100);
		unsigned char buf[1024];

		want[2] = GPO_F32;
		expect_dtypes(opt, names, want, 5);
		ck_assert_int_eq(gpo_optim_set_dtype(NULL, "param", GPO_F16),
				 -EINVAL);
		tu_check_errmsg("set_dtype(NULL)");
		ck_assert_int_eq(gpo_optim_set_dtype(opt, NULL, GPO_F16),
				 -EINVAL);
		tu_check_errmsg("set_dtype(NULL buffer)");
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "param", GPO_DTYPES),
				 -EINVAL);
		tu_check_errmsg("set_dtype(GPO_DTYPES)");
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "param",
						     (enum gpo_dtype)-1),
				 -EINVAL);
		tu_check_errmsg("set_dtype(-1)");
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "nope", GPO_F16),
				 -ENOENT);
		tu_check_errmsg("set_dtype(nope)");
		/* slots of other kinds */
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "sum", GPO_F16),
				 -ENOENT);
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "momentum_buffer",
						     GPO_F16), -ENOENT);
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "", GPO_F16),
				 -ENOENT);
		expect_dtypes(opt, names, want, 5);
		ck_assert_int_eq(gpo_optim_dtype(NULL, "param"), -EINVAL);
		ck_assert_int_eq(gpo_optim_dtype(opt, NULL), -EINVAL);
		ck_assert_int_eq(gpo_optim_dtype(opt, "sum"), -ENOENT);
		tu_check_errmsg("gpo_optim_dtype(sum)");

		/* a good one, then the first use fixes every dtype */
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "exp_avg", GPO_BF16),
				 0);
		want[2] = GPO_BF16;
		ck_assert_int_eq(gpo_optim_read(opt, "exp_avg", "b", buf, 6),
				 0);
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "exp_avg", GPO_F32),
				 -EBUSY);
		tu_check_errmsg("set_dtype after use");
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "param", GPO_F16),
				 -EBUSY);
		/* also a slot the configuration does not use yet */
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "max_exp_avg_sq",
						     GPO_F16), -EBUSY);
		/* even the same dtype: the answer does not depend on it */
		ck_assert_int_eq(gpo_optim_set_dtype(opt, "grad", GPO_F32),
				 -EBUSY);
		expect_dtypes(opt, names, want, 5);
		gpo_optim_free(opt);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dtype");
	TCase *tc = tcase_create("dtype");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_dtype_names_sizes_parse_round_trip);
	tcase_add_test(tc, test_f16_conversions_match_float64_reference);
	tcase_add_test(tc, test_bf16_conversions_match_float64_reference);
	tcase_add_test(tc, test_every_dtype_round_trips_bit_exactly_every_device);
	tcase_add_test(tc, test_checkpoint_keeps_each_dtype_bit_exactly);
	tcase_add_test(tc, test_checkpoint_of_other_dtypes_is_einval_and_changes_nothing);
	tcase_add_test(tc, test_strict_reader_takes_only_gpuopt_dtypes);
	tcase_add_test(tc, test_step_on_non_f32_is_enosys_and_changes_nothing);
	tcase_add_test(tc, test_objective_on_non_f32_is_enosys);
	tcase_add_test(tc, test_unused_slot_in_another_dtype_does_not_stop_the_step);
	tcase_add_test(tc, test_adagrad_sum_starts_at_initial_value_in_its_dtype);
	tcase_add_test(tc, test_adagrad_integer_sum_with_initial_value_is_enosys);
	tcase_add_test(tc, test_bad_set_dtype_is_an_error_and_changes_nothing);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
