// SPDX-License-Identifier: MIT
/*
 * test_data.c - datasets: IDX files written here (plain, gzip, float),
 * the real Fashion-MNIST when installed, safetensors datasets (U8 and
 * F32 samples, U8/I32/I64 labels), the held-out split, every kind of bad
 * input (its errno, a message, *out untouched), the memory cap checked
 * before allocation, the per-epoch shuffling order, and any file read as
 * bytes (GPO_DATASET_BYTES) with its held-out tail.
 */
#include <fcntl.h>
#include <dirent.h>
#include <grp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "testutil.h"
#include "train/train_i.h"

#define FMNIST "/usr/share/datasets/fashion-mnist"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/gpuopt-data-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void)
{
	char path[512];
	struct dirent *e;
	DIR *d = opendir(dir);

	if (d) {
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			unlink(path);
		}
		closedir(d);
	}
	rmdir(dir);
}

static const char *in_dir(const char *name)
{
	static char path[4][256];
	static int i;

	i = (i + 1) % 4;
	snprintf(path[i], sizeof(path[i]), "%s/%s", dir, name);
	return path[i];
}

/* "DIR/a,DIR/b": an images file and its labels */
static const char *pair_of(const char *a, const char *b)
{
	static char path[600];

	snprintf(path, sizeof(path), "%s/%s,%s/%s", dir, a, dir, b);
	return path;
}

static const char *pair_il(void)
{
	return pair_of("i", "l");
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

/* a growable byte buffer */
struct buf {
	unsigned char *p;
	size_t len;
};

static void put(struct buf *b, const void *src, size_t len)
{
	b->p = realloc(b->p, b->len + len + 1);
	ck_assert_ptr_nonnull(b->p);
	memcpy(b->p + b->len, src, len);
	b->len += len;
}

static void put_be32(struct buf *b, uint32_t v)
{
	unsigned char x[4] = { v >> 24, v >> 16, v >> 8, v };

	put(b, x, 4);
}

/* gzip (one member) of @src, by zlib's deflate with a gzip wrapper */
static struct buf gzip_of(const struct buf *src)
{
	struct buf out = { 0 };
	z_stream zs = { 0 };

	ck_assert_int_eq(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
				      Z_DEFAULT_STRATEGY), Z_OK);
	out.p = malloc(deflateBound(&zs, src->len) + 64);
	zs.next_in = src->p;
	zs.avail_in = (uInt)src->len;
	zs.next_out = out.p;
	zs.avail_out = (uInt)deflateBound(&zs, src->len) + 64;
	ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
	out.len = zs.total_out;
	deflateEnd(&zs);
	return out;
}

/* A random IDX dataset of @n samples of rows x cols u8 and labels < k. */
struct idx_set {
	uint32_t n, rows, cols, k;
	unsigned char *px;
	unsigned char *lab;
	struct buf images, labels;	/* the IDX files' bytes */
};

static void idx_make(struct idx_set *s, uint32_t n, uint32_t rows,
		     uint32_t cols, uint32_t k, const char *tag)
{
	uint64_t rng = tu_rng(tag);
	uint32_t i, f = rows * cols;

	memset(s, 0, sizeof(*s));
	s->n = n, s->rows = rows, s->cols = cols, s->k = k;
	s->px = malloc((size_t)n * f);
	s->lab = malloc(n);
	for (i = 0; i < n * f; i++)
		s->px[i] = (unsigned char)tu_rand(&rng, 0, 256);
	for (i = 0; i < n; i++)
		s->lab[i] = (unsigned char)tu_rand(&rng, 0, k);
	s->lab[n / 2] = (unsigned char)(k - 1);	/* classes is exactly k */
	put_be32(&s->images, 0x00000803);
	put_be32(&s->images, n);
	put_be32(&s->images, rows);
	put_be32(&s->images, cols);
	put(&s->images, s->px, (size_t)n * f);
	put_be32(&s->labels, 0x00000801);
	put_be32(&s->labels, n);
	put(&s->labels, s->lab, n);
}

static void idx_free(struct idx_set *s)
{
	free(s->px);
	free(s->lab);
	free(s->images.p);
	free(s->labels.p);
}

static void write_buf(const char *name, const struct buf *b, int gz)
{
	if (gz) {
		struct buf z = gzip_of(b);

		write_file(in_dir(name), z.p, z.len);
		free(z.p);
	} else {
		write_file(in_dir(name), b->p, b->len);
	}
}

/* @got (from @first) holds @want's samples exactly: u8 / 255 as f32 */
static void check_part(const struct dataset_part *got, uint64_t n,
		       uint32_t f, const unsigned char *px,
		       const unsigned char *lab)
{
	uint64_t i;

	ck_assert_uint_eq(got->n, n);
	for (i = 0; i < n * f; i++)
		if (got->x[i] != (float)px[i] / 255.0f)
			ck_abort_msg("x[%llu] = %.9g, want %u/255",
				     (unsigned long long)i, got->x[i], px[i]);
	for (i = 0; i < n; i++)
		ck_assert_int_eq(got->y[i], lab[i]);
}

/* Fails with @err, a message containing @words, and *out untouched. */
static void expect_err(const char *path, uint64_t max_bytes, int err,
		       const char *words)
{
	struct gpo_dataset *ds = (struct gpo_dataset *)&ds;
	int ret = gpo_dataset_open_limited(path, 0, max_bytes, &ds);

	ck_assert_msg(ret == err, "%s: got %d (%s), want %d", path, ret,
		      gpo_errmsg(), err);
	ck_assert_ptr_eq(ds, (struct gpo_dataset *)&ds);
	tu_check_errmsg("gpo_dataset_open");
	ck_assert_msg(strstr(gpo_errmsg(), words), "message '%s' lacks '%s'",
		      gpo_errmsg(), words);
}

/* ---- IDX ----------------------------------------------------------------- */

START_TEST(test_data_idx_plain_dir_holds_out_floor_tenth)
{
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	struct idx_set s;
	uint32_t f = 5 * 7;

	idx_make(&s, 37, 5, 7, 6, "idx_plain");
	write_buf("train-images-idx3-ubyte", &s.images, 0);
	write_buf("train-labels-idx1-ubyte", &s.labels, 0);
	ck_assert_int_eq(gpo_dataset_open(dir, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_info(ds, &info), 0);
	/* floor(37 / 10) = 3 held out: the last 3 samples of the file */
	ck_assert_uint_eq(info.train_samples, 34);
	ck_assert_uint_eq(info.eval_samples, 3);
	ck_assert_uint_eq(info.features, f);
	ck_assert_uint_eq(info.classes, 6);
	ck_assert_int_eq(info.eval_held_out, 1);
	ck_assert_ptr_nonnull(strstr(info.source, "train-images-idx3-ubyte"));
	ck_assert_str_eq(info.source, info.eval_source);
	ck_assert_uint_eq(info.host_bytes, 37ull * (f * 4 + 4));
	check_part(&ds->train, 34, f, s.px, s.lab);
	check_part(&ds->eval, 3, f, s.px + 34 * f, s.lab + 34);
	gpo_dataset_free(ds);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_below_ten_samples_holds_out_none)
{
	struct gpo_dataset *ds;
	struct idx_set s;

	idx_make(&s, 9, 3, 3, 4, "idx_nine");
	write_buf("train-images-idx3-ubyte", &s.images, 0);
	write_buf("train-labels-idx1-ubyte", &s.labels, 0);
	ck_assert_int_eq(gpo_dataset_open(dir, 0, &ds), 0);
	check_part(&ds->train, 9, 9, s.px, s.lab);
	ck_assert_uint_eq(ds->eval.n, 0);
	ck_assert_int_eq(ds->eval_held_out, 1);
	gpo_dataset_free(ds);
	idx_free(&s);
}
END_TEST

/* gzip found by its magic: one gzipped file without ".gz", one with */
START_TEST(test_data_idx_gzip_and_test_set)
{
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	struct idx_set tr, te;

	idx_make(&tr, 301, 28, 28, 10, "idx_gz_train");
	idx_make(&te, 53, 28, 28, 7, "idx_gz_test");
	write_buf("train-images-idx3-ubyte", &tr.images, 1);
	write_buf("train-labels-idx1-ubyte.gz", &tr.labels, 1);
	write_buf("t10k-images-idx3-ubyte.gz", &te.images, 1);
	write_buf("t10k-labels-idx1-ubyte", &te.labels, 0);
	ck_assert_int_eq(gpo_dataset_open(dir, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_info(ds, &info), 0);
	ck_assert_int_eq(info.eval_held_out, 0);
	ck_assert_uint_eq(info.classes, 10);
	ck_assert_ptr_nonnull(strstr(info.eval_source, "t10k-images-idx3-ubyte.gz"));
	check_part(&ds->train, 301, 784, tr.px, tr.lab);
	check_part(&ds->eval, 53, 784, te.px, te.lab);
	gpo_dataset_free(ds);
	idx_free(&tr);
	idx_free(&te);
}
END_TEST

/* Two gzip members back to back (cat a.gz b.gz) are one stream of data. */
START_TEST(test_data_idx_gzip_two_members)
{
	struct gpo_dataset *ds;
	struct idx_set s;
	struct buf a = { 0 }, b = { 0 }, za, zb, both = { 0 };
	size_t cut;

	idx_make(&s, 40, 4, 6, 3, "idx_members");
	cut = s.images.len / 3;
	put(&a, s.images.p, cut);
	put(&b, s.images.p + cut, s.images.len - cut);
	za = gzip_of(&a);
	zb = gzip_of(&b);
	put(&both, za.p, za.len);
	put(&both, zb.p, zb.len);
	write_file(in_dir("i"), both.p, both.len);
	write_buf("l", &s.labels, 1);
	ck_assert_int_eq(gpo_dataset_open(pair_il(), 0, &ds), 0);
	check_part(&ds->train, 36, 24, s.px, s.lab);
	gpo_dataset_free(ds);
	free(a.p), free(b.p), free(za.p), free(zb.p), free(both.p);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_pair_path)
{
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	struct idx_set s;
	char pair[600];

	idx_make(&s, 120, 2, 11, 5, "idx_pair");
	write_buf("imgs.idx", &s.images, 1);
	write_buf("labs.idx", &s.labels, 0);
	snprintf(pair, sizeof(pair), "%s,%s", in_dir("imgs.idx"),
		 in_dir("labs.idx"));
	ck_assert_int_eq(gpo_dataset_open(pair, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_info(ds, &info), 0);
	ck_assert_str_eq(info.source, pair);
	check_part(&ds->train, 108, 22, s.px, s.lab);
	check_part(&ds->eval, 12, 22, s.px + 108 * 22, s.lab + 108);
	gpo_dataset_free(ds);
	idx_free(&s);
}
END_TEST

/* type 0x0D: big-endian f32 images, taken as they are */
START_TEST(test_data_idx_float_images)
{
	uint64_t rng = tu_rng("idx_float");
	struct buf im = { 0 }, lb = { 0 };
	struct gpo_dataset *ds;
	float want[23 * 3];
	unsigned char lab[23];
	int i;

	put_be32(&im, 0x00000d02);
	put_be32(&im, 23);
	put_be32(&im, 3);
	for (i = 0; i < 23 * 3; i++) {
		uint32_t u;

		want[i] = (float)tu_rand(&rng, -3, 3);
		memcpy(&u, &want[i], 4);
		put_be32(&im, u);
	}
	put_be32(&lb, 0x00000801);
	put_be32(&lb, 23);
	for (i = 0; i < 23; i++)
		lab[i] = (unsigned char)tu_rand(&rng, 0, 2);
	put(&lb, lab, 23);
	write_buf("i", &im, 0);
	write_buf("l", &lb, 0);
	ck_assert_int_eq(gpo_dataset_open(pair_il(), 0, &ds), 0);
	ck_assert_uint_eq(ds->features, 3);
	ck_assert_uint_eq(ds->train.n + ds->eval.n, 23);
	for (i = 0; i < 23 * 3; i++)
		ck_assert_msg(ds->train.x[i] == want[i], "x[%d] %g != %g", i,
			      ds->train.x[i], want[i]);
	for (i = 0; i < 23; i++)
		ck_assert_int_eq(ds->train.y[i], lab[i]);
	gpo_dataset_free(ds);
	free(im.p);
	free(lb.p);
}
END_TEST

/* ---- the real Fashion-MNIST ---------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *p;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	p = malloc((size_t)st.st_size + 1);
	ck_assert_int_eq(read(fd, p, (size_t)st.st_size), st.st_size);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* the slice's tensor @name: its data, found by the test's own scan */
static const unsigned char *slice_tensor(const unsigned char *f,
					 const char *name)
{
	char key[64];
	uint64_t hlen = 0, begin;
	const char *h = (const char *)f + 8, *p;
	int i;

	for (i = 7; i >= 0; i--)
		hlen = hlen << 8 | f[i];
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(h, key);
	ck_assert_ptr_nonnull(p);
	p = strstr(p, "\"data_offsets\":[");
	ck_assert_ptr_nonnull(p);
	begin = strtoull(p + strlen("\"data_offsets\":["), NULL, 10);
	return f + 8 + hlen + begin;
}

START_TEST(test_data_fashion_mnist_installed)
{
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	unsigned char lab[800];
	const unsigned char *x, *y;
	char slice[512];
	unsigned char *f;
	size_t len;
	int i;

	if (access(FMNIST "/train-images-idx3-ubyte.gz", R_OK) &&
	    access(FMNIST "/train-images-idx3-ubyte", R_OK)) {
		fprintf(stderr, "test_data_fashion_mnist_installed: skipped, no "
			FMNIST " (apt-get install dataset-fashion-mnist)\n");
		return;
	}
	ck_assert_int_eq(gpo_dataset_open(FMNIST, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_info(ds, &info), 0);
	ck_assert_uint_eq(info.train_samples, 60000);
	ck_assert_uint_eq(info.eval_samples, 10000);
	ck_assert_uint_eq(info.features, 784);
	ck_assert_uint_eq(info.classes, 10);
	ck_assert_int_eq(info.eval_held_out, 0);
	/* the known first labels: ankle boot, t-shirt, t-shirt, dress */
	ck_assert_int_eq(ds->train.y[0], 9);
	ck_assert_int_eq(ds->train.y[1], 0);
	ck_assert_int_eq(ds->train.y[3], 3);
	ck_assert_int_eq(ds->eval.y[0], 9);
	ck_assert_int_eq(ds->eval.y[1], 2);
	/* the first 800 and 200 samples as PyTorch's script read them */
	tu_data_path(slice, sizeof(slice), "train/fmnist-slice.safetensors");
	f = slurp(slice, &len);
	x = slice_tensor(f, "x");
	y = slice_tensor(f, "y");
	for (i = 0; i < 800; i++)
		lab[i] = y[8 * i];	/* I64 little-endian, 0..9 */
	check_part(&(struct dataset_part){ ds->train.x, ds->train.y, 800 },
		   800, 784, x, lab);
	x = slice_tensor(f, "x_test");
	y = slice_tensor(f, "y_test");
	for (i = 0; i < 200; i++)
		lab[i] = y[8 * i];
	check_part(&(struct dataset_part){ ds->eval.x, ds->eval.y, 200 },
		   200, 784, x, lab);
	free(f);
	gpo_dataset_free(ds);
}
END_TEST

/* gpo_dataset_samples() hands out each part's own arrays, nothing else */
START_TEST(test_data_samples_accessor)
{
	struct gpo_dataset *ds;
	const float *x = NULL;
	const int32_t *y = NULL;
	char slice[512];
	uint64_t n = 0;

	tu_data_path(slice, sizeof(slice), "train/fmnist-slice.safetensors");
	ck_assert_int_eq(gpo_dataset_open(slice, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_samples(ds, GPO_DATASET_TRAIN, &x, &y,
					     &n), 0);
	ck_assert(x == ds->train.x && y == ds->train.y);
	ck_assert_uint_eq(n, ds->train.n);
	ck_assert_int_eq(gpo_dataset_samples(ds, GPO_DATASET_EVAL, &x, &y,
					     &n), 0);
	ck_assert(x == ds->eval.x && y == ds->eval.y);
	ck_assert_uint_eq(n, ds->eval.n);
	ck_assert_int_eq(gpo_dataset_samples(ds, GPO_DATASET_TRAIN, NULL,
					     NULL, &n), 0);
	ck_assert_uint_eq(n, ds->train.n);
	n = 7;
	ck_assert_int_eq(gpo_dataset_samples(ds, 2, &x, &y, &n), -EINVAL);
	tu_check_errmsg("gpo_dataset_samples");
	ck_assert_uint_eq(n, 7);
	ck_assert_int_eq(gpo_dataset_samples(NULL, 0, &x, &y, &n), -EINVAL);
	gpo_dataset_free(ds);
}
END_TEST

/* ---- safetensors --------------------------------------------------------- */

struct st_tensor {
	const char *name;
	const char *dtype;
	int ndim;
	uint64_t shape[3];
	const void *data;
	size_t bytes;
};

static void st_write(const char *path, const struct st_tensor *t, int n)
{
	struct buf b = { 0 };
	char h[4096], *p = h;
	uint64_t off = 0, hlen;
	unsigned char le[8];
	int i, j;

	p += sprintf(p, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (i = 0; i < n; i++) {
		p += sprintf(p, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t[i].name,
			     t[i].dtype);
		for (j = 0; j < t[i].ndim; j++)
			p += sprintf(p, "%s%llu", j ? "," : "",
				     (unsigned long long)t[i].shape[j]);
		p += sprintf(p, "],\"data_offsets\":[%llu,%llu]}",
			     (unsigned long long)off,
			     (unsigned long long)(off + t[i].bytes));
		off += t[i].bytes;
	}
	p += sprintf(p, "}");
	hlen = (uint64_t)(p - h);
	for (i = 0; i < 8; i++)
		le[i] = (unsigned char)(hlen >> (8 * i));
	put(&b, le, 8);
	put(&b, h, hlen);
	for (i = 0; i < n; i++)
		put(&b, t[i].data, t[i].bytes);
	write_file(path, b.p, b.len);
	free(b.p);
}

START_TEST(test_data_safetensors_slice_u8_with_test_set)
{
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	const unsigned char *x, *y;
	unsigned char lab[800];
	char slice[512];
	unsigned char *f;
	size_t len;
	int i;

	tu_data_path(slice, sizeof(slice), "train/fmnist-slice.safetensors");
	ck_assert_int_eq(gpo_dataset_open(slice, 0, &ds), 0);
	ck_assert_int_eq(gpo_dataset_info(ds, &info), 0);
	ck_assert_uint_eq(info.train_samples, 800);
	ck_assert_uint_eq(info.eval_samples, 200);
	ck_assert_uint_eq(info.features, 784);
	ck_assert_uint_eq(info.classes, 10);
	ck_assert_int_eq(info.eval_held_out, 0);
	f = slurp(slice, &len);
	x = slice_tensor(f, "x");
	y = slice_tensor(f, "y");
	for (i = 0; i < 800; i++)
		lab[i] = y[8 * i];
	check_part(&ds->train, 800, 784, x, lab);
	x = slice_tensor(f, "x_test");
	y = slice_tensor(f, "y_test");
	for (i = 0; i < 200; i++)
		lab[i] = y[8 * i];
	check_part(&ds->eval, 200, 784, x, lab);
	free(f);
	gpo_dataset_free(ds);
}
END_TEST

/* F32 [N, 3, 5] samples as they are, I32 labels, the last tenth held out */
START_TEST(test_data_safetensors_f32_i32_held_out)
{
	uint64_t rng = tu_rng("st_f32");
	enum { N = 73, F = 15 };
	static float x[N * F];
	static int32_t y[N];
	struct st_tensor t[2] = {
		{ "y", "I32", 1, { N }, y, sizeof(y) },
		{ "x", "F32", 3, { N, 3, 5 }, x, sizeof(x) },
	};
	struct gpo_dataset *ds;
	int i;

	tu_fill(x, N * F, &rng, -2, 2);
	for (i = 0; i < N; i++)
		y[i] = (int32_t)tu_rand(&rng, 0, 12);
	y[5] = 12;
	st_write(in_dir("d.safetensors"), t, 2);
	ck_assert_int_eq(gpo_dataset_open(in_dir("d.safetensors"), 0, &ds), 0);
	ck_assert_uint_eq(ds->features, F);
	ck_assert_uint_eq(ds->classes, 13);
	ck_assert_uint_eq(ds->train.n, 66);
	ck_assert_uint_eq(ds->eval.n, 7);
	ck_assert_int_eq(ds->eval_held_out, 1);
	ck_assert_int_eq(memcmp(ds->train.x, x, sizeof(x)), 0);
	ck_assert_ptr_eq(ds->eval.x, ds->train.x + 66 * F);
	ck_assert_int_eq(memcmp(ds->train.y, y, sizeof(y)), 0);
	gpo_dataset_free(ds);
}
END_TEST

/* U8 x and U8 / I64 labels: x / 255 exactly as float */
START_TEST(test_data_safetensors_u8_labels_u8_i64)
{
	uint64_t rng = tu_rng("st_u8");
	enum { N = 31, F = 7 };
	unsigned char x[N * F], y8[N];
	int64_t y64[N];
	struct gpo_dataset *ds;
	int i, k;

	for (i = 0; i < N * F; i++)
		x[i] = (unsigned char)tu_rand(&rng, 0, 256);
	for (i = 0; i < N; i++)
		y8[i] = (unsigned char)tu_rand(&rng, 0, 4), y64[i] = y8[i];
	for (k = 0; k < 2; k++) {
		struct st_tensor t[2] = {
			{ "x", "U8", 2, { N, F }, x, sizeof(x) },
			k ? (struct st_tensor){ "y", "I64", 1, { N }, y64, sizeof(y64) } :
			    (struct st_tensor){ "y", "U8", 1, { N }, y8, sizeof(y8) },
		};

		st_write(in_dir("u.safetensors"), t, 2);
		ck_assert_int_eq(gpo_dataset_open(in_dir("u.safetensors"), 0, &ds), 0);
		check_part(&ds->train, 28, F, x, y8);
		check_part(&ds->eval, 3, F, x + 28 * F, y8 + 28);
		gpo_dataset_free(ds);
	}
}
END_TEST

START_TEST(test_data_safetensors_bad_tensors_are_einval)
{
	float x[6 * 2] = { 0 }, xn[6 * 2] = { 0 };
	int64_t y[6] = { 0, 1, 2, 0, 1, 2 }, yneg[6] = { 0, 1, -1, 0, 1, 2 };
	int32_t ybig[6] = { 0, 1, 1 << 24, 0, 1, 2 };
	uint16_t xh[12] = { 0 };
	const char *p = in_dir("b.safetensors");
	struct {
		struct st_tensor t[3];
		int n;
		const char *words;
	} c[] = {
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) } }, 1, "no tensor 'y'" },
		{ { { "y", "I64", 1, { 6 }, y, sizeof(y) } }, 1, "no tensor 'x'" },
		{ { { "x", "F16", 2, { 6, 2 }, xh, sizeof(xh) },
		    { "y", "I64", 1, { 6 }, y, sizeof(y) } }, 2, "F32 or U8" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "F32", 1, { 3 }, x, 12 } }, 2, "U8, I32 or I64" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "I64", 1, { 5 }, y, 40 } }, 2, "one label per sample" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "I64", 1, { 6 }, yneg, sizeof(yneg) } }, 2, "negative" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "I32", 1, { 6 }, ybig, sizeof(ybig) } }, 2, "too large" },
		{ { { "x", "F32", 2, { 6, 2 }, xn, sizeof(xn) },
		    { "y", "I64", 1, { 6 }, y, sizeof(y) } }, 2, "not finite" },
		{ { { "x", "F32", 2, { 0, 2 }, x, 0 },
		    { "y", "I64", 1, { 0 }, y, 0 } }, 2, "no samples" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "I64", 1, { 6 }, y, sizeof(y) },
		    { "x_test", "F32", 2, { 6, 2 }, x, sizeof(x) } }, 3,
		  "'x_test' without 'y_test'" },
		{ { { "x", "F32", 2, { 6, 2 }, x, sizeof(x) },
		    { "y", "I64", 1, { 6 }, y, sizeof(y) },
		    { "x_test", "F32", 2, { 4, 3 }, x, 48 } }, 3, "x_test" },
	};
	size_t i;

	xn[7] = NAN;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		st_write(p, c[i].t, c[i].n);
		expect_err(p, 0, -EINVAL, c[i].words);
	}
}
END_TEST

/* the library's strict parser: each defect is -EINVAL naming the file */
START_TEST(test_data_safetensors_corrupt_header_is_einval)
{
	float x[4] = { 1, 2, 3, 4 };
	int64_t y[2] = { 0, 1 };
	struct st_tensor t[2] = {
		{ "x", "F32", 2, { 2, 2 }, x, sizeof(x) },
		{ "y", "I64", 1, { 2 }, y, sizeof(y) },
	};
	const char *p = in_dir("h.safetensors");
	unsigned char *f;
	size_t len;

	st_write(p, t, 2);
	f = slurp(p, &len);
	write_file(p, f, len - 1);		/* truncated data */
	expect_err(p, 0, -EINVAL, p);
	write_file(p, f, len);
	write_file(in_dir("h2"), f, 8);		/* truncated header */
	expect_err(in_dir("h2"), 0, -EINVAL, "h2");
	f[8] = '[';				/* not a JSON object */
	write_file(p, f, len);
	expect_err(p, 0, -EINVAL, "h.safetensors");
	f[8] = '{';
	f[7] = 0x40;				/* an absurd header length */
	write_file(p, f, len);
	expect_err(p, 0, -EINVAL, "h.safetensors");
	write_file(p, "abc", 3);
	expect_err(p, 0, -EINVAL, "not a safetensors file");
	free(f);
}
END_TEST

/* ---- bad input ----------------------------------------------------------- */

/* a good plain pair "i,l" in the directory; returns its path */
static const char *good_pair(struct idx_set *s)
{
	idx_make(s, 50, 4, 4, 3, "good_pair");
	write_buf("i", &s->images, 0);
	write_buf("l", &s->labels, 0);
	return pair_il();
}

START_TEST(test_data_missing_is_enoent)
{
	struct idx_set s;

	expect_err(in_dir("nothing.safetensors"), 0, -ENOENT, "nothing");
	expect_err(dir, 0, -ENOENT, "train-images-idx3-ubyte");
	idx_make(&s, 20, 2, 2, 2, "missing");
	write_buf("train-images-idx3-ubyte", &s.images, 0);
	expect_err(dir, 0, -ENOENT, "train-labels-idx1-ubyte");
	write_buf("train-labels-idx1-ubyte", &s.labels, 0);
	write_buf("t10k-images-idx3-ubyte", &s.images, 0);
	expect_err(dir, 0, -EINVAL, "without t10k-labels");
	expect_err(pair_of("i", "nope"), 0, -ENOENT, "/i");
	write_buf("i", &s.images, 0);
	expect_err(pair_of("i", "nope"), 0, -ENOENT, "nope");
	idx_free(&s);
}
END_TEST

/*
 * Unreadable: mode 000. Root reads anything, so as root the open runs in
 * a child that has become nobody.
 */
START_TEST(test_data_unreadable_is_eacces)
{
	struct idx_set s;
	const char *pair = good_pair(&s);
	int status;
	pid_t pid;

	ck_assert_int_eq(chmod(in_dir("l"), 0), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	idx_free(&s);		/* the child owns nothing: valgrind counts its leaks */
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct gpo_dataset *ds = NULL;
		int ret;

		if (!geteuid() && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				   setresuid(65534, 65534, 65534)))
			_exit(3);
		ret = gpo_dataset_open(pair, 0, &ds);
		_exit(ret == -EACCES && !ds && strstr(gpo_errmsg(), "/l") ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x (3: cannot become nobody)", status);
}
END_TEST

START_TEST(test_data_idx_truncated_header_is_einval)
{
	struct idx_set s;

	good_pair(&s);
	write_file(in_dir("i"), s.images.p, 6);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	write_file(in_dir("i"), s.images.p, 3);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	write_file(in_dir("i"), s.images.p, 0);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_truncated_data_is_einval)
{
	struct idx_set s;
	struct buf cut = { 0 };

	good_pair(&s);
	write_file(in_dir("i"), s.images.p, s.images.len - 1);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	write_buf("i", &s.images, 0);
	write_file(in_dir("l"), s.labels.p, s.labels.len - 5);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	/* gzip: the whole stream of a shorter file (lengths check out) */
	put(&cut, s.labels.p, s.labels.len - 5);
	write_buf("l", &cut, 1);
	expect_err(pair_il(), 0, -EINVAL, "truncated");
	free(cut.p);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_trailing_bytes_are_einval)
{
	struct idx_set s;
	struct buf more = { 0 };

	good_pair(&s);
	put(&more, s.images.p, s.images.len);
	put(&more, "x", 1);
	write_buf("i", &more, 0);
	expect_err(pair_il(), 0, -EINVAL, "trailing bytes");
	write_buf("i", &more, 1);
	expect_err(pair_il(), 0, -EINVAL, "more data than the header");
	/* garbage after a whole gzip stream */
	{
		struct buf z = gzip_of(&s.images), g = { 0 };

		put(&g, z.p, z.len);
		put(&g, "garbage", 7);
		write_file(in_dir("i"), g.p, g.len);
		expect_err(pair_il(), 0, -EINVAL, "after the end of the gzip");
		free(z.p);
		free(g.p);
	}
	free(more.p);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_bad_magic_is_einval)
{
	static const uint32_t bad_images[] = {
		0x01000803, 0x00000903, 0x00000800, 0x00000801, 0x00000c03,
	};
	struct idx_set s;
	size_t i;

	good_pair(&s);
	for (i = 0; i < sizeof(bad_images) / sizeof(bad_images[0]); i++) {
		struct buf b = { 0 };

		put_be32(&b, bad_images[i]);
		put(&b, s.images.p + 4, s.images.len - 4);
		write_buf("i", &b, 0);
		expect_err(pair_il(), 0, -EINVAL, "/i");
		free(b.p);
	}
	write_buf("i", &s.images, 0);
	write_buf("l", &s.images, 0);	/* images where the labels go */
	expect_err(pair_il(), 0, -EINVAL, "labels must be u8");
	idx_free(&s);
}
END_TEST

START_TEST(test_data_idx_count_mismatch_is_einval)
{
	struct idx_set s, t;

	good_pair(&s);
	idx_make(&t, 49, 4, 4, 3, "mismatch");
	write_buf("l", &t.labels, 0);
	expect_err(pair_il(), 0, -EINVAL, "50 images but");
	idx_free(&t);
	/* a test set with other image sizes */
	idx_make(&t, 20, 5, 4, 3, "mismatch2");
	write_buf("train-images-idx3-ubyte", &s.images, 0);
	write_buf("train-labels-idx1-ubyte", &s.labels, 0);
	write_buf("t10k-images-idx3-ubyte", &t.images, 0);
	write_buf("t10k-labels-idx1-ubyte", &t.labels, 0);
	expect_err(dir, 0, -EINVAL, "values per image");
	idx_free(&s);
	idx_free(&t);
}
END_TEST

START_TEST(test_data_idx_corrupt_gzip_is_einval)
{
	struct idx_set s;
	struct buf z;

	good_pair(&s);
	z = gzip_of(&s.images);
	z.p[z.len - 6] ^= 0x5a;			/* the CRC-32 */
	write_file(in_dir("i"), z.p, z.len);
	expect_err(pair_il(), 0, -EINVAL, "corrupt gzip stream");
	z.p[z.len - 6] ^= 0x5a;
	z.p[z.len - 2] ^= 1;			/* the length */
	write_file(in_dir("i"), z.p, z.len);
	expect_err(pair_il(), 0, -EINVAL, "corrupt gzip stream");
	z.p[z.len - 2] ^= 1;
	write_file(in_dir("i"), z.p, z.len - 3);	/* cut in the trailer */
	expect_err(pair_il(), 0, -EINVAL, "gzip stream ends early");
	z.p[3] = 0xe0;				/* reserved header flags */
	write_file(in_dir("i"), z.p, z.len);
	expect_err(pair_il(), 0, -EINVAL, "corrupt gzip stream");
	free(z.p);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_fifo_and_directory_are_einval_without_blocking)
{
	struct idx_set s;

	good_pair(&s);
	unlink(in_dir("l"));
	ck_assert_int_eq(mkfifo(in_dir("l"), 0644), 0);
	alarm(20);	/* a blocking open would hang here */
	expect_err(pair_il(), 0, -EINVAL, "not a regular file");
	expect_err(in_dir("l"), 0, -EINVAL, "not a regular file");
	alarm(0);
	idx_free(&s);
}
END_TEST

/*
 * Declared sizes are checked against the file before any buffer of that
 * size: a 28-byte file declaring 2^20 x 2^20 u8 pixels (2^40 bytes, 4 TiB
 * as f32) is refused as corrupt, not as out of memory.
 */
START_TEST(test_data_huge_declared_dims_refused_before_allocation)
{
	struct buf im = { 0 }, lb = { 0 };
	int gz;

	put_be32(&im, 0x00000803);
	put_be32(&im, 1u << 20);
	put_be32(&im, 1u << 10);
	put_be32(&im, 1u << 10);
	put(&im, "0123456789ab", 12);
	put_be32(&lb, 0x00000801);
	put_be32(&lb, 1u << 20);
	put(&lb, "01234567", 8);
	for (gz = 0; gz < 2; gz++) {
		write_buf("i", &im, gz);
		write_buf("l", &lb, 0);
		expect_err(pair_il(), 0, -EINVAL,
			   gz ? "more than a" : "truncated");
	}
	free(im.p);
	free(lb.p);
}
END_TEST

/* the cap: exactly the bytes needed loads, one less is -EFBIG */
START_TEST(test_data_over_the_cap_is_efbig)
{
	struct gpo_dataset *ds;
	struct idx_set s;
	const char *pair = good_pair(&s);
	uint64_t need = 50ull * (16 * 4 + 4);

	expect_err(pair, need - 1, -EFBIG, "over the limit");
	expect_err(pair, 1, -EFBIG, "over the limit");
	ck_assert_int_eq(gpo_dataset_open_limited(pair, 0, need, &ds), 0);
	ck_assert_uint_eq(ds->host_bytes, need);
	gpo_dataset_free(ds);
	idx_free(&s);
}
END_TEST

START_TEST(test_data_bad_arguments_are_einval)
{
	struct gpo_dataset *ds = NULL;
	struct gpo_dataset_info info;
	struct idx_set s;
	const char *pair = good_pair(&s);

	ck_assert_int_eq(gpo_dataset_open(NULL, 0, &ds), -EINVAL);
	ck_assert_int_eq(gpo_dataset_open("", 0, &ds), -EINVAL);
	ck_assert_int_eq(gpo_dataset_open(pair, 0, NULL), -EINVAL);
	ck_assert_int_eq(gpo_dataset_open(pair, 2, &ds), -EINVAL);
	tu_check_errmsg("gpo_dataset_open(flags)");
	ck_assert_int_eq(gpo_dataset_open(pair, GPO_DATASET_BYTES | 4, &ds),
			 -EINVAL);
	ck_assert_ptr_null(ds);
	expect_err(in_dir("i,l,x"), 0, -EINVAL, "IMAGES,LABELS");
	expect_err(in_dir("i"), 0, -EINVAL, "an IDX file alone");
	ck_assert_int_eq(gpo_dataset_info(NULL, &info), -EINVAL);
	gpo_dataset_free(NULL);
	idx_free(&s);
}
END_TEST

/* ---- the order of an epoch ----------------------------------------------- */

static void check_permutation(const uint32_t *o, uint32_t n)
{
	unsigned char *seen = calloc(n, 1);
	uint32_t i;

	for (i = 0; i < n; i++) {
		ck_assert_uint_lt(o[i], n);
		ck_assert_msg(!seen[o[i]], "%u twice", o[i]);
		seen[o[i]] = 1;
	}
	free(seen);
}

START_TEST(test_data_order_is_a_seeded_permutation_per_epoch)
{
	struct gpo_dataset *ds;
	struct idx_set s;
	uint32_t n, i, a[45], b[45], c[45], d[45];
	uint64_t seed = tu_seed();

	ck_assert_int_eq(gpo_dataset_open(good_pair(&s), 0, &ds), 0);
	n = (uint32_t)ds->train.n;
	ck_assert_uint_eq(n, 45);
	ck_assert_int_eq(gpo__dataset_order(ds, seed, 3, 0, a), 0);
	for (i = 0; i < n; i++)
		ck_assert_uint_eq(a[i], i);
	ck_assert_int_eq(gpo__dataset_order(ds, seed, 3, 1, a), 0);
	ck_assert_int_eq(gpo__dataset_order(ds, seed, 3, 1, b), 0);
	ck_assert_int_eq(gpo__dataset_order(ds, seed, 4, 1, c), 0);
	ck_assert_int_eq(gpo__dataset_order(ds, seed ^ 1, 3, 1, d), 0);
	check_permutation(a, n);
	check_permutation(c, n);
	check_permutation(d, n);
	ck_assert_int_eq(memcmp(a, b, sizeof(a)), 0);
	/* 45! orders: two draws agreeing by chance would be a bug */
	ck_assert_int_ne(memcmp(a, c, sizeof(a)), 0);
	ck_assert_int_ne(memcmp(a, d, sizeof(a)), 0);
	for (i = 0; i < n && a[i] == i; i++)
		;
	ck_assert_uint_lt(i, n);
	ck_assert_int_eq(gpo__dataset_order(ds, seed, 0, 1, NULL), -EINVAL);
	gpo_dataset_free(ds);
	idx_free(&s);
}
END_TEST


/* ---- bytes ---------------------------------------------------------------- */

/* Fails with @err, a message containing @words, and *out untouched. */
static void expect_bytes_err(const char *path, uint64_t max_bytes, int err,
			     const char *words)
{
	struct gpo_dataset *ds = (struct gpo_dataset *)&ds;
	int ret = gpo_dataset_open_limited(path, GPO_DATASET_BYTES, max_bytes,
					   &ds);

	ck_assert_msg(ret == err, "%s: got %d (%s), want %d", path, ret,
		      gpo_errmsg(), err);
	ck_assert_ptr_eq(ds, (struct gpo_dataset *)&ds);
	tu_check_errmsg("gpo_dataset_open(GPO_DATASET_BYTES)");
	ck_assert_msg(strstr(gpo_errmsg(), words), "message '%s' lacks '%s'",
		      gpo_errmsg(), words);
}

/*
 * Any file, byte for byte (a gzip file not decoded, an IDX file not
 * parsed): the first N - floor(N / 10) train, the rest evaluate
 */
START_TEST(test_data_bytes_any_file_held_out_tail)
{
	static const uint64_t sizes[] = { 1, 9, 10, 1237, 70001 };
	uint64_t rng = tu_rng("bytes");
	struct gpo_dataset_info info;
	struct gpo_dataset *ds;
	const uint8_t *tr, *ev;
	uint64_t ntr, nev;
	size_t k, i;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = sizes[k];
		unsigned char *b = malloc(n);
		struct buf gz, raw;

		for (i = 0; i < n; i++)
			b[i] = (unsigned char)tu_rand(&rng, 0, 256);
		write_file(in_dir("text"), b, n);
		ds = NULL;
		ck_assert_msg(!gpo_dataset_open(in_dir("text"), GPO_DATASET_BYTES,
						&ds), "%s", gpo_errmsg());
		ck_assert(!gpo_dataset_info(ds, &info));
		ck_assert_int_eq(info.bytes, 1);
		ck_assert_uint_eq(info.features, 1);
		ck_assert_uint_eq(info.classes, 256);
		ck_assert_int_eq(info.eval_held_out, 1);
		ck_assert_uint_eq(info.train_samples, n - n / 10);
		ck_assert_uint_eq(info.eval_samples, n / 10);
		ck_assert_uint_eq(info.host_bytes, n);
		ck_assert_str_eq(info.source, in_dir("text"));
		ck_assert(!gpo_dataset_bytes(ds, GPO_DATASET_TRAIN, &tr, &ntr));
		ck_assert(!gpo_dataset_bytes(ds, GPO_DATASET_EVAL, &ev, &nev));
		ck_assert_uint_eq(ntr, n - n / 10);
		ck_assert_uint_eq(nev, n / 10);
		ck_assert(!memcmp(tr, b, ntr));
		ck_assert(!nev || !memcmp(ev, b + ntr, nev));
		ck_assert(!gpo_dataset_bytes(ds, GPO_DATASET_TRAIN, NULL, NULL));
		/* a bytes dataset has no f32 samples */
		ck_assert_int_eq(gpo_dataset_samples(ds, GPO_DATASET_TRAIN, NULL,
						     NULL, NULL), -EINVAL);
		tu_check_errmsg("gpo_dataset_samples(bytes)");
		ck_assert_int_eq(gpo_dataset_bytes(ds, 2, &tr, &ntr), -EINVAL);
		gpo_dataset_free(ds);

		/* a gzip file's own bytes */
		raw.p = b;
		raw.len = n;
		gz = gzip_of(&raw);
		write_file(in_dir("text.gz"), gz.p, gz.len);
		ck_assert(!gpo_dataset_open(in_dir("text.gz"), GPO_DATASET_BYTES,
					    &ds));
		ck_assert(!gpo_dataset_bytes(ds, GPO_DATASET_TRAIN, &tr, &ntr));
		ck_assert(!gpo_dataset_bytes(ds, GPO_DATASET_EVAL, &ev, &nev));
		ck_assert_uint_eq(ntr + nev, gz.len);
		ck_assert(!memcmp(tr, gz.p, ntr) &&
			  !memcmp(ev, gz.p + ntr, nev));
		gpo_dataset_free(ds);
		free(gz.p);
		free(b);
	}
}
END_TEST

START_TEST(test_data_bytes_bad_input)
{
	struct gpo_dataset *ds;
	struct idx_set s;
	const uint8_t *p = (const uint8_t *)&p;
	uint64_t n = 77;
	int status;
	pid_t pid;

	write_file(in_dir("empty"), "", 0);
	expect_bytes_err(in_dir("empty"), 0, -EINVAL, "empty");
	expect_bytes_err(in_dir("absent"), 0, -ENOENT, "absent");
	expect_bytes_err(dir, 0, -EINVAL, "not a regular file");
	ck_assert_int_eq(mkfifo(in_dir("fifo"), 0644), 0);
	alarm(20);
	expect_bytes_err(in_dir("fifo"), 0, -EINVAL, "not a regular file");
	alarm(0);
	write_file(in_dir("ten"), "0123456789", 10);
	expect_bytes_err(in_dir("ten"), 9, -EFBIG, "over the limit");
	ck_assert(!gpo_dataset_open_limited(in_dir("ten"), GPO_DATASET_BYTES,
					    10, &ds));
	gpo_dataset_free(ds);
	/* gpo_dataset_bytes() of a dataset of samples */
	ck_assert(!gpo_dataset_open(good_pair(&s), 0, &ds));
	ck_assert_int_eq(gpo_dataset_bytes(ds, GPO_DATASET_TRAIN, &p, &n),
			 -EINVAL);
	tu_check_errmsg("gpo_dataset_bytes(samples)");
	ck_assert_ptr_eq(p, (const uint8_t *)&p);
	ck_assert_uint_eq(n, 77);
	ck_assert_int_eq(gpo_dataset_bytes(NULL, 0, &p, &n), -EINVAL);
	gpo_dataset_free(ds);
	idx_free(&s);

	/* unreadable: as nobody (root reads anything) */
	ck_assert_int_eq(chmod(in_dir("ten"), 0), 0);
	ck_assert_int_eq(chmod(dir, 0755), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		struct gpo_dataset *d = NULL;
		int ret;

		if (!geteuid() && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				   setresuid(65534, 65534, 65534)))
			_exit(3);
		ret = gpo_dataset_open(in_dir("ten"), GPO_DATASET_BYTES, &d);
		_exit(ret == -EACCES && !d && strstr(gpo_errmsg(), "ten") ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "child status %#x (3: cannot become nobody)", status);
}
END_TEST

/* a byte dataset's phase per epoch: in 0..max, from (seed, epoch) */
START_TEST(test_data_window_phase_drawn_per_epoch)
{
	uint64_t seed = tu_seed(), e;
	int seen[16] = { 0 }, k, differ = 0;

	for (e = 0; e < 400; e++) {
		uint32_t p = gpo__window_phase(seed, e, 15);

		ck_assert_uint_le(p, 15);
		ck_assert_uint_eq(p, gpo__window_phase(seed, e, 15));
		differ += p != gpo__window_phase(seed ^ 1, e, 15);
		seen[p]++;
		ck_assert_uint_eq(gpo__window_phase(seed, e, 0), 0);
		ck_assert_uint_le(gpo__window_phase(seed, e, 1), 1);
	}
	/* 400 draws of 16 values: each about 25 times */
	for (k = 0; k < 16; k++)
		ck_assert_msg(seen[k] > 5, "phase %d drawn %d times", k, seen[k]);
	ck_assert_int_gt(differ, 300);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("data");
	TCase *tc = tcase_create("data");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_data_idx_plain_dir_holds_out_floor_tenth);
	tcase_add_test(tc, test_data_idx_below_ten_samples_holds_out_none);
	tcase_add_test(tc, test_data_idx_gzip_and_test_set);
	tcase_add_test(tc, test_data_idx_gzip_two_members);
	tcase_add_test(tc, test_data_idx_pair_path);
	tcase_add_test(tc, test_data_idx_float_images);
	tcase_add_test(tc, test_data_fashion_mnist_installed);
	tcase_add_test(tc, test_data_samples_accessor);
	tcase_add_test(tc, test_data_safetensors_slice_u8_with_test_set);
	tcase_add_test(tc, test_data_safetensors_f32_i32_held_out);
	tcase_add_test(tc, test_data_safetensors_u8_labels_u8_i64);
	tcase_add_test(tc, test_data_safetensors_bad_tensors_are_einval);
	tcase_add_test(tc, test_data_safetensors_corrupt_header_is_einval);
	tcase_add_test(tc, test_data_missing_is_enoent);
	tcase_add_test(tc, test_data_unreadable_is_eacces);
	tcase_add_test(tc, test_data_idx_truncated_header_is_einval);
	tcase_add_test(tc, test_data_idx_truncated_data_is_einval);
	tcase_add_test(tc, test_data_idx_trailing_bytes_are_einval);
	tcase_add_test(tc, test_data_idx_bad_magic_is_einval);
	tcase_add_test(tc, test_data_idx_count_mismatch_is_einval);
	tcase_add_test(tc, test_data_idx_corrupt_gzip_is_einval);
	tcase_add_test(tc, test_data_fifo_and_directory_are_einval_without_blocking);
	tcase_add_test(tc, test_data_huge_declared_dims_refused_before_allocation);
	tcase_add_test(tc, test_data_over_the_cap_is_efbig);
	tcase_add_test(tc, test_data_bad_arguments_are_einval);
	tcase_add_test(tc, test_data_order_is_a_seeded_permutation_per_epoch);
	tcase_add_test(tc, test_data_bytes_any_file_held_out_tail);
	tcase_add_test(tc, test_data_bytes_bad_input);
	tcase_add_test(tc, test_data_window_phase_drawn_per_epoch);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
