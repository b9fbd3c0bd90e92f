// SPDX-License-Identifier: MIT
/*
 * test_ckpt_corrupt.c - the strict reader: every kind of damage gives its
 * own error, a message, and leaves the optimizer exactly as it was; the
 * fuzz corpus and every regression file replay without a crash; foreign
 * files load with GPO_CKPT_FOREIGN
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"
#include "ckpt_util.h"
#include "ckpt/ckpt_i.h"
#include "../fuzz/fuzz_ckpt.h"

static char dir[64], good[128], bad[128];
static char *base;		/* the good file */
static size_t base_len;
static uint64_t base_hlen;

static struct gpo_optim *make_opt(void)
{
	struct gpo_optim *opt = fuzz_make_optim(tu_ctx(), GPO_ADAMW);

	ck_assert_ptr_nonnull(opt);
	ck_assert_int_eq(gpo_optim_configure(opt, 1, "lr=0.02 amsgrad=1"), 0);
	return opt;
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void setup(void)
{
	struct gpo_optim *opt = make_opt();
	uint64_t rng = tu_rng("ckpt_corrupt_base");
	int i;

	snprintf(dir, sizeof(dir), "/tmp/gpuopt-ckptc-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(good, sizeof(good), "%s/good.st", dir);
	snprintf(bad, sizeof(bad), "%s/bad.st", dir);
	cu_write_random(opt, "param", &rng);
	cu_write_random(opt, "grad", &rng);
	ck_assert_int_eq(gpo_optim_step(opt, NULL), 0);
	ck_assert_int_eq(gpo_optim_save(opt, good, 0), 0);
	base = cu_slurp(good, &base_len);
	for (i = 7, base_hlen = 0; i >= 0; i--)
		base_hlen = base_hlen << 8 | (unsigned char)base[i];
	gpo_optim_free(opt);
}

static void teardown(void)
{
	unlink(good);
	unlink(bad);
	rmdir(dir);
	free(base);
	base = NULL;
}

/* Restore @buf into an optimizer with other contents: @err, no change. */
static void expect_err_flags(const void *buf, size_t len, int err,
			     unsigned int flags, const char *what)
{
	struct gpo_optim *opt = make_opt();
	uint64_t rng = tu_rng(what);
	size_t n = gpo_optim_numel(opt), i;
	float *before = malloc(n * 4), *after = malloc(n * 4);
	double lr;
	int ret;

	tu_fill(before, n, &rng, -1, 1);
	ck_assert_int_eq(gpo_optim_write(opt, "param", NULL, before, n * 4), 0);
	ck_assert_int_eq(gpo_optim_set_step(opt, 77), 0);
	write_file(bad, buf, len);
	ret = gpo_optim_restore(opt, bad, flags);
	if (err)
		ck_assert_msg(ret == err, "%s: got %d (%s), want %d", what, ret,
			      gpo_errmsg(), err);
	else
		ck_assert_msg(ret < 0, "%s: accepted", what);
	tu_check_errmsg(what);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, after, n * 4), 0);
	for (i = 0; i < n; i++)
		ck_assert_msg(before[i] == after[i], "%s: params changed", what);
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 77);
	ck_assert_int_eq(gpo_optim_get(opt, 1, "lr", &lr), 0);
	ck_assert(lr == 0.02);
	/* the in-memory reader agrees on damage it can see */
	if (err && err != -EINVAL && err != -ENOENT)
		ck_assert_msg(gpo__ckpt_check_mem(buf, len, flags, NULL) == err,
			      "%s: gpo__ckpt_check_mem says %d", what,
			      gpo__ckpt_check_mem(buf, len, flags, NULL));
	free(before);
	free(after);
	gpo_optim_free(opt);
}

static void expect_err(const void *buf, size_t len, int err, const char *what)
{
	expect_err_flags(buf, len, err, 0, what);
}

START_TEST(test_ckpt_good_file_passes_every_check)
{
	struct gpo_optim *opt = make_opt();

	ck_assert_int_eq(gpo__ckpt_check_mem(base, base_len, 0, NULL), 0);
	ck_assert_int_eq(gpo_optim_restore(opt, good, 0), 0);
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 1);
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_ckpt_truncation_in_every_region_is_ebadmsg)
{
	uint64_t ds = 8 + base_hlen;
	struct ckpt *ck;
	char what[64];
	uint64_t cuts[64];
	int n = 0, i;

	ck_assert_int_eq(gpo__ckpt_check_mem(base, base_len, 0, &ck), 0);
	cuts[n++] = 0;
	cuts[n++] = 4;				/* in the length */
	cuts[n++] = 8;
	cuts[n++] = 8 + 20;			/* in the JSON */
	cuts[n++] = ds - 3;			/* in the padding */
	cuts[n++] = ds;				/* no data at all */
	for (i = 0; i < ck->ntensors && n < 60; i++) {
		cuts[n++] = ds + ck->t[i].begin + 1;	/* inside a tensor */
		if (i)
			cuts[n++] = ds + ck->t[i].begin;	/* at a boundary */
	}
	cuts[n++] = base_len - 1;
	gpo__ckpt_free(ck);
	for (i = 0; i < n; i++) {
		snprintf(what, sizeof(what), "truncated at %llu",
			 (unsigned long long)cuts[i]);
		expect_err(base, cuts[i], -EBADMSG, what);
	}
}
END_TEST

START_TEST(test_ckpt_trailing_byte_is_ebadmsg)
{
	char *buf = malloc(base_len + 1);

	memcpy(buf, base, base_len);
	buf[base_len] = 0;
	expect_err(buf, base_len + 1, -EBADMSG, "one byte more");
	free(buf);
}
END_TEST

static void set_hlen(char *buf, uint64_t n)
{
	int i;

	for (i = 0; i < 8; i++)
		buf[i] = (char)(n >> (8 * i));
}

START_TEST(test_ckpt_huge_header_length_is_e2big)
{
	char *buf = malloc(base_len);

	memcpy(buf, base, base_len);
	set_hlen(buf, 1ull << 40);
	expect_err(buf, base_len, -E2BIG, "2^40 header");
	set_hlen(buf, UINT64_MAX);
	expect_err(buf, base_len, -E2BIG, "2^64-1 header");
	set_hlen(buf, CKPT_MAX_HEADER + 1);
	expect_err(buf, base_len, -E2BIG, "100 MiB + 1 header");
	set_hlen(buf, base_len - 7);
	expect_err(buf, base_len, -EBADMSG, "header past the end");
	set_hlen(buf, 0);
	expect_err(buf, base_len, -EBADMSG, "empty header");
	free(buf);
}
END_TEST

START_TEST(test_ckpt_flipped_data_byte_is_ebade)
{
	char *buf = malloc(base_len), what[64];
	struct ckpt *ck;
	int i;

	ck_assert_int_eq(gpo__ckpt_check_mem(base, base_len, 0, &ck), 0);
	for (i = 0; i < ck->ntensors; i++) {
		uint64_t off = 8 + base_hlen + (ck->t[i].begin + ck->t[i].end) / 2;

		memcpy(buf, base, base_len);
		buf[off] ^= 0x01;
		snprintf(what, sizeof(what), "flip in %s", ck->t[i].name);
		expect_err(buf, base_len, -EBADE, what);
	}
	gpo__ckpt_free(ck);
	free(buf);
}
END_TEST

/* Any bit of the header or its padding: some error, never a load. */
START_TEST(test_ckpt_flipped_header_bits_never_load)
{
	uint64_t rng = tu_rng("ckpt_header_flips"), ds = 8 + base_hlen;
	char *buf = malloc(base_len), what[64];
	int i, iters = tu_quick() ? 20 : 300;

	for (i = 0; i < iters; i++) {
		uint64_t off = (uint64_t)tu_rand(&rng, 0, (double)ds);
		int bit = (int)tu_rand(&rng, 0, 8);

		memcpy(buf, base, base_len);
		buf[off] ^= (char)(1 << bit);
		snprintf(what, sizeof(what), "bit %d of byte %llu", bit,
			 (unsigned long long)off);
		expect_err(buf, base_len, 0, what);
		ck_assert_msg(gpo__ckpt_check_mem(buf, base_len, 0, NULL) < 0, "%s",
			      what);
	}
	free(buf);
}
END_TEST

/* ---- rewritten headers --------------------------------------------------- */

static json_t *header(void)
{
	json_error_t e;
	json_t *root = json_loadb(base + 8, base_hlen, 0, &e);

	ck_assert_ptr_nonnull(root);
	return root;
}

static json_t *meta_of(json_t *root)
{
	return json_object_get(root, "__metadata__");
}

/* A file from @root and @data, 8-byte padded as the safetensors package
 * does; @resum recomputes gpuopt.header_xxh64 */
static char *rebuild(json_t *root, const char *data, size_t dlen, int resum,
		     size_t *len)
{
	char *text, *buf, hex[17];
	size_t tl, hl;
	uint64_t sum;

	if (resum && json_object_get(meta_of(root), CKPT_META_HDR_XXH64)) {
		ck_assert_int_eq(gpo__ckpt_header_sum(root, &sum), 0);
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)sum);
		json_object_set_new(meta_of(root), CKPT_META_HDR_XXH64,
				    json_string(hex));
	}
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	tl = strlen(text);
	hl = (tl + 7) / 8 * 8;
	*len = 8 + hl + dlen;
	buf = malloc(*len);
	set_hlen(buf, hl);
	memcpy(buf + 8, text, tl);
	memset(buf + 8 + tl, ' ', hl - tl);
	memcpy(buf + 8 + hl, data, dlen);
	free(text);
	json_decref(root);
	return buf;
}

static const char *data(void)
{
	return base + 8 + base_hlen;
}

static size_t data_len(void)
{
	return base_len - 8 - base_hlen;
}

static void expect_rebuilt(json_t *root, int resum, int err, const char *what)
{
	size_t len;
	char *buf = rebuild(root, data(), data_len(), resum, &len);

	expect_err(buf, len, err, what);
	free(buf);
}

static json_t *entry(json_t *root, const char *name)
{
	json_t *e = json_object_get(root, name);

	ck_assert_ptr_nonnull(e);
	return e;
}

static void set_offsets(json_t *e, long long b, long long end)
{
	json_t *a = json_pack("[II]", b, end);

	json_object_set_new(e, "data_offsets", a);
}

static long long off_of(json_t *e, int i)
{
	return json_integer_value(json_array_get(json_object_get(e,
							"data_offsets"), i));
}

START_TEST(test_ckpt_repadded_header_still_loads)
{
	size_t len;
	char *buf = rebuild(header(), data(), data_len(), 0, &len);
	struct gpo_optim *opt = make_opt();

	write_file(bad, buf, len);
	ck_assert_msg(!gpo_optim_restore(opt, bad, 0), "%s", gpo_errmsg());
	free(buf);
	gpo_optim_free(opt);
}
END_TEST

START_TEST(test_ckpt_wrong_dtype_is_einval_unknown_is_eproto)
{
	json_t *root = header(), *e = entry(root, "param/b");

	json_object_set_new(e, "dtype", json_string("F16"));
	json_object_set_new(e, "shape", json_pack("[i]", 6));
	expect_rebuilt(root, 1, -EINVAL, "F16 tensor");
	root = header();
	json_object_set_new(entry(root, "param/b"), "dtype", json_string("Q4"));
	expect_rebuilt(root, 1, -EPROTO, "unknown dtype");
	root = header();
	json_object_set_new(entry(root, "param/b"), "dtype", json_integer(4));
	expect_rebuilt(root, 1, -EPROTO, "dtype not a string");
}
END_TEST

START_TEST(test_ckpt_wrong_shape_is_ebadmsg_or_einval)
{
	json_t *root = header(), *e = entry(root, "param/b");

	json_object_set_new(e, "shape", json_pack("[i]", 4));
	expect_rebuilt(root, 1, -EBADMSG, "shape larger than the span");
	root = header();
	e = entry(root, "param/w");
	json_object_set_new(e, "shape", json_pack("[ii]", 3, 2));
	expect_rebuilt(root, 1, -EINVAL, "transposed shape");
	root = header();
	json_object_set_new(entry(root, "param/b"), "shape",
			    json_pack("[f]", 3.0));
	expect_rebuilt(root, 1, -EPROTO, "shape of reals");
}
END_TEST

START_TEST(test_ckpt_overlapping_or_gapped_offsets_are_ebadmsg)
{
	json_t *root = header(), *e = entry(root, "param/b");

	set_offsets(e, off_of(e, 0) - 4, off_of(e, 1) - 4);
	expect_rebuilt(root, 1, -EBADMSG, "overlap");
	root = header();
	e = entry(root, "param/b");
	set_offsets(e, off_of(e, 0) + 4, off_of(e, 1) + 4);
	expect_rebuilt(root, 1, -EBADMSG, "gap");
	root = header();
	e = entry(root, "param/b");
	set_offsets(e, off_of(e, 1), off_of(e, 0));
	expect_rebuilt(root, 1, -EBADMSG, "reversed offsets");
	root = header();
	e = entry(root, "param/b");
	set_offsets(e, -12, 0);
	expect_rebuilt(root, 1, -EPROTO, "negative offsets");
}
END_TEST

/* The last tensor in data order, to remove it with its bytes. */
static const char *last_tensor(json_t *root, long long *begin)
{
	const char *key, *best = NULL;
	long long b = -1;
	json_t *v;

	json_object_foreach(root, key, v) {
		if (!strcmp(key, "__metadata__") || off_of(v, 0) < b)
			continue;
		b = off_of(v, 0);
		best = key;
	}
	*begin = b;
	return best;
}

static void drop_sum(json_t *root, const char *name)
{
	json_t *meta = meta_of(root), *sums;
	json_error_t e;
	char *text;

	sums = json_loads(json_string_value(json_object_get(meta,
						CKPT_META_XXH64)), 0, &e);
	json_object_del(sums, name);
	text = json_dumps(sums, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_object_set_new(meta, CKPT_META_XXH64, json_string(text));
	free(text);
	json_decref(sums);
}

START_TEST(test_ckpt_missing_tensor_is_enoent_extra_is_einval)
{
	json_t *root = header();
	long long b;
	char name[128], *buf, *d;
	size_t len;

	snprintf(name, sizeof(name), "%s", last_tensor(root, &b));
	json_object_del(root, name);
	drop_sum(root, name);
	buf = rebuild(root, data(), (size_t)b, 1, &len);
	expect_err(buf, len, -ENOENT, "missing tensor");
	free(buf);

	root = header();
	json_object_set_new(root, "param/zzz", json_pack("{s:s,s:[i],s:[I,I]}",
		"dtype", "F32", "shape", 1, "data_offsets",
		(long long)data_len(), (long long)data_len() + 4));
	d = calloc(1, data_len() + 4);
	memcpy(d, data(), data_len());
	buf = rebuild(root, d, data_len() + 4, 1, &len);
	expect_err_flags(buf, len, -EINVAL, GPO_CKPT_FOREIGN, "extra tensor");
	expect_err(buf, len, -ENODATA, "extra tensor without checksum");
	free(buf);
	free(d);

	root = header();
	json_object_set_new(root, "optimizer/zzz", json_pack("{s:s,s:[],s:[I,I]}",
		"dtype", "F32", "shape", "data_offsets",
		(long long)data_len(), (long long)data_len() + 4));
	d = calloc(1, data_len() + 4);
	memcpy(d, data(), data_len());
	buf = rebuild(root, d, data_len() + 4, 1, &len);
	expect_err_flags(buf, len, -EINVAL, GPO_CKPT_FOREIGN, "odd name");
	free(buf);
	free(d);
}
END_TEST

START_TEST(test_ckpt_bad_metadata_is_eproto_enodata_ebade)
{
	json_t *root = header();

	drop_sum(root, "param/w");
	expect_rebuilt(root, 1, -ENODATA, "a missing checksum");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.step", json_integer(3));
	expect_rebuilt(root, 1, -EPROTO, "metadata not a string");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.step", json_string("-1"));
	expect_rebuilt(root, 1, -EPROTO, "negative step");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.version", json_string("2"));
	expect_rebuilt(root, 1, -EPROTONOSUPPORT, "format version 2");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.groups", json_string("[{"));
	expect_rebuilt(root, 1, -EPROTO, "groups not JSON");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.optimizer",
			    json_string("sgd"));
	expect_rebuilt(root, 1, -EPROTO, "adamw hparams under sgd");
	root = header();
	json_object_del(meta_of(root), "gpuopt.skipped");
	expect_rebuilt(root, 1, -ENODATA, "no skipped count");
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.step", json_string("5"));
	expect_rebuilt(root, 0, -EBADE, "step changed, header sum not");
	root = header();
	json_object_del(meta_of(root), CKPT_META_HDR_XXH64);
	expect_rebuilt(root, 0, -ENODATA, "no header checksum");
	root = header();
	json_object_set_new(entry(root, "param/b"), "extra", json_true());
	expect_rebuilt(root, 1, -EPROTO, "unknown tensor field");
	root = header();
	json_object_set_new(root, "__metadata__", json_integer(1));
	expect_rebuilt(root, 1, -EPROTO, "metadata not an object");
}
END_TEST

/* the step after 2^64-1 would be step 0, with 1 - beta^0 = 0 to divide by */
START_TEST(test_ckpt_last_possible_step_is_eoverflow)
{
	struct gpo_optim *opt = make_opt();
	json_t *root = header();
	size_t len;
	char *buf;

	json_object_set_new(meta_of(root), "gpuopt.step",
			    json_string("18446744073709551615"));
	expect_rebuilt(root, 1, -EOVERFLOW, "step 2^64-1");
	/* one less is a step a restore takes */
	root = header();
	json_object_set_new(meta_of(root), "gpuopt.step",
			    json_string("18446744073709551614"));
	buf = rebuild(root, data(), data_len(), 1, &len);
	write_file(bad, buf, len);
	ck_assert_msg(!gpo_optim_restore(opt, bad, 0), "%s", gpo_errmsg());
	ck_assert_uint_eq(gpo_optim_steps_done(opt), UINT64_MAX - 1);
	free(buf);
	gpo_optim_free(opt);
}
END_TEST

static char *splice_text(const char *text, size_t at, const char *ins, size_t *len)
{
	size_t tl = strlen(text), il = strlen(ins), hl;
	char *buf;

	hl = (tl + il + 7) / 8 * 8;
	*len = 8 + hl + data_len();
	buf = malloc(*len);
	set_hlen(buf, hl);
	memcpy(buf + 8, text, at);
	memcpy(buf + 8 + at, ins, il);
	memcpy(buf + 8 + at + il, text + at, tl - at);
	memset(buf + 8 + tl + il, ' ', hl - tl - il);
	memcpy(buf + 8 + hl, data(), data_len());
	return buf;
}

START_TEST(test_ckpt_malformed_json_is_eproto)
{
	char *text = strndup(base + 8, base_hlen), *buf;
	size_t len;

	buf = splice_text(text, 1, "\"param/b\":{\"dtype\":\"F32\",\"shape\":[0],"
		     "\"data_offsets\":[0,0]},", &len);
	expect_err(buf, len, -EPROTO, "duplicate key");
	free(buf);
	buf = splice_text(text, 0, " ", &len);
	expect_err(buf, len, -EPROTO, "space before '{'");
	free(buf);
	buf = splice_text(text, 0, "[", &len);
	expect_err(buf, len, -EPROTO, "not an object");
	free(buf);
	buf = splice_text(text, strlen(text), "}", &len);
	expect_err(buf, len, -EPROTO, "trailing brace");
	free(buf);
	free(text);
}
END_TEST

/* ---- foreign files ------------------------------------------------------- */

/* Only the params, no metadata: what another writer would produce. */
START_TEST(test_ckpt_foreign_params_only_file_loads_with_the_flag)
{
	json_t *root = header(), *out = json_object(), *v;
	struct gpo_optim *opt = make_opt(), *ref = make_opt();
	size_t len, n = gpo_optim_numel(opt), i;
	float *x = malloc(n * 4), *y = malloc(n * 4);
	const char *key;
	char *buf;

	json_object_foreach(root, key, v)
		if (!strncmp(key, "param/", 6))
			json_object_set(out, key, v);
	json_decref(root);
	/* the params come first in a gpuopt file: the data is a prefix */
	buf = rebuild(out, data(), n * 4, 0, &len);
	write_file(bad, buf, len);
	ck_assert_int_eq(gpo_optim_restore(opt, bad, 0), -ENODATA);
	ck_assert_int_eq(gpo_optim_set_step(opt, 5), 0);
	ck_assert_msg(!gpo_optim_restore(opt, bad, GPO_CKPT_FOREIGN), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_restore(ref, good, 0), 0);
	ck_assert_int_eq(gpo_optim_read(opt, "param", NULL, x, n * 4), 0);
	ck_assert_int_eq(gpo_optim_read(ref, "param", NULL, y, n * 4), 0);
	ck_assert(!memcmp(x, y, n * 4));
	/* state starts afresh, step and hyperparameters stay */
	ck_assert_int_eq(gpo_optim_read(opt, "exp_avg", NULL, x, n * 4), 0);
	for (i = 0; i < n; i++)
		ck_assert(x[i] == 0.0f);
	ck_assert_uint_eq(gpo_optim_steps_done(opt), 5);
	free(buf);
	free(x);
	free(y);
	gpo_optim_free(opt);
	gpo_optim_free(ref);
}
END_TEST

/* ---- the fuzz corpus and the regressions --------------------------------- */

static int replay_dir(const char *path, struct gpo_optim **opts)
{
	struct dirent *e;
	char file[512];
	DIR *d = opendir(path);
	size_t len;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *buf;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, e->d_name);
		buf = cu_slurp(file, &len);
		fuzz_one((const uint8_t *)buf, len, opts);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(test_ckpt_fuzz_corpus_and_regressions_replay_cleanly)
{
	struct gpo_optim *opts[GPO_OPTIM_KINDS];
	int k, n;

	for (k = 0; k < GPO_OPTIM_KINDS; k++)
		opts[k] = fuzz_fake_optim(k);
	n = replay_dir("tests/fuzz/corpus", opts);
	n += replay_dir("tests/fuzz/regress", opts);
	ck_assert_msg(n > 0, "no fuzz corpus under tests/fuzz (run from the "
		      "repository root)");
	for (k = 0; k < GPO_OPTIM_KINDS; k++)
		fuzz_free_fake(opts[k]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("ckpt_corrupt");
	TCase *tc = tcase_create("ckpt_corrupt");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_ckpt_good_file_passes_every_check);
	tcase_add_test(tc, test_ckpt_truncation_in_every_region_is_ebadmsg);
	tcase_add_test(tc, test_ckpt_trailing_byte_is_ebadmsg);
	tcase_add_test(tc, test_ckpt_huge_header_length_is_e2big);
	tcase_add_test(tc, test_ckpt_flipped_data_byte_is_ebade);
	tcase_add_test(tc, test_ckpt_flipped_header_bits_never_load);
	tcase_add_test(tc, test_ckpt_repadded_header_still_loads);
	tcase_add_test(tc, test_ckpt_wrong_dtype_is_einval_unknown_is_eproto);
	tcase_add_test(tc, test_ckpt_wrong_shape_is_ebadmsg_or_einval);
	tcase_add_test(tc, test_ckpt_overlapping_or_gapped_offsets_are_ebadmsg);
	tcase_add_test(tc, test_ckpt_missing_tensor_is_enoent_extra_is_einval);
	tcase_add_test(tc, test_ckpt_bad_metadata_is_eproto_enodata_ebade);
	tcase_add_test(tc, test_ckpt_last_possible_step_is_eoverflow);
	tcase_add_test(tc, test_ckpt_malformed_json_is_eproto);
	tcase_add_test(tc, test_ckpt_foreign_params_only_file_loads_with_the_flag);
	tcase_add_test(tc, test_ckpt_fuzz_corpus_and_regressions_replay_cleanly);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
