// SPDX-License-Identifier: MIT
/*
 * data.c - datasets: IDX files (Fashion-MNIST as Debian's
 * dataset-fashion-mnist installs them, plain or gzip) and safetensors
 * files (x, y, optionally x_test, y_test), loaded whole into host memory
 * as f32 samples and int32 labels; and any file as bytes, for byte-level
 * language models (GPO_DATASET_BYTES).
 *
 * Every file is opened and its header checked before anything of the
 * data's size is allocated: the sizes a header declares must fit the file
 * (exactly, for plain files; within deflate's best ratio, for gzip) and
 * the caller's byte cap. The data is then read and converted in chunks,
 * and a file must end exactly where its header says.
 */
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "ckpt/ckpt_i.h"
#include "core/rng_i.h"
#include "train/train_i.h"

#define CHUNK		(256u << 10)	/* bytes read and converted at a time */
/*
 * deflate's densest output is about 1032 bytes per input byte (zlib's
 * technical details): a gzip file that declares more than this is lying
 * or truncated, and is refused before its buffer is allocated
 */
#define GZ_MAX_RATIO	1032u
#define IDX_MAX_DIMS	8

/* the element types a file may hold */
enum elem { EL_U8, EL_F32LE, EL_F32BE, EL_I32LE, EL_I64LE };

static const unsigned int elem_size[] = {
	[EL_U8] = 1, [EL_F32LE] = 4, [EL_F32BE] = 4, [EL_I32LE] = 4,
	[EL_I64LE] = 8,
};

static int sys_err(int err, const char *path)
{
	return gpo__err(-err, "%.200s: %s", path, strerror(err));
}

/* ---- a file, plain or gzip ---------------------------------------------- */

struct src {
	const char *path;
	int fd;
	uint64_t size;			/* the file's bytes */
	int gz;
	z_stream zs;
	int zinit;
	int member_done;		/* a gzip member ended, no next yet */
	int eof;			/* read() returned 0 */
	unsigned char *in;		/* compressed input */
};

static void src_close(struct src *s)
{
	if (s->zinit)
		inflateEnd(&s->zs);
	s->zinit = 0;
	free(s->in);
	s->in = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static ssize_t read_some(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : n;
}

/* read up to @len bytes; fewer only at the end of the file */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read_some(fd, (char *)buf + got, len - got);

		if (n < 0)
			return n;
		if (!n)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * Open a regular file for reading. O_NONBLOCK keeps open() of a FIFO
 * from waiting for a writer; on the regular file it lets through it
 * changes nothing.
 */
static int src_open(struct src *s, const char *path)
{
	unsigned char magic[2];
	struct stat st;
	ssize_t n;
	int ret;

	memset(s, 0, sizeof(*s));
	s->path = path;
	s->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (s->fd < 0)
		return sys_err(errno, path);
	if (fstat(s->fd, &st)) {
		ret = sys_err(errno, path);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = gpo__err(-EINVAL, "%.200s: not a regular file", path);
		goto out_close;
	}
	s->size = (uint64_t)st.st_size;
	n = pread(s->fd, magic, 2, 0);
	if (n < 0) {
		ret = sys_err(errno, path);
		goto out_close;
	}
	if (n == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
		s->gz = 1;
		s->in = malloc(CHUNK);
		if (!s->in) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_close;
		}
		/* 16 + MAX_WBITS: a gzip wrapper, its CRC-32 and length checked */
		if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK) {
			ret = gpo__err(-ENOMEM, "%.200s: cannot start zlib", path);
			goto out_close;
		}
		s->zinit = 1;
	}
	return 0;
out_close:
	src_close(s);
	return ret;
}

/*
 * Inflate up to @len bytes into @buf; *@got < @len only where the file
 * ends cleanly after a whole gzip member. Further members (as pigz and
 * cat of two .gz files make) continue the data.
 */
static int gz_pull(struct src *s, unsigned char *buf, size_t len, size_t *got)
{
	int zr;

	s->zs.next_out = buf;
	s->zs.avail_out = (uInt)len;
	while (s->zs.avail_out) {
		if (!s->zs.avail_in && !s->eof) {
			ssize_t n = read_some(s->fd, s->in, CHUNK);

			if (n < 0)
				return sys_err((int)-n, s->path);
			s->eof = !n;
			s->zs.next_in = s->in;
			s->zs.avail_in = (uInt)n;
		}
		if (s->member_done) {
			if (!s->zs.avail_in) {
				if (s->eof)
					break;
				continue;
			}
			if (s->zs.next_in[0] != 0x1f)
				return gpo__err(-EINVAL,
						"%.200s: bytes after the end of the gzip stream",
						s->path);
			inflateReset(&s->zs);
			s->member_done = 0;
		}
		if (!s->zs.avail_in && s->eof)
			return gpo__err(-EINVAL,
					"%.200s: the gzip stream ends early (truncated)",
					s->path);
		zr = inflate(&s->zs, Z_NO_FLUSH);
		if (zr == Z_STREAM_END) {
			s->member_done = 1;
			continue;
		}
		if (zr == Z_OK || zr == Z_BUF_ERROR)
			continue;
		if (zr == Z_MEM_ERROR)
			return gpo__err(-ENOMEM, "%.200s: out of memory in zlib",
					s->path);
		return gpo__err(-EINVAL, "%.200s: corrupt gzip stream: %s",
				s->path, s->zs.msg ? s->zs.msg : zError(zr));
	}
	*got = len - s->zs.avail_out;
	return 0;
}

/* Read exactly @len (<= CHUNK) bytes of the (uncompressed) data. */
static int src_read(struct src *s, void *buf, size_t len, const char *what)
{
	size_t got;
	ssize_t n;
	int ret;

	if (s->gz) {
		ret = gz_pull(s, buf, len, &got);
		if (ret)
			return ret;
	} else {
		n = read_full(s->fd, buf, len);
		if (n < 0)
			return sys_err((int)-n, s->path);
		got = (size_t)n;
	}
	if (got < len)
		return gpo__err(-EINVAL, "%.200s: the file ends in the %s (truncated)",
				s->path, what);
	return 0;
}

/* After the declared data: the file must end here. */
static int src_finish(struct src *s)
{
	unsigned char b;
	size_t got;
	ssize_t n;
	int ret;

	if (s->gz) {
		ret = gz_pull(s, &b, 1, &got);
		if (ret)
			return ret;
	} else {
		n = read_full(s->fd, &b, 1);
		if (n < 0)
			return sys_err((int)-n, s->path);
		got = (size_t)n;
	}
	if (got)
		return gpo__err(-EINVAL, "%.200s: more data than the header declares",
				s->path);
	return 0;
}

/*
 * Can @s hold @bytes of data after @hdr bytes of header? Plain files must
 * hold exactly that; gzip at most what deflate can pack into the file.
 */
static int src_fits(const struct src *s, uint64_t hdr, uint64_t bytes)
{
	if (s->gz) {
		if (s->size > UINT64_MAX / GZ_MAX_RATIO ||
		    hdr + bytes <= s->size * GZ_MAX_RATIO)
			return 0;
		return gpo__err(-EINVAL,
				"%.200s: declares %" PRIu64 " bytes of data, more than a %"
				PRIu64 "-byte gzip file can hold (truncated or corrupt)",
				s->path, bytes, s->size);
	}
	if (s->size - hdr == bytes)
		return 0;
	return gpo__err(-EINVAL, "%.200s: declares %" PRIu64
			" bytes of data but holds %" PRIu64 " (%s)", s->path, bytes,
			s->size - hdr, s->size - hdr < bytes ? "truncated" :
			"trailing bytes");
}

/* ---- converting --------------------------------------------------------- */

static void be32_to_f32(const unsigned char *p, float *f)
{
	uint32_t u = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		     (uint32_t)p[2] << 8 | p[3];

	memcpy(f, &u, 4);
}

/*
 * Read @n values of @el from @s into @dst: u8 divided by 255 (as f32,
 * torchvision's ToTensor), f32 as they are, which must be finite.
 */
static int load_x(struct src *s, enum elem el, uint64_t n, float *dst,
		  const char *what)
{
	unsigned int es = elem_size[el];
	uint64_t done = 0, i;
	unsigned char *buf;
	int ret = 0;

	buf = malloc(CHUNK);
	if (!buf)
		return gpo__err(-ENOMEM, "out of memory");
	while (done < n) {
		size_t k = n - done < CHUNK / es ? (size_t)(n - done) : CHUNK / es;

		ret = src_read(s, buf, k * es, what);
		if (ret)
			break;
		for (i = 0; i < k; i++) {
			float *f = &dst[done + i];

			if (el == EL_U8) {
				*f = (float)buf[i] / 255.0f;
				continue;
			}
			if (el == EL_F32BE) {
				be32_to_f32(buf + 4 * i, f);
			} else {
				uint32_t u;

				memcpy(&u, buf + 4 * i, 4);
				u = le32toh(u);
				memcpy(f, &u, 4);
			}
			if (!isfinite(*f)) {
				ret = gpo__err(-EINVAL,
					       "%.200s: %s: value %" PRIu64 " is not finite",
					       s->path, what, done + i);
				goto out_free;
			}
		}
		done += k;
	}
out_free:
	free(buf);
	return ret;
}

/* Read @n labels of @el into @dst; *@max gets the largest seen. */
static int load_y(struct src *s, enum elem el, uint64_t n, int32_t *dst,
		  uint32_t *max, const char *what)
{
	unsigned int es = elem_size[el];
	uint64_t done = 0, i;
	unsigned char *buf;
	int ret = 0;

	buf = malloc(CHUNK);
	if (!buf)
		return gpo__err(-ENOMEM, "out of memory");
	while (done < n) {
		size_t k = n - done < CHUNK / es ? (size_t)(n - done) : CHUNK / es;

		ret = src_read(s, buf, k * es, what);
		if (ret)
			break;
		for (i = 0; i < k; i++) {
			int64_t v;

			if (el == EL_U8) {
				v = buf[i];
			} else if (el == EL_I32LE) {
				uint32_t u;

				memcpy(&u, buf + 4 * i, 4);
				v = (int32_t)le32toh(u);
			} else {
				uint64_t u;

				memcpy(&u, buf + 8 * i, 8);
				v = (int64_t)le64toh(u);
			}
			if (v < 0 || v >= GPO_DATASET_MAX_CLASSES) {
				ret = gpo__err(-EINVAL, "%.200s: %s: label %" PRId64
					       " of sample %" PRIu64 " is %s", s->path,
					       what, v, done + i, v < 0 ? "negative" :
					       "too large");
				goto out_free;
			}
			dst[done + i] = (int32_t)v;
			if ((uint32_t)v > *max)
				*max = (uint32_t)v;
		}
		done += k;
	}
out_free:
	free(buf);
	return ret;
}

/* ---- what a dataset will hold ------------------------------------------- */

/* One part (training file or test set) about to be loaded. */
struct part_src {
	struct src *xs, *ys;
	enum elem xel, yel;
	uint64_t xoff, yoff;		/* safetensors: where the data starts */
	uint64_t n;
	uint64_t features;
	const char *xwhat, *ywhat;
};

struct load {
	struct part_src part[2];	/* training file, test set */
	int nparts;
	uint64_t max_bytes;
};

static char *join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = b ? strlen(b) : 0;
	char *s = malloc(la + lb + 2);

	if (!s)
		return NULL;
	memcpy(s, a, la);
	s[la] = 0;
	if (b) {
		s[la] = ',';
		memcpy(s + la + 1, b, lb + 1);
	}
	return s;
}

/*
 * Check the sizes against the cap, allocate, read every part, split off
 * the held-out tail when there is no test set.
 */
static int load_all(struct gpo_dataset *ds, struct load *ld)
{
	uint64_t total = 0, bytes, per;
	uint32_t max = 0;
	int i, ret;

	for (i = 0; i < ld->nparts; i++)
		total += ld->part[i].n;		/* each <= 2^61: no overflow */
	per = ld->part[0].features * 4 + 4;
	if (total > UINT64_MAX / per)
		return gpo__err(-EFBIG, "%.200s: %" PRIu64 " samples of %" PRIu64
				" features overflow", ds->source, total,
				ld->part[0].features);
	bytes = total * per;
	if (ld->max_bytes && bytes > ld->max_bytes)
		return gpo__err(-EFBIG, "%.200s: %" PRIu64 " samples of %" PRIu64
				" features need %" PRIu64 " bytes, over the limit of %"
				PRIu64, ds->source, total, ld->part[0].features, bytes,
				ld->max_bytes);
	if (bytes > SIZE_MAX / 2)
		return gpo__err(-ENOMEM, "%.200s: %" PRIu64
				" bytes do not fit in memory", ds->source, bytes);
	ds->xbuf = malloc((size_t)(total * ld->part[0].features * 4));
	ds->ybuf = malloc((size_t)(total * 4));
	if (!ds->xbuf || !ds->ybuf)
		return gpo__err(-ENOMEM, "%.200s: out of memory for %" PRIu64
				" bytes of samples", ds->source, bytes);

	total = 0;
	for (i = 0; i < ld->nparts; i++) {
		struct part_src *p = &ld->part[i];

		/* a safetensors file: both tensors from one descriptor */
		if (!p->xs->gz && lseek(p->xs->fd, (off_t)p->xoff, SEEK_SET) < 0)
			return sys_err(errno, p->xs->path);
		ret = load_x(p->xs, p->xel, p->n * p->features,
			     ds->xbuf + total * p->features, p->xwhat);
		if (!ret && p->xs != p->ys)
			ret = src_finish(p->xs);
		if (!ret && !p->ys->gz &&
		    lseek(p->ys->fd, (off_t)p->yoff, SEEK_SET) < 0)
			ret = sys_err(errno, p->ys->path);
		if (!ret)
			ret = load_y(p->ys, p->yel, p->n, ds->ybuf + total, &max,
				     p->ywhat);
		if (!ret && p->xs != p->ys)
			ret = src_finish(p->ys);
		if (ret)
			return ret;
		total += p->n;
	}

	ds->features = (uint32_t)ld->part[0].features;
	ds->classes = max + 1;
	ds->host_bytes = bytes;
	ds->train.x = ds->xbuf;
	ds->train.y = ds->ybuf;
	if (ld->nparts == 2) {
		ds->train.n = ld->part[0].n;
		ds->eval.n = ld->part[1].n;
	} else {
		/* floor: below 10 samples nothing is held out */
		ds->eval.n = ld->part[0].n / 10;
		ds->train.n = ld->part[0].n - ds->eval.n;
		ds->eval_held_out = 1;
	}
	ds->eval.x = ds->xbuf + ds->train.n * ds->features;
	ds->eval.y = ds->ybuf + ds->train.n;
	return 0;
}

/* ---- IDX ---------------------------------------------------------------- */

/*
 * IDX (LeCun's MNIST format): 0, 0, a type byte (0x08 u8, 0x0D f32), the
 * number of dimensions, then each dimension as a big-endian u32, then the
 * data, big-endian, row-major.
 */
struct idx {
	struct src s;
	int ndim;
	enum elem el;
	uint64_t n;			/* the first dimension */
	uint64_t per;			/* the product of the others */
};

static int idx_open(struct idx *f, const char *path, int labels)
{
	unsigned char h[4], d[4 * IDX_MAX_DIMS];
	uint64_t hdr;
	int i, ret;

	ret = src_open(&f->s, path);
	if (ret)
		return ret;
	ret = src_read(&f->s, h, 4, "IDX header");
	if (ret)
		goto out_close;
	if (h[0] || h[1] || (h[2] != 0x08 && h[2] != 0x0d) || !h[3] ||
	    h[3] > IDX_MAX_DIMS) {
		ret = gpo__err(-EINVAL, "%.200s: bad IDX magic %02x%02x%02x%02x",
			       path, h[0], h[1], h[2], h[3]);
		goto out_close;
	}
	if (labels && (h[2] != 0x08 || h[3] != 1)) {
		ret = gpo__err(-EINVAL, "%.200s: IDX magic %02x%02x%02x%02x: labels"
			       " must be u8 with one dimension (00000801)", path,
			       h[0], h[1], h[2], h[3]);
		goto out_close;
	}
	if (!labels && h[3] < 2) {
		ret = gpo__err(-EINVAL, "%.200s: IDX images need at least 2"
			       " dimensions, the file has 1", path);
		goto out_close;
	}
	f->ndim = h[3];
	f->el = h[2] == 0x08 ? EL_U8 : EL_F32BE;
	ret = src_read(&f->s, d, 4 * f->ndim, "IDX header");
	if (ret)
		goto out_close;
	f->per = 1;
	for (i = 0; i < f->ndim; i++) {
		uint64_t v = (uint64_t)d[4 * i] << 24 | (uint64_t)d[4 * i + 1] << 16 |
			     (uint64_t)d[4 * i + 2] << 8 | d[4 * i + 3];

		if (!v) {
			ret = gpo__err(-EINVAL, "%.200s: IDX dimension %d is 0", path, i);
			goto out_close;
		}
		if (!i) {
			f->n = v;
			continue;
		}
		f->per *= v;
		if (f->per > UINT32_MAX) {
			ret = gpo__err(-EINVAL, "%.200s: more than %u values per sample",
				       path, UINT32_MAX);
			goto out_close;
		}
	}
	hdr = 4 + 4 * (uint64_t)f->ndim;
	if (f->n > UINT64_MAX / 8 / f->per) {
		ret = gpo__err(-EINVAL, "%.200s: the dimensions overflow", path);
		goto out_close;
	}
	ret = src_fits(&f->s, hdr, f->n * f->per * elem_size[f->el]);
	if (ret)
		goto out_close;
	return 0;
out_close:
	src_close(&f->s);
	return ret;
}

/* An images file and its labels: the counts must agree. */
static int idx_pair(struct idx f[2], const char *images, const char *labels,
		    struct part_src *p)
{
	int ret;

	ret = idx_open(&f[0], images, 0);
	if (ret)
		return ret;
	ret = idx_open(&f[1], labels, 1);
	if (ret)
		return ret;
	if (f[0].n != f[1].n)
		return gpo__err(-EINVAL, "%.200s holds %" PRIu64 " images but %.200s %"
				PRIu64 " labels", images, f[0].n, labels, f[1].n);
	p->xs = &f[0].s;
	p->ys = &f[1].s;
	p->xel = f[0].el;
	p->yel = EL_U8;
	p->n = f[0].n;
	p->features = f[0].per;
	p->xwhat = "images";
	p->ywhat = "labels";
	/* sequential reads go on from the header; no seek */
	p->xoff = 4 + 4 * (uint64_t)f[0].ndim;
	p->yoff = 8;
	return 0;
}

static int open_idx(struct gpo_dataset *ds, const char *images,
		    const char *labels, const char *t_images,
		    const char *t_labels, uint64_t max_bytes)
{
	struct idx f[4];
	struct load ld = { .max_bytes = max_bytes };
	int i, ret;

	for (i = 0; i < 4; i++)
		f[i].s.fd = -1;
	ds->source = join(images, labels);
	ds->eval_source = t_images ? join(t_images, t_labels) :
		      join(images, labels);
	if (!ds->source || !ds->eval_source) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_close;
	}
	ret = idx_pair(f, images, labels, &ld.part[0]);
	if (ret)
		goto out_close;
	ld.nparts = 1;
	if (t_images) {
		ret = idx_pair(f + 2, t_images, t_labels, &ld.part[1]);
		if (ret)
			goto out_close;
		ld.nparts = 2;
		if (ld.part[1].features != ld.part[0].features) {
			ret = gpo__err(-EINVAL, "%.200s: %" PRIu64
				       " values per image, but %.200s has %" PRIu64,
				       t_images, ld.part[1].features, images,
				       ld.part[0].features);
			goto out_close;
		}
	}
	ret = load_all(ds, &ld);
out_close:
	for (i = 0; i < 4; i++)
		if (f[i].s.fd >= 0)
			src_close(&f[i].s);
	return ret;
}

/* @dir/@name, or @dir/@name.gz; NULL (no error) if neither exists */
static int find_file(const char *dir, const char *name, char **out)
{
	static const char *const suffix[] = { "", ".gz" };
	struct stat st;
	size_t i;

	*out = NULL;
	for (i = 0; i < ARRAY_SIZE(suffix); i++) {
		char *p;

		if (asprintf(&p, "%s/%s%s", dir, name, suffix[i]) < 0)
			return gpo__err(-ENOMEM, "out of memory");
		if (!lstat(p, &st) || errno != ENOENT) {
			*out = p;
			return 0;
		}
		free(p);
	}
	return 0;
}

static int open_dir(struct gpo_dataset *ds, const char *dir,
		    uint64_t max_bytes)
{
	static const char *const names[4] = {
		"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
		"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
	};
	char *p[4] = { NULL };
	int i, ret = 0;

	for (i = 0; i < 4 && !ret; i++)
		ret = find_file(dir, names[i], &p[i]);
	if (ret)
		goto out_free;
	for (i = 0; i < 2; i++) {
		if (!p[i]) {
			ret = gpo__err(-ENOENT, "%.200s: no %s or %s.gz", dir,
				       names[i], names[i]);
			goto out_free;
		}
	}
	if (!p[2] != !p[3]) {
		ret = gpo__err(-EINVAL, "%.200s: %s without %s", dir,
			       names[p[2] ? 2 : 3], names[p[2] ? 3 : 2]);
		goto out_free;
	}
	ret = open_idx(ds, p[0], p[1], p[2], p[3], max_bytes);
out_free:
	for (i = 0; i < 4; i++)
		free(p[i]);
	return ret;
}

/* ---- safetensors -------------------------------------------------------- */

static const struct ckpt_tensor *st_find(const struct ckpt *ck,
					 const char *name)
{
	int i;

	for (i = 0; i < ck->ntensors; i++)
		if (!strcmp(ck->t[i].name, name))
			return &ck->t[i];
	return NULL;
}

/* x [N, ...] F32 or U8, y [N] U8, I32 or I64 into @p */
static int st_part(struct src *s, const struct ckpt *ck,
		   const struct ckpt_tensor *x, const struct ckpt_tensor *y,
		   struct part_src *p)
{
	uint64_t per = 1;
	int i;

	if (x->dtype != DT_F32 && x->dtype != DT_U8)
		return gpo__err(-EINVAL, "%.200s: tensor '%s' is %s; samples must"
				" be F32 or U8", s->path, x->name,
				gpo__ckpt_dtype_names[x->dtype]);
	if (y->dtype != DT_U8 && y->dtype != DT_I32 && y->dtype != DT_I64)
		return gpo__err(-EINVAL, "%.200s: tensor '%s' is %s; labels must"
				" be U8, I32 or I64", s->path, y->name,
				gpo__ckpt_dtype_names[y->dtype]);
	if (x->ndim < 1 || !x->shape[0])
		return gpo__err(-EINVAL, "%.200s: tensor '%s' holds no samples"
				" (its shape must be [N, ...], N > 0)", s->path,
				x->name);
	for (i = 1; i < x->ndim; i++)
		per *= x->shape[i];	/* the span check bounds the product */
	if (!per || per > UINT32_MAX)
		return gpo__err(-EINVAL, "%.200s: tensor '%s': %" PRIu64
				" values per sample", s->path, x->name, per);
	if (y->ndim != 1 || y->shape[0] != x->shape[0])
		return gpo__err(-EINVAL, "%.200s: tensor '%s' must have shape [%"
				PRIu64 "], one label per sample of '%s'", s->path,
				y->name, x->shape[0], x->name);
	p->xs = p->ys = s;
	p->xel = x->dtype == DT_U8 ? EL_U8 : EL_F32LE;
	p->yel = y->dtype == DT_U8 ? EL_U8 : y->dtype == DT_I32 ? EL_I32LE :
		 EL_I64LE;
	p->xoff = ck->data_start + x->begin;
	p->yoff = ck->data_start + y->begin;
	p->n = x->shape[0];
	p->features = per;
	p->xwhat = x->name;
	p->ywhat = y->name;
	return 0;
}

/* the library's strict safetensors parser; its errors become -EINVAL */
static int st_header(struct src *s, struct ckpt **out)
{
	unsigned char le8[8];
	struct ckpt *ck;
	json_t *root;
	char *json;
	uint64_t hlen;
	int ret;

	if (s->size < 8)
		return gpo__err(-EINVAL, "%.200s: %" PRIu64 " bytes: not a"
				" safetensors file (nor an IDX pair)", s->path,
				s->size);
	ret = src_read(s, le8, 8, "safetensors header");
	if (ret)
		return ret;
	ret = gpo__ckpt_parse_len(le8, s->size, &hlen);
	if (ret)
		return gpo__err_prefix(-EINVAL, "%.200s: not a safetensors file",
				       s->path);
	json = malloc(hlen);
	ck = calloc(1, sizeof(*ck));
	if (!json || !ck) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	ret = src_read(s, json, hlen, "safetensors header");
	if (ret)
		goto out_free;
	ck->file_size = s->size;
	ck->header_len = hlen;
	ck->data_start = 8 + hlen;
	ck->data_len = s->size - ck->data_start;
	ret = gpo__st_parse(ck, json, hlen, &root);
	if (ret) {
		ret = gpo__err_prefix(ret == -ENOMEM ? ret : -EINVAL, "%.200s",
				      s->path);
		goto out_free;
	}
	json_decref(root);
	free(json);
	*out = ck;
	return 0;
out_free:
	gpo__ckpt_free(ck);
	free(json);
	return ret;
}

static int open_safetensors(struct gpo_dataset *ds, const char *path,
			    uint64_t max_bytes)
{
	const struct ckpt_tensor *x, *y, *xt, *yt;
	struct load ld = { .max_bytes = max_bytes };
	struct ckpt *ck = NULL;
	unsigned char h[4];
	struct src s;
	int ret;

	ds->source = strdup(path);
	ds->eval_source = strdup(path);
	if (!ds->source || !ds->eval_source)
		return gpo__err(-ENOMEM, "out of memory");
	ret = src_open(&s, path);
	if (ret)
		return ret;
	if (s.gz) {
		ret = gpo__err(-EINVAL, "%.200s: a gzip file alone: name an IDX"
			       " pair as IMAGES,LABELS, or their directory", path);
		goto out_close;
	}
	if (pread(s.fd, h, 4, 0) == 4 && !h[0] && !h[1] &&
	    (h[2] == 0x08 || h[2] == 0x0d)) {
		ret = gpo__err(-EINVAL, "%.200s: an IDX file alone: name the pair"
			       " as IMAGES,LABELS, or their directory", path);
		goto out_close;
	}
	ret = st_header(&s, &ck);
	if (ret)
		goto out_close;
	x = st_find(ck, "x");
	y = st_find(ck, "y");
	xt = st_find(ck, "x_test");
	yt = st_find(ck, "y_test");
	if (!x || !y) {
		ret = gpo__err(-EINVAL, "%.200s: no tensor '%s' (a dataset holds"
			       " x and y)", path, x ? "y" : "x");
		goto out_free;
	}
	if (!xt != !yt) {
		ret = gpo__err(-EINVAL, "%.200s: '%s' without '%s'", path,
			       xt ? "x_test" : "y_test", xt ? "y_test" : "x_test");
		goto out_free;
	}
	ret = st_part(&s, ck, x, y, &ld.part[0]);
	if (ret)
		goto out_free;
	ld.nparts = 1;
	if (xt) {
		ret = st_part(&s, ck, xt, yt, &ld.part[1]);
		if (ret)
			goto out_free;
		ld.nparts = 2;
		if (ld.part[1].features != ld.part[0].features) {
			ret = gpo__err(-EINVAL, "%.200s: x_test has %" PRIu64
				       " values per sample, x %" PRIu64, path,
				       ld.part[1].features, ld.part[0].features);
			goto out_free;
		}
	}
	ret = load_all(ds, &ld);
out_free:
	gpo__ckpt_free(ck);
out_close:
	src_close(&s);
	return ret;
}

/* ---- bytes -------------------------------------------------------------- */

/*
 * Any regular file, as it is (a gzip file's bytes too: a language model
 * may well be trained on them), its last floor(N / 10) bytes held out.
 * O_NONBLOCK as src_open(): a FIFO is refused, not waited on.
 */
static int open_bytes(struct gpo_dataset *ds, const char *path,
		      uint64_t max_bytes)
{
	struct stat st;
	uint64_t size;
	ssize_t n;
	int fd, ret;

	ds->source = strdup(path);
	ds->eval_source = strdup(path);
	if (!ds->source || !ds->eval_source)
		return gpo__err(-ENOMEM, "out of memory");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return sys_err(errno, path);
	if (fstat(fd, &st)) {
		ret = sys_err(errno, path);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = gpo__err(-EINVAL, "%.200s: not a regular file", path);
		goto out_close;
	}
	size = (uint64_t)st.st_size;
	if (!size) {
		ret = gpo__err(-EINVAL, "%.200s: an empty file: no bytes to train on",
			       path);
		goto out_close;
	}
	if (max_bytes && size > max_bytes) {
		ret = gpo__err(-EFBIG, "%.200s: %" PRIu64 " bytes, over the limit of %"
			       PRIu64, path, size, max_bytes);
		goto out_close;
	}
	if (size > SIZE_MAX / 2) {
		ret = gpo__err(-ENOMEM, "%.200s: %" PRIu64
			       " bytes do not fit in memory", path, size);
		goto out_close;
	}
	ds->bytes = malloc((size_t)size);
	if (!ds->bytes) {
		ret = gpo__err(-ENOMEM, "%.200s: out of memory for %" PRIu64
			       " bytes", path, size);
		goto out_close;
	}
	n = read_full(fd, ds->bytes, (size_t)size);
	if (n < 0) {
		ret = sys_err((int)-n, path);
		goto out_close;
	}
	if ((uint64_t)n != size) {
		ret = gpo__err(-EINVAL, "%.200s: ends after %zd of its %" PRIu64
			       " bytes (it changed while read)", path, n, size);
		goto out_close;
	}
	ds->is_bytes = 1;
	ds->features = 1;
	ds->classes = 256;
	ds->host_bytes = size;
	ds->eval.n = size / 10;
	ds->train.n = size - ds->eval.n;
	ds->eval_held_out = 1;
	ret = 0;
out_close:
	close(fd);
	return ret;
}

/* ---- the interface ------------------------------------------------------ */

void gpo_dataset_free(struct gpo_dataset *ds)
{
	if (!ds)
		return;
	free(ds->xbuf);
	free(ds->ybuf);
	free(ds->bytes);
	free(ds->source);
	free(ds->eval_source);
	free(ds);
}

/* "IMAGES,LABELS": split at the one comma */
static int open_pair(struct gpo_dataset *ds, const char *path,
		     uint64_t max_bytes)
{
	const char *comma = strchr(path, ',');
	char *images;
	int ret;

	if (strchr(comma + 1, ',') || comma == path || !comma[1])
		return gpo__err(-EINVAL, "'%.200s': name a dataset as a directory,"
				" IMAGES,LABELS or a safetensors file", path);
	images = strndup(path, (size_t)(comma - path));
	if (!images)
		return gpo__err(-ENOMEM, "out of memory");
	ret = open_idx(ds, images, comma + 1, NULL, NULL, max_bytes);
	free(images);
	return ret;
}

int gpo_dataset_open_limited(const char *path, unsigned int flags,
			     uint64_t max_bytes, struct gpo_dataset **out)
{
	struct gpo_dataset *ds;
	int missing = 0, isdir = 0;
	struct stat st;
	int ret;

	if (!path || !*path || !out)
		return gpo__err(-EINVAL, "gpo_dataset_open: no path or no out");
	if (flags & ~GPO_DATASET_BYTES)
		return gpo__err(-EINVAL, "gpo_dataset_open: unknown flags %#x",
				flags);
	ds = calloc(1, sizeof(*ds));
	if (!ds)
		return gpo__err(-ENOMEM, "out of memory");
	/* a name that exists is that; only a missing one may be a pair */
	if (stat(path, &st))
		missing = errno == ENOENT;
	else if (S_ISDIR(st.st_mode))
		isdir = 1;
	if (flags & GPO_DATASET_BYTES)
		ret = open_bytes(ds, path, max_bytes);
	else if (isdir)
		ret = open_dir(ds, path, max_bytes);
	else if (missing && strchr(path, ','))
		ret = open_pair(ds, path, max_bytes);
	else
		ret = open_safetensors(ds, path, max_bytes);
	if (ret) {
		gpo_dataset_free(ds);
		return ret;
	}
	gpo__err_clear();
	*out = ds;
	return 0;
}

int gpo_dataset_open(const char *path, unsigned int flags,
		     struct gpo_dataset **out)
{
	return gpo_dataset_open_limited(path, flags, 0, out);
}

int gpo_dataset_info(const struct gpo_dataset *ds,
		     struct gpo_dataset_info *info)
{
	if (!ds || !info)
		return gpo__err(-EINVAL, "gpo_dataset_info: NULL argument");
	memset(info, 0, sizeof(*info));
	info->train_samples = ds->train.n;
	info->eval_samples = ds->eval.n;
	info->features = ds->features;
	info->classes = ds->classes;
	info->eval_held_out = ds->eval_held_out;
	info->source = ds->source;
	info->eval_source = ds->eval_source;
	info->host_bytes = ds->host_bytes;
	info->bytes = ds->is_bytes;
	return 0;
}

int gpo_dataset_bytes(const struct gpo_dataset *ds, int part,
		      const uint8_t **bytes, uint64_t *n)
{
	if (!ds)
		return gpo__err(-EINVAL, "gpo_dataset_bytes: NULL dataset");
	if (part != GPO_DATASET_TRAIN && part != GPO_DATASET_EVAL)
		return gpo__err(-EINVAL, "gpo_dataset_bytes: part %d (GPO_DATASET_TRAIN or GPO_DATASET_EVAL)",
				part);
	if (!ds->is_bytes)
		return gpo__err(-EINVAL, "gpo_dataset_bytes: %.200s is not a bytes dataset (GPO_DATASET_BYTES)",
				ds->source);
	if (bytes)
		*bytes = part == GPO_DATASET_TRAIN ? ds->bytes :
						     ds->bytes + ds->train.n;
	if (n)
		*n = part == GPO_DATASET_TRAIN ? ds->train.n : ds->eval.n;
	return 0;
}

int gpo_dataset_samples(const struct gpo_dataset *ds, int part,
			const float **x, const int32_t **y, uint64_t *n)
{
	const struct dataset_part *p;

	if (!ds)
		return gpo__err(-EINVAL, "gpo_dataset_samples: NULL dataset");
	if (part != GPO_DATASET_TRAIN && part != GPO_DATASET_EVAL)
		return gpo__err(-EINVAL, "gpo_dataset_samples: part %d (GPO_DATASET_TRAIN or GPO_DATASET_EVAL)",
				part);
	if (ds->is_bytes)
		return gpo__err(-EINVAL, "gpo_dataset_samples: %.200s is a bytes dataset: gpo_dataset_bytes()",
				ds->source);
	p = part == GPO_DATASET_TRAIN ? &ds->train : &ds->eval;
	if (x)
		*x = p->x;
	if (y)
		*y = p->y;
	if (n)
		*n = p->n;
	return 0;
}

int gpo__sample_order(uint64_t n, uint64_t seed, uint64_t epoch,
		      int shuffle, uint32_t *order, const char *what)
{
	uint32_t i;

	if (!order)
		return gpo__err(-EINVAL, "dataset order: NULL argument");
	if (n > UINT32_MAX)
		return gpo__err(-EOVERFLOW, "%.200s: %" PRIu64
				" samples: more than a shuffle can order",
				what, n);
	if (shuffle) {
		gpo__rng_permutation(seed, GPO_RNG_STREAM(GPO_RNG_SHUFFLE, epoch),
				     order, (uint32_t)n);
		return 0;
	}
	for (i = 0; i < n; i++)
		order[i] = i;
	return 0;
}

int gpo__dataset_order(const struct gpo_dataset *ds, uint64_t seed,
		       uint64_t epoch, int shuffle, uint32_t *order)
{
	if (!ds)
		return gpo__err(-EINVAL, "dataset order: NULL argument");
	return gpo__sample_order(ds->train.n, seed, epoch, shuffle, order,
				 ds->source);
}

uint32_t gpo__window_phase(uint64_t seed, uint64_t epoch, uint32_t max)
{
	uint64_t stream = GPO_RNG_STREAM(GPO_RNG_SHUFFLE,
					 epoch | GPO_RNG_PHASE_BIT);

	return max ? (uint32_t)(gpo__rng_u64(seed, stream, 0) %
				((uint64_t)max + 1)) : 0;
}
