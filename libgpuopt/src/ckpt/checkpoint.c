// SPDX-License-Identifier: MIT
/*
 * checkpoint.c - save and restore an optimizer's state as a safetensors
 * file (layout in ckpt_i.h), and the inspection API.
 *
 * Save: the header is laid out first with placeholder checksums of the
 * final length; the data then comes down from the device chunk by chunk
 * into the I/O engine's buffers while earlier chunks are being written,
 * hashed on the way; the real header goes in last. All of it into an
 * unnamed temporary file (O_TMPFILE; a named one where the filesystem
 * has none), then fsync, link to a temporary name, rename over the target,
 * fsync of the directory.
 *
 * Restore: the header is validated as a whole and matched to the optimizer;
 * then the data streams into freshly allocated device buffers, each tensor
 * checked against its checksum; only when all of it checked out are the
 * new buffers swapped in. The optimizer is never half restored.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
/* header-only: no libxxhash at run time on machines that lack it */
#define XXH_INLINE_ALL
#include <xxhash.h>
#include "ckpt/ckpt_i.h"
#include "core/quant_i.h"
#include "abi/mem.h"

#define PLACEHOLDER_SUM	"0000000000000000"
#define SAVE_FLAGS	GPO_CKPT_BUFFERED
#define READ_FLAGS	(GPO_CKPT_BUFFERED | GPO_CKPT_FOREIGN)

static uint64_t round_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) / a * a;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Put "@path: " in front of the message the failing call left. */
static int path_err(int ret, const char *path)
{
	return gpo__err_prefix(ret, "%.200s", path);
}

static int sys_err(int err, const char *what, const char *path)
{
	return gpo__err(-err, "%.200s: %s: %s", path, what, strerror(err));
}

/* ---- the header a save writes -------------------------------------------- */

/* One file tensor of a save: a tensor of one flat buffer. */
struct save_entry {
	int tensor;			/* or CKPT_TENSOR_ABSMAX */
	int slot;			/* CKPT_SLOT_PARAM or a slot_id */
	uint64_t bytes;
	uint64_t sum;
};

/* One contiguous device range: a group's part of one flat buffer. */
struct save_seg {
	const struct dev_buf *buf;
	uint64_t off;			/* bytes */
	uint64_t len;
};

struct save_plan {
	struct save_entry *e;
	int ne;
	struct save_seg *seg;
	int nseg;
	uint64_t data_len;
};

static const struct dev_buf *slot_buf(const struct gpo_optim *opt, int slot)
{
	if (slot == CKPT_SLOT_MASTER)
		return &opt->master;
	return slot == CKPT_SLOT_PARAM ? &opt->param : &opt->slot[slot];
}

static enum gpo_dtype slot_dtype(const struct gpo_optim *opt, int slot)
{
	if (slot == CKPT_SLOT_MASTER)
		return GPO_F32;
	return slot == CKPT_SLOT_PARAM ? opt->param_dtype : opt->slot_dtype[slot];
}

/* the row of @slot in a restore's tables: param, the slots, master */
static int slot_row(int slot)
{
	return slot == CKPT_SLOT_MASTER ? SL_COUNT + 1 : slot + 1;
}

static const char *slot_label(int slot)
{
	if (slot == CKPT_SLOT_MASTER)
		return "master";
	return slot == CKPT_SLOT_PARAM ? "param" : gpo__optim_slot_names[slot];
}

/* File order: param, then each slot in use; by group, then flat order. */
static void plan_buffer(const struct gpo_optim *opt, int slot,
			struct save_plan *p)
{
	uint64_t esize = gpo_dtype_size(slot_dtype(opt, slot));
	int g, t;

	for (g = 0; g < opt->ngroups; g++) {
		const struct optim_group *grp = &opt->groups[g];

		if (!grp->numel)
			continue;
		p->seg[p->nseg++] = (struct save_seg){ slot_buf(opt, slot),
						       grp->start * esize,
						       grp->numel * esize };
		for (t = 0; t < opt->ntensors; t++) {
			if (opt->tensors[t].group != g)
				continue;
			p->e[p->ne++] = (struct save_entry){
				t, slot, opt->tensors[t].numel * esize, 0 };
			p->data_len += opt->tensors[t].numel * esize;
		}
	}
}

/* does slot @s keep blockwise 8-bit state, with absmax blocks to save? */
static int u8_absmax_saved(const struct gpo_optim *opt, int s)
{
	return opt->slot[s].mem && opt->slot_dtype[s] == GPO_U8 &&
	       opt->absmax[s].mem;
}

/* After the slots: "absmax/<slot>" of each u8 slot, all its blocks. */
static void plan_absmax(const struct gpo_optim *opt, int s,
			struct save_plan *p)
{
	uint64_t bytes = gpo__optim_u8_blocks(opt) * 4;

	p->seg[p->nseg++] = (struct save_seg){ &opt->absmax[s], 0, bytes };
	p->e[p->ne++] = (struct save_entry){ CKPT_TENSOR_ABSMAX, s, bytes, 0 };
	p->data_len += bytes;
}

static int plan_save(const struct gpo_optim *opt, struct save_plan *p)
{
	int s, nbuf = 2;

	for (s = 0; s < SL_COUNT; s++)
		nbuf += opt->slot[s].mem != NULL;
	memset(p, 0, sizeof(*p));
	p->e = calloc((size_t)nbuf * opt->ntensors + SL_COUNT, sizeof(*p->e));
	p->seg = calloc((size_t)nbuf * opt->ngroups + SL_COUNT,
			sizeof(*p->seg));
	if (!p->e || !p->seg)
		return gpo__err(-ENOMEM, "out of memory");
	plan_buffer(opt, CKPT_SLOT_PARAM, p);
	if (opt->master.mem)
		plan_buffer(opt, CKPT_SLOT_MASTER, p);
	for (s = 0; s < SL_COUNT; s++)
		if (opt->slot[s].mem)
			plan_buffer(opt, s, p);
	for (s = 0; s < SL_COUNT; s++)
		if (u8_absmax_saved(opt, s))
			plan_absmax(opt, s, p);
	return 0;
}

static void free_plan(struct save_plan *p)
{
	free(p->e);
	free(p->seg);
}

static void entry_name(const struct gpo_optim *opt,
		       const struct save_entry *e, char *buf, size_t len)
{
	const char *name;

	if (e->tensor == CKPT_TENSOR_ABSMAX) {
		snprintf(buf, len, "absmax/%s", gpo__optim_slot_names[e->slot]);
		return;
	}
	name = opt->tensors[e->tensor].name;
	if (e->slot == CKPT_SLOT_PARAM)
		snprintf(buf, len, "param/%s", name);
	else if (e->slot == CKPT_SLOT_MASTER)
		snprintf(buf, len, "master/%s", name);
	else
		snprintf(buf, len, "state/%s/%s", name,
			 gpo__optim_slot_names[e->slot]);
}

/*
 * The hyperparameters as a JSON object of numbers: the keys are those
 * gpo__hparams_describe() lists, the values the doubles themselves (never
 * read back from its text, which is for people), integers for the flags.
 */
static json_t *hparams_json(const struct gpo_optim *opt,
			    const struct hparams *hp)
{
	char text[4096], *line, *save, *eq;
	json_t *o = json_object(), *num;
	double v;

	if (!o || gpo__hparams_describe(opt->kind, hp, text, sizeof(text)) >=
		  (int)sizeof(text))
		goto out_put;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		eq = strchr(line, '=');
		if (!eq)
			goto out_put;
		*eq = '\0';
		if (gpo__hparams_get(opt->kind, hp, line, &v) || !isfinite(v))
			goto out_put;
		/* flags print as 0 or 1, numbers with a point or exponent */
		num = strpbrk(eq + 1, ".,eEni") ? json_real(v) :
						  json_integer((json_int_t)v);
		if (json_object_set_new(o, line, num))
			goto out_put;
	}
	return o;
out_put:
	json_decref(o);
	return NULL;
}

static json_t *group_json(const struct gpo_optim *opt, int g)
{
	json_t *o = json_object(), *names = json_array();
	json_t *hp = hparams_json(opt, &opt->groups[g].hp);
	int t, bad = !o || !names || !hp;

	for (t = 0; t < opt->ntensors && !bad; t++)
		if (opt->tensors[t].group == g)
			bad = json_array_append_new(names,
					json_string(opt->tensors[t].name));
	if (!bad)
		bad = json_object_set_new(o, "tensors", names) |
		      json_object_set_new(o, "momentum_started",
			json_boolean(opt->groups[g].momentum_started)) |
		      json_object_set_new(o, "hparams", hp);
	else {
		json_decref(names);
		json_decref(hp);
	}
	if (bad) {
		json_decref(o);
		return NULL;
	}
	return o;
}

#define DUMP_FLAGS \
	(JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* Set @key of @meta to the JSON text of @j (consumed). */
static int set_json_text(json_t *meta, const char *key, json_t *j)
{
	char *text = j ? json_dumps(j, DUMP_FLAGS) : NULL;
	int ret;

	json_decref(j);
	if (!text)
		return -ENOMEM;
	ret = json_object_set_new(meta, key, json_string(text)) ? -ENOMEM : 0;
	free(text);
	return ret;
}

static int set_str(json_t *meta, const char *key, const char *value)
{
	return json_object_set_new(meta, key, json_string(value)) ? -ENOMEM : 0;
}

static int set_u64(json_t *meta, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, v);
	return set_str(meta, key, buf);
}

static json_t *groups_json(const struct gpo_optim *opt)
{
	json_t *a = json_array();
	int g;

	for (g = 0; a && g < opt->ngroups; g++) {
		if (json_array_append_new(a, group_json(opt, g))) {
			json_decref(a);
			return NULL;
		}
	}
	return a;
}

static json_t *sums_json(const struct gpo_optim *opt,
			 const struct save_plan *p, int final)
{
	json_t *o = json_object();
	char name[128], hex[17];
	int i;

	for (i = 0; o && i < p->ne; i++) {
		entry_name(opt, &p->e[i], name, sizeof(name));
		snprintf(hex, sizeof(hex), "%016" PRIx64, p->e[i].sum);
		if (json_object_set_new(o, name, json_string(final ? hex :
							  PLACEHOLDER_SUM))) {
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/* The schedule's line, or NULL when there is none or it cannot save. */
static char *sched_line(const struct gpo_optim *opt)
{
	char *buf;
	int n;

	if (!opt->sched)
		return NULL;
	n = gpo_sched_save(opt->sched, NULL, 0);
	if (n < 0 || !(buf = malloc((size_t)n + 1)))
		return NULL;
	if (gpo_sched_save(opt->sched, buf, (size_t)n + 1) != n) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int build_meta(const struct gpo_optim *opt, const struct save_plan *p,
		      const char *sched, int final, json_t *meta)
{
	char writer[64];
	int ret;

	snprintf(writer, sizeof(writer), "libgpuopt %s", gpo_version());
	ret = set_str(meta, "format", "pt");
	ret = ret ? ret : set_str(meta, CKPT_META_VERSION, CKPT_FORMAT_VERSION);
	ret = ret ? ret : set_str(meta, CKPT_META_WRITER, writer);
	ret = ret ? ret : set_str(meta, CKPT_META_KIND,
				  gpo_optim_kind_name(opt->kind));
	ret = ret ? ret : set_json_text(meta, CKPT_META_GROUPS,
					groups_json(opt));
	ret = ret ? ret : set_u64(meta, CKPT_META_STEP, opt->step);
	ret = ret ? ret : set_u64(meta, CKPT_META_SKIPPED, opt->skipped);
	if (!ret && sched)
		ret = set_str(meta, CKPT_META_SCHED, sched);
	ret = ret ? ret : gpo__ckpt_meta_precision(opt, meta);
	ret = ret ? ret : set_json_text(meta, CKPT_META_XXH64,
					sums_json(opt, p, final));
	return ret;
}

/* @t's entry; NULL @t: an absmax tensor of @end - @begin bytes, F32 */
static json_t *tensor_json(const struct optim_tensor *t, enum gpo_dtype dt,
			   uint64_t begin, uint64_t end)
{
	json_t *o = json_object(), *shape = json_array(), *offs = json_array();
	int i, bad = !o || !shape || !offs;

	if (!t && !bad)
		bad = json_array_append_new(shape,
				json_integer((json_int_t)((end - begin) / 4)));
	for (i = 0; t && i < t->ndim && !bad; i++)
		bad = json_array_append_new(shape,
				json_integer((json_int_t)t->shape[i]));
	bad = bad ||
	      json_array_append_new(offs, json_integer((json_int_t)begin)) ||
	      json_array_append_new(offs, json_integer((json_int_t)end));
	if (bad) {
		json_decref(o);
		json_decref(shape);
		json_decref(offs);
		return NULL;
	}
	json_object_set_new(o, "dtype", json_string(
		gpo__ckpt_dtype_names[gpo__ckpt_file_dtype[dt]]));
	json_object_set_new(o, "shape", shape);
	json_object_set_new(o, "data_offsets", offs);
	return o;
}

static int set_header_sum(json_t *root, json_t *meta)
{
	char hex[17];
	uint64_t sum;

	if (gpo__ckpt_header_sum(root, &sum))
		return -ENOMEM;
	snprintf(hex, sizeof(hex), "%016" PRIx64, sum);
	return set_str(meta, CKPT_META_HDR_XXH64, hex);
}

/* The JSON header text: __metadata__ first, then tensors in data order. */
static char *build_header(const struct gpo_optim *opt,
			  const struct save_plan *p, const char *sched,
			  int final)
{
	json_t *root = json_object(), *meta = json_object();
	char name[128], *text = NULL;
	uint64_t pos = 0;
	int i, ret;

	if (!root || !meta || json_object_set(root, "__metadata__", meta))
		goto out_put;
	ret = build_meta(opt, p, sched, final, meta);
	for (i = 0; i < p->ne && !ret; i++) {
		entry_name(opt, &p->e[i], name, sizeof(name));
		int absmax = p->e[i].tensor == CKPT_TENSOR_ABSMAX;

		ret = json_object_set_new(root, name,
			tensor_json(absmax ? NULL :
					     &opt->tensors[p->e[i].tensor],
				    absmax ? GPO_F32 :
					     slot_dtype(opt, p->e[i].slot),
				    pos, pos + p->e[i].bytes));
		pos += p->e[i].bytes;
	}
	if (!ret)
		ret = set_header_sum(root, meta);
	if (!ret)
		text = json_dumps(root, DUMP_FLAGS);
out_put:
	json_decref(meta);
	json_decref(root);
	return text;
}

/* The prefix: u64 length, the header, spaces up to @data_start. */
static void put_prefix(char *dst, const char *json, uint64_t data_start)
{
	uint64_t n = data_start - 8;
	size_t len = strlen(json);
	int i;

	for (i = 0; i < 8; i++)
		dst[i] = (char)(n >> (8 * i));
	memcpy(dst + 8, json, len);
	memset(dst + 8 + len, ' ', data_start - 8 - len);
}

/* ---- the temporary file -------------------------------------------------- */

struct target {
	const char *path;
	int dirfd;
	char base[256];
	int fd;
	char tmpname[300];	/* the temporary's name once it has one */
	int direct;
	size_t align, mem_align;
};

static int split_path(struct target *tg, const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	char dir[4096];

	if (!*base || !strcmp(base, ".") || !strcmp(base, "..") ||
	    strlen(base) >= sizeof(tg->base))
		return gpo__err(-EINVAL, "%.200s: not a file name", path);
	snprintf(tg->base, sizeof(tg->base), "%s", base);
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	tg->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (tg->dirfd < 0)
		return sys_err(errno, "directory", path);
	return 0;
}

/* ".NAME.tmp.PID.RANDOM"; the caller retries on EEXIST */
static void temp_name(struct target *tg)
{
	static unsigned int seq;
	unsigned int x;

	x = (unsigned int)(gpo__realtime_ns() % 1000000000u) ^
	    __atomic_add_fetch(&seq, 0x9e3779b9u, __ATOMIC_RELAXED);
	snprintf(tg->tmpname, sizeof(tg->tmpname), ".%.200s.tmp.%d.%08x",
		 tg->base, (int)getpid(), x);
}

static int open_named_temp(struct target *tg, int fl)
{
	int i;

	for (i = 0; i < 100; i++) {
		temp_name(tg);
		tg->fd = openat(tg->dirfd, tg->tmpname,
				fl | O_CREAT | O_EXCL, 0666);
		if (tg->fd >= 0 || errno != EEXIST)
			break;
	}
	if (tg->fd < 0)
		tg->tmpname[0] = '\0';
	return tg->fd < 0 ? -errno : 0;
}

/* O_TMPFILE where the filesystem has it: a crash leaves nothing behind. */
static int open_temp(struct target *tg, int direct)
{
	int fl = O_RDWR | O_CLOEXEC, ret;

	tg->fd = openat(tg->dirfd, ".", O_TMPFILE | fl | (direct ? O_DIRECT : 0),
			0666);
	if (tg->fd < 0 && direct && errno == EINVAL) {
		direct = 0;
		tg->fd = openat(tg->dirfd, ".", O_TMPFILE | fl, 0666);
	}
	ret = tg->fd < 0 ? -errno : 0;
	if (ret == -EOPNOTSUPP || ret == -EISDIR || ret == -EINVAL) {
		ret = open_named_temp(tg, fl | (direct ? O_DIRECT : 0));
		if (ret == -EINVAL && direct) {
			direct = 0;
			ret = open_named_temp(tg, fl);
		}
	}
	if (ret)
		return sys_err(-ret, "cannot create a temporary file beside it",
			       tg->path);
	tg->direct = direct;
	if (direct && gpo__ckio_dio_align(tg->fd, &tg->align, &tg->mem_align)) {
		tg->direct = 0;
		gpo__ckio_set_direct(tg->fd, 0);
	}
	if (!tg->direct)
		tg->align = tg->mem_align = 1;
	return 0;
}

/* Give the unnamed file a name in the directory. */
static int link_temp(struct target *tg)
{
	char proc[64];
	int i, ret = 0;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", tg->fd);
	for (i = 0; i < 100; i++) {
		temp_name(tg);
		ret = linkat(AT_FDCWD, proc, tg->dirfd, tg->tmpname,
			     AT_SYMLINK_FOLLOW);
		/* no /proc: AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH */
		if (ret && errno == ENOENT)
			ret = linkat(tg->fd, "", tg->dirfd, tg->tmpname,
				     AT_EMPTY_PATH);
		if (!ret || errno != EEXIST)
			break;
	}
	if (ret) {
		tg->tmpname[0] = '\0';
		return sys_err(errno, "cannot link the temporary file", tg->path);
	}
	return 0;
}

/* fsync the file, then rename it over the target, then fsync the folder */
static int commit_temp(struct target *tg)
{
	int ret;

	if (fsync(tg->fd))
		return sys_err(errno, "fsync", tg->path);
	if (!tg->tmpname[0]) {
		ret = link_temp(tg);
		if (ret)
			return ret;
	}
	if (renameat(tg->dirfd, tg->tmpname, tg->dirfd, tg->base))
		return sys_err(errno, "rename", tg->path);
	tg->tmpname[0] = '\0';
	if (fsync(tg->dirfd))
		return sys_err(errno, "fsync of the directory", tg->path);
	return 0;
}

static void close_target(struct target *tg)
{
	if (tg->fd >= 0)
		close(tg->fd);
	if (tg->tmpname[0])
		unlinkat(tg->dirfd, tg->tmpname, 0);
	if (tg->dirfd >= 0)
		close(tg->dirfd);
}

/* A directory at the target would only fail the rename at the end. */
static int check_target(struct target *tg)
{
	struct stat st;

	if (!fstatat(tg->dirfd, tg->base, &st, 0) && S_ISDIR(st.st_mode))
		return gpo__err(-EISDIR, "%.200s is a directory", tg->path);
	return 0;
}

/* ---- the save pipeline --------------------------------------------------- */

struct save_src {
	struct gpo_optim *opt;
	struct save_plan *p;
	int si;				/* segment */
	uint64_t spos;
	int ei;				/* entry being hashed */
	uint64_t epos;
	XXH64_state_t hs;
};

static void hash_piece(struct save_src *s, const char *src, uint64_t n)
{
	while (n) {
		struct save_entry *e = &s->p->e[s->ei];
		uint64_t m = min_u64(n, e->bytes - s->epos);

		XXH64_update(&s->hs, src, m);
		s->epos += m;
		src += m;
		n -= m;
		if (s->epos == e->bytes) {
			e->sum = XXH64_digest(&s->hs);
			XXH64_reset(&s->hs, 0);
			s->ei++;
			s->epos = 0;
		}
	}
}

/*
 * The next @len bytes of the data, from the device. Hashing is the
 * hasher's (below): si/spos are this function's, ei/epos/hs the hasher's.
 */
static int fill(struct save_src *s, char *dst, uint64_t len)
{
	struct gpo_device *dev = s->opt->dev;
	int ret;

	while (len) {
		const struct save_seg *g = &s->p->seg[s->si];
		uint64_t n = min_u64(len, g->len - s->spos);

		pthread_mutex_lock(&dev->lock);
		ret = dev->ops->read(dev, g->buf, g->off + s->spos, dst, n);
		pthread_mutex_unlock(&dev->lock);
		if (ret)
			return ret;
		s->spos += n;
		if (s->spos == g->len) {
			s->si++;
			s->spos = 0;
		}
		dst += n;
		len -= n;
	}
	return 0;
}

static size_t io_chunk(uint64_t bytes, size_t align, size_t dflt)
{
	size_t chunk = gpo__ckpt_tune.chunk ? gpo__ckpt_tune.chunk : dflt;

	if (align < CKPT_ALIGN)
		align = CKPT_ALIGN;
	chunk = round_up(chunk, align);
	return (size_t)min_u64(chunk, round_up(bytes ? bytes : 1, align));
}

static int io_nbuf(uint64_t chunks)
{
	int n = gpo__ckpt_tune.nbuf > 0 ? gpo__ckpt_tune.nbuf : CKIO_NBUF;

	return (int)min_u64((uint64_t)n, chunks ? chunks : 1);
}

static int io_err(int ret, const char *path)
{
	if (ret == -ENOMEM)
		return ret;
	return sys_err(-ret, "write", path);
}

/*
 * Pinned staging: the I/O engine's buffers in memory from gpo_host_alloc(),
 * so that the device copies by DMA straight into the buffers the file
 * writes come from (save) and out of those the reads fill (restore), no
 * copy on the host between. Not for the cpu backend, whose memory is host
 * memory already. Where it cannot be had, pageable buffers do.
 */
struct staging {
	struct gpo_device *dev;
	void *mem;
	char *bufs;			/* aligned for direct I/O */
};

static int staged_device(const struct gpo_device *dev)
{
	return dev && dev->info.type != GPO_DEVICE_CPU;
}

static void stage_alloc(struct staging *st, struct gpo_device *dev,
			size_t chunk, int nbuf, size_t mem_align)
{
	memset(st, 0, sizeof(*st));
	if (!staged_device(dev))
		return;
	if (mem_align < 4096)
		mem_align = 4096;
	if (gpo_host_alloc(dev, chunk * (size_t)nbuf + mem_align, &st->mem)) {
		gpo__err_clear();
		return;
	}
	st->dev = dev;
	st->bufs = (char *)round_up((uintptr_t)st->mem, mem_align);
}

/* After gpo__ckio_exit(): nothing in flight uses it. */
static void stage_free(struct staging *st)
{
	if (st->mem)
		gpo_host_free(st->dev, st->mem);
	st->mem = st->bufs = NULL;
}

/*
 * Direct I/O pins the pages of its buffer, which memory a GPU driver
 * mapped may refuse (EFAULT): one block tells. Without it, buffered I/O
 * from the same pinned buffers. A save's probe writes where the header
 * goes last.
 */
static void check_direct(int fd, char *buf, size_t align, uint64_t off,
			 int writing)
{
	ssize_t n;

	if (!(fcntl(fd, F_GETFL) & O_DIRECT))
		return;
	if (writing)
		memset(buf, 0, align);
	n = writing ? pwrite(fd, buf, align, (off_t)off) :
		      pread(fd, buf, align, (off_t)off);
	if (n < 0 && errno == EFAULT)
		gpo__ckio_set_direct(fd, 0);
}

/*
 * The hasher: a thread that hashes chunk k while the device copies chunk
 * k + 1 and the file takes earlier ones (XXH64 runs near 13 GB/s a core,
 * below what the bus moves). It reads the buffers the writes go from;
 * a buffer is reused once its write is done and its chunk hashed. With
 * no thread, chunks are hashed in line.
 */
struct hasher {
	pthread_t th;
	int running;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct save_src *src;
	struct ckio *io;
	uint64_t len;			/* of the data */
	uint64_t posted;		/* chunks filled */
	uint64_t done;			/* chunks hashed */
	int stop;
};

static void hash_chunk(struct hasher *h, uint64_t k)
{
	uint64_t n = min_u64(h->io->chunk, h->len - k * h->io->chunk);

	hash_piece(h->src, h->io->req[k % h->io->nbuf].p, n);
}

static void *hasher_main(void *arg)
{
	struct hasher *h = arg;
	uint64_t k;

	pthread_mutex_lock(&h->lock);
	for (;;) {
		while (h->done == h->posted && !h->stop)
			pthread_cond_wait(&h->cond, &h->lock);
		if (h->done == h->posted)
			break;
		k = h->done;
		pthread_mutex_unlock(&h->lock);
		hash_chunk(h, k);
		pthread_mutex_lock(&h->lock);
		h->done++;
		pthread_cond_broadcast(&h->cond);
	}
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

static void hasher_start(struct hasher *h, struct save_src *src,
			 struct ckio *io)
{
	memset(h, 0, sizeof(*h));
	h->src = src;
	h->io = io;
	h->len = src->p->data_len;
	pthread_mutex_init(&h->lock, NULL);
	pthread_cond_init(&h->cond, NULL);
	h->running = !pthread_create(&h->th, NULL, hasher_main, h);
}

/* Chunk @k is filled: hash it, or hand it over. */
static void hasher_post(struct hasher *h, uint64_t k)
{
	if (!h->running) {
		hash_chunk(h, k);
		h->posted = h->done = k + 1;
		return;
	}
	pthread_mutex_lock(&h->lock);
	h->posted = k + 1;
	pthread_cond_broadcast(&h->cond);
	pthread_mutex_unlock(&h->lock);
}

/* Wait until the first @k chunks are hashed. */
static void hasher_wait(struct hasher *h, uint64_t k)
{
	if (!h->running)
		return;
	pthread_mutex_lock(&h->lock);
	while (h->done < k)
		pthread_cond_wait(&h->cond, &h->lock);
	pthread_mutex_unlock(&h->lock);
}

/* Hash what was posted, then end the thread. */
static void hasher_stop(struct hasher *h)
{
	if (h->running) {
		pthread_mutex_lock(&h->lock);
		h->stop = 1;
		pthread_cond_broadcast(&h->cond);
		pthread_mutex_unlock(&h->lock);
		pthread_join(h->th, NULL);
	}
	pthread_cond_destroy(&h->cond);
	pthread_mutex_destroy(&h->lock);
}

/* Data chunks from the device to the file, several writes in flight. */
static int write_data(struct ckio *io, struct save_src *src,
		      const struct target *tg, uint64_t data_start)
{
	uint64_t k, len = src->p->data_len, nchunks;
	struct hasher h;
	int ret = 0;

	nchunks = (len + io->chunk - 1) / io->chunk;
	hasher_start(&h, src, io);
	for (k = 0; k < nchunks; k++) {
		int i = (int)(k % io->nbuf);
		uint64_t n = min_u64(io->chunk, len - k * io->chunk);
		uint64_t padded = round_up(n, tg->align);

		ret = gpo__ckio_wait(io, i);
		if (ret) {
			ret = io_err(ret, tg->path);
			break;
		}
		/* the chunk that last used buffer i */
		if (k >= (uint64_t)io->nbuf)
			hasher_wait(&h, k - io->nbuf + 1);
		ret = fill(src, io->req[i].p, n);
		if (ret)
			break;	/* the device's error and message */
		memset(io->req[i].p + n, 0, padded - n);
		ret = gpo__ckio_submit(io, i, NULL, data_start + k * io->chunk,
				  padded, padded);
		if (ret) {
			ret = io_err(ret, tg->path);
			break;
		}
		hasher_post(&h, k);
	}
	/* every sum is in before the header is built */
	hasher_stop(&h);
	if (ret)
		return ret;
	ret = gpo__ckio_drain(io);
	return ret ? io_err(ret, tg->path) : 0;
}

struct save_job {
	struct gpo_optim *opt;
	struct save_plan plan;
	char *sched;
	char *json;			/* header with placeholder sums */
	uint64_t data_start;
	uint64_t file_size;
	struct target tg;
};

static int preallocate(struct save_job *j)
{
	int ret;

	if (gpo__ckpt_tune.no_prealloc)
		return 0;
	/* an early ENOSPC, before any device transfer */
	ret = fallocate(j->tg.fd, 0, 0,
			(off_t)round_up(j->file_size, j->tg.align));
	if (!ret || errno == EOPNOTSUPP || errno == ENOSYS)
		return 0;
	return sys_err(errno, "cannot reserve space", j->tg.path);
}

static int write_header(struct ckio *io, struct save_job *j)
{
	char *json = build_header(j->opt, &j->plan, j->sched, 1);
	char *buf = NULL;
	int ret;

	if (!json)
		return gpo__err(-ENOMEM, "out of memory for the header");
	/* fixed-width checksums: the final header is as long as the first */
	if (strlen(json) != strlen(j->json)) {
		free(json);
		return gpo__err(-EIO, "internal error: the header changed length");
	}
	if (posix_memalign((void **)&buf, j->tg.mem_align < 4096 ? 4096 :
			   j->tg.mem_align, j->data_start)) {
		free(json);
		return gpo__err(-ENOMEM, "out of memory for the header");
	}
	put_prefix(buf, json, j->data_start);
	free(json);
	ret = gpo__ckio_submit(io, io->nbuf, buf, 0, j->data_start, j->data_start);
	if (!ret)
		ret = gpo__ckio_drain(io);
	free(buf);
	return ret ? io_err(ret, j->tg.path) : 0;
}

static int write_file(struct save_job *j)
{
	struct save_src src = { .opt = j->opt, .p = &j->plan };
	struct staging st;
	struct ckio io;
	uint64_t nchunks;
	size_t chunk;
	int ret, nbuf;

	chunk = io_chunk(j->plan.data_len, j->tg.align,
			 staged_device(j->opt->dev) ? CKIO_DEV_CHUNK : CKIO_CHUNK);
	nchunks = (j->plan.data_len + chunk - 1) / chunk;
	nbuf = io_nbuf(nchunks);
	stage_alloc(&st, j->opt->dev, chunk, nbuf, j->tg.mem_align);
	ret = gpo__ckio_init_mem(&io, j->tg.fd, 1, chunk, nbuf,
				 j->tg.mem_align, st.bufs);
	if (ret) {
		stage_free(&st);
		return ret;
	}
	if (st.bufs && j->tg.direct)
		check_direct(j->tg.fd, st.bufs, j->tg.align, 0, 1);
	XXH64_reset(&src.hs, 0);
	ret = write_data(&io, &src, &j->tg, j->data_start);
	if (!ret)
		ret = write_header(&io, j);
	gpo__ckio_exit(&io);
	stage_free(&st);
	if (!ret && ftruncate(j->tg.fd, (off_t)j->file_size))
		ret = sys_err(errno, "ftruncate", j->tg.path);
	return ret;
}

static int prepare_save(struct save_job *j)
{
	struct gpo_optim *opt = j->opt;
	uint64_t align;
	int ret;

	/* ZeRO-1: the ranks keep the state; a save without it would lose it */
	if (opt->state_elsewhere == 1)
		return gpo__err(-EBUSY, "the optimizer's state is spread over the ranks (zero=1): gpo_comm_sync_state() first");
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	/* a queued step that may be skipped: its counts first */
	if (!ret)
		ret = gpo__optim_settle(opt);
	if (!ret)
		ret = gpo__optim_loss_state(opt, &opt->ls_saved,
					    &opt->ls_saved_good);
	pthread_mutex_unlock(&opt->dev->lock);
	if (ret)
		return ret;
	ret = plan_save(opt, &j->plan);
	if (ret)
		return ret;
	j->sched = sched_line(opt);
	gpo__err_clear();
	j->json = build_header(opt, &j->plan, j->sched, 0);
	if (!j->json)
		return gpo__err(-ENOMEM, "out of memory for the header");
	align = j->tg.align > CKPT_ALIGN ? j->tg.align : CKPT_ALIGN;
	j->data_start = round_up(8 + strlen(j->json), align);
	j->file_size = j->data_start + j->plan.data_len;
	return 0;
}

int gpo_optim_save(struct gpo_optim *opt, const char *path,
		   unsigned int flags)
{
	struct save_job j = { .opt = opt, .tg = { .fd = -1, .dirfd = -1 } };
	int ret;

	if (!opt || !path)
		return gpo__err(-EINVAL, "gpo_optim_save: NULL argument");
	if (flags & ~SAVE_FLAGS)
		return gpo__err(-EINVAL, "gpo_optim_save: unknown flags %#x",
			       flags & ~SAVE_FLAGS);
	j.tg.path = path;
	ret = split_path(&j.tg, path);
	if (!ret)
		ret = check_target(&j.tg);
	if (!ret)
		ret = open_temp(&j.tg, !(flags & GPO_CKPT_BUFFERED));
	if (!ret)
		ret = prepare_save(&j);
	if (!ret)
		ret = preallocate(&j);
	if (!ret)
		ret = write_file(&j);
	if (!ret)
		ret = commit_temp(&j.tg);
	close_target(&j.tg);
	free_plan(&j.plan);
	free(j.sched);
	free(j.json);
	if (!ret)
		gpo__err_clear();
	return ret;
}

/* ---- reading ------------------------------------------------------------- */

static int pread_full(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;

	while (len) {
		ssize_t n = pread(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return gpo__err(-EBADMSG, "the file ends early (it shrank)");
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_header(int fd, uint64_t size, unsigned int flags,
		       struct ckpt **out)
{
	unsigned char le8[8];
	uint64_t hlen;
	char *json;
	int ret;

	if (size < 8)
		return gpo__err(-EBADMSG, "%" PRIu64
			       " bytes: shorter than the 8-byte header length",
			       size);
	ret = pread_full(fd, le8, 8, 0);
	if (!ret)
		ret = gpo__ckpt_parse_len(le8, size, &hlen);
	if (ret)
		return ret;
	json = malloc(hlen);
	if (!json)
		return gpo__err(-ENOMEM, "out of memory for a %" PRIu64
			       "-byte header", hlen);
	ret = pread_full(fd, json, hlen, 8);
	if (!ret)
		ret = gpo__ckpt_parse(json, hlen, size, flags, out);
	free(json);
	return ret;
}

/* Open @path and validate its header; *@fdp stays open for the data. */
static int open_ckpt(const char *path, unsigned int flags, int *fdp,
		     struct ckpt **out)
{
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return sys_err(errno, "open", path);
	if (fstat(fd, &st)) {
		ret = sys_err(errno, "fstat", path);
		goto out_close;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = gpo__err(S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL,
			      "%.200s: not a regular file", path);
		goto out_close;
	}
	ret = read_header(fd, (uint64_t)st.st_size, flags, out);
	if (ret) {
		ret = path_err(ret, path);
		goto out_close;
	}
	*fdp = fd;
	return 0;
out_close:
	close(fd);
	return ret;
}

/* Where the data goes: device buffers (restore), or nowhere (verify). */
struct sink {
	struct gpo_optim *opt;		/* NULL: only check */
	struct dev_buf *dst[SL_COUNT + 2];	/* slot_row() */
	struct dev_buf *absmax[SL_COUNT];	/* u8 slots' absmax blocks */
	int ti;				/* tensor being read */
	uint64_t tpos;
	XXH64_state_t hs;
	int nbad;
	int first_bad;
	/* a write to the device, grown while the next piece continues it */
	struct dev_buf *pend_buf;
	uint64_t pend_off;
	const char *pend_src;
	uint64_t pend_len;
};

static int flush_upload(struct sink *sk)
{
	struct gpo_device *dev;
	int ret;

	if (!sk->pend_len)
		return 0;
	dev = sk->opt->dev;
	pthread_mutex_lock(&dev->lock);
	ret = dev->ops->write(dev, sk->pend_buf, sk->pend_off, sk->pend_src,
			      sk->pend_len);
	pthread_mutex_unlock(&dev->lock);
	sk->pend_len = 0;
	return ret;
}

static int upload(struct sink *sk, const struct ckpt_tensor *t,
		  const char *src, uint64_t n)
{
	struct dev_buf *buf = sk->dst[slot_row(t->slot)];
	uint64_t esize = gpo_dtype_size(slot_dtype(sk->opt, t->slot));
	uint64_t off;
	int ret;

	if (t->tensor == CKPT_TENSOR_ABSMAX) {
		buf = sk->absmax[t->slot];
		off = sk->tpos;
	} else {
		off = sk->opt->tensors[t->tensor].offset * esize + sk->tpos;
	}

	if (sk->pend_len && buf == sk->pend_buf &&
	    off == sk->pend_off + sk->pend_len &&
	    src == sk->pend_src + sk->pend_len) {
		sk->pend_len += n;
		return 0;
	}
	ret = flush_upload(sk);
	sk->pend_buf = buf;
	sk->pend_off = off;
	sk->pend_src = src;
	sk->pend_len = n;
	return ret;
}

static int finish_tensor(struct ckpt *ck, struct sink *sk)
{
	struct ckpt_tensor *t = &ck->t[sk->ti];
	uint64_t sum = XXH64_digest(&sk->hs);

	XXH64_reset(&sk->hs, 0);
	sk->ti++;
	sk->tpos = 0;
	if (!t->has_sum)
		return 0;
	t->verified = sum == t->sum ? 1 : -EBADE;
	if (t->verified > 0)
		return 0;
	if (!sk->nbad++)
		sk->first_bad = (int)(t - ck->t);
	if (!sk->opt)
		return 0;
	return gpo__err(-EBADE, "tensor '%.200s': checksum mismatch (data %016"
		       PRIx64 ", header %016" PRIx64 ")", t->name, sum, t->sum);
}

/* Hash (and upload) @n bytes of the data, in order. */
static int consume(struct ckpt *ck, struct sink *sk, const char *p,
		   uint64_t n)
{
	int ret;

	while (n && sk->ti < ck->ntensors) {
		struct ckpt_tensor *t = &ck->t[sk->ti];
		uint64_t m = min_u64(n, t->end - t->begin - sk->tpos);

		XXH64_update(&sk->hs, p, m);
		if (sk->opt && m) {
			ret = upload(sk, t, p, m);
			if (ret)
				return ret;
		}
		sk->tpos += m;
		p += m;
		n -= m;
		if (sk->tpos == t->end - t->begin) {
			ret = finish_tensor(ck, sk);
			if (ret)
				return ret;
		}
	}
	return 0;
}

struct reader {
	struct ckio io;
	uint64_t base;			/* file offset of chunk 0 */
	uint64_t nchunks;
	size_t align;
};

static void read_chunk(struct reader *r, const struct ckpt *ck, uint64_t k,
		       int *ret)
{
	uint64_t off = r->base + k * r->io.chunk;
	uint64_t want = min_u64(r->io.chunk, ck->file_size - off);
	uint64_t len = min_u64(r->io.chunk, round_up(want, r->align));

	if (!*ret)
		*ret = gpo__ckio_submit(&r->io, (int)(k % r->io.nbuf), NULL, off,
				   len, want);
}

/* Chunk @k is in: hand its data bytes to the sink. */
static int take_chunk(struct reader *r, struct ckpt *ck, struct sink *sk,
		      uint64_t k)
{
	const struct ckio_req *req = &r->io.req[k % r->io.nbuf];
	uint64_t off = r->base + k * r->io.chunk;
	uint64_t skip = off < ck->data_start ? ck->data_start - off : 0;
	int ret;

	if (skip >= req->want)
		return 0;
	ret = consume(ck, sk, req->p + skip, req->want - skip);
	/* the buffer is about to be reused */
	if (!ret && sk->opt)
		ret = flush_upload(sk);
	return ret;
}

static int read_loop(struct reader *r, struct ckpt *ck, struct sink *sk)
{
	uint64_t k;
	int ret = 0;

	for (k = 0; k < (uint64_t)r->io.nbuf && k < r->nchunks; k++)
		read_chunk(r, ck, k, &ret);
	for (k = 0; k < r->nchunks && !ret; k++) {
		ret = gpo__ckio_wait(&r->io, (int)(k % r->io.nbuf));
		if (ret == -ENODATA)
			ret = gpo__err(-EBADMSG, "the file ends early (it shrank)");
		else if (ret && ret != -ENOMEM)
			ret = gpo__err(ret, "read: %s", strerror(-ret));
		if (!ret)
			ret = take_chunk(r, ck, sk, k);
		if (k + r->io.nbuf < r->nchunks)
			read_chunk(r, ck, k + r->io.nbuf, &ret);
	}
	/* zero-length tensors at the end */
	while (!ret && sk->ti < ck->ntensors &&
	       ck->t[sk->ti].begin == ck->t[sk->ti].end)
		ret = finish_tensor(ck, sk);
	return ret;
}

static void setup_direct(int fd, unsigned int flags, struct reader *r,
			 size_t *mem_align)
{
	r->align = 1;
	*mem_align = CKPT_ALIGN;
	if (flags & GPO_CKPT_BUFFERED || gpo__ckio_set_direct(fd, 1))
		return;
	if (gpo__ckio_dio_align(fd, &r->align, mem_align)) {
		gpo__ckio_set_direct(fd, 0);
		r->align = 1;
	}
}

/* Stream the data region through the sink, several reads in flight. */
static int stream_data(struct ckpt *ck, int fd, unsigned int flags,
		       struct sink *sk)
{
	struct gpo_device *dev = sk->opt ? sk->opt->dev : NULL;
	struct staging st;
	struct reader r;
	size_t mem_align, chunk;
	int ret, nbuf;

	XXH64_reset(&sk->hs, 0);
	setup_direct(fd, flags, &r, &mem_align);
	r.base = ck->data_start / r.align * r.align;
	chunk = io_chunk(ck->file_size - r.base, r.align,
			 staged_device(dev) ? CKIO_DEV_CHUNK : CKIO_CHUNK);
	r.nchunks = (ck->file_size - r.base + chunk - 1) / chunk;
	nbuf = io_nbuf(r.nchunks);
	stage_alloc(&st, dev, chunk, nbuf, mem_align);
	ret = gpo__ckio_init_mem(&r.io, fd, 0, chunk, nbuf, mem_align, st.bufs);
	if (ret) {
		stage_free(&st);
		return ret;
	}
	if (st.bufs)
		check_direct(fd, st.bufs, r.align, r.base, 0);
	ret = read_loop(&r, ck, sk);
	gpo__ckio_exit(&r.io);
	stage_free(&st);
	gpo__ckio_set_direct(fd, 0);
	if (!ret && sk->nbad)
		ret = gpo__err(-EBADE, "%d tensor(s) fail their checksum, first '%.200s'",
			      sk->nbad, ck->t[sk->first_bad].name);
	return ret;
}

/* ---- matching a checkpoint to an optimizer ------------------------------- */

struct name_index {
	const struct gpo_optim *opt;
	int *order;			/* tensor indices sorted by name */
};

static int cmp_names(const void *a, const void *b, void *arg)
{
	const struct gpo_optim *opt = arg;

	return strcmp(opt->tensors[*(const int *)a].name,
		      opt->tensors[*(const int *)b].name);
}

static int index_names(struct name_index *ix, const struct gpo_optim *opt)
{
	int i;

	ix->opt = opt;
	ix->order = malloc((opt->ntensors ? opt->ntensors : 1) * sizeof(int));
	if (!ix->order)
		return gpo__err(-ENOMEM, "out of memory");
	for (i = 0; i < opt->ntensors; i++)
		ix->order[i] = i;
	qsort_r(ix->order, opt->ntensors, sizeof(int), cmp_names,
		(void *)opt);
	return 0;
}

/* The tensor named by the first @len bytes of @name, or -1. */
static int lookup(const struct name_index *ix, const char *name, size_t len)
{
	int lo = 0, hi = ix->opt->ntensors - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		const char *s = ix->opt->tensors[ix->order[mid]].name;
		int c = strncmp(s, name, len);

		if (!c && s[len])
			c = 1;
		if (!c)
			return ix->order[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* "param/<name>" or "state/<name>/<slot>" into @t's slot and tensor */
static int resolve_name(const struct name_index *ix, enum gpo_optim_kind kind,
			struct ckpt_tensor *t)
{
	const char *n = t->name, *slash;
	int s;

	if (!strncmp(n, "param/", 6)) {
		t->slot = CKPT_SLOT_PARAM;
		t->tensor = lookup(ix, n + 6, strlen(n + 6));
	} else if (!strncmp(n, "master/", 7)) {
		t->slot = CKPT_SLOT_MASTER;
		t->tensor = lookup(ix, n + 7, strlen(n + 7));
	} else if (!strncmp(n, "state/", 6) && (slash = strchr(n + 6, '/'))) {
		t->tensor = lookup(ix, n + 6, (size_t)(slash - n - 6));
		for (s = 0; s < SL_COUNT; s++)
			if (!strcmp(slash + 1, gpo__optim_slot_names[s]))
				break;
		if (s == SL_COUNT || !gpo__optim_slot_possible(kind, s))
			return gpo__err(-EINVAL, "tensor '%.200s': %s has no such slot",
				       n, gpo_optim_kind_name(kind));
		t->slot = s;
	} else if (!strncmp(n, "absmax/", 7)) {
		for (s = 0; s < SL_COUNT; s++)
			if (!strcmp(n + 7, gpo__optim_slot_names[s]))
				break;
		if (s == SL_COUNT || !gpo__optim_slot_possible(kind, s))
			return gpo__err(-EINVAL, "tensor '%.200s': %s has no such slot",
				       n, gpo_optim_kind_name(kind));
		t->slot = s;
		t->tensor = CKPT_TENSOR_ABSMAX;
		return 0;
	} else {
		return gpo__err(-EINVAL,
			       "tensor '%.200s' is neither param/NAME, state/NAME/SLOT nor absmax/SLOT",
			       n);
	}
	if (t->tensor < 0)
		return gpo__err(-EINVAL, "tensor '%.200s': the optimizer has no such tensor",
			       n);
	return 0;
}

/* "absmax/<slot>": F32 [blocks] of a slot the optimizer keeps in u8 */
static int check_absmax_shape(const struct gpo_optim *opt,
			      const struct ckpt_tensor *t)
{
	uint64_t blocks = gpo__optim_u8_blocks(opt);

	if (opt->slot_dtype[t->slot] != GPO_U8)
		return gpo__err(-EINVAL, "tensor '%.200s': the optimizer keeps %s in %s, without absmax blocks",
				t->name, gpo__optim_slot_names[t->slot],
				gpo_dtype_name(opt->slot_dtype[t->slot]));
	if (t->dtype != gpo__ckpt_file_dtype[GPO_F32])
		return gpo__err(-EINVAL, "tensor '%.200s' is %s, not F32",
				t->name, gpo__ckpt_dtype_names[t->dtype]);
	if (t->ndim != 1 || t->shape[0] != blocks)
		return gpo__err(-EINVAL, "tensor '%.200s': the optimizer has %llu blocks of %d",
				t->name, (unsigned long long)blocks,
				GPO_QBLOCK);
	return 0;
}

static int check_shape(const struct gpo_optim *opt,
		       const struct ckpt_tensor *t)
{
	const struct optim_tensor *ot;
	enum gpo_dtype dt = slot_dtype(opt, t->slot);
	int i, same;

	if (t->tensor == CKPT_TENSOR_ABSMAX)
		return check_absmax_shape(opt, t);
	ot = &opt->tensors[t->tensor];
	same = t->ndim == ot->ndim;

	/* no conversion: a file of other dtypes needs an optimizer of those */
	if (t->dtype != gpo__ckpt_file_dtype[dt])
		return gpo__err(-EINVAL, "tensor '%.200s' is %s; the optimizer keeps %s in %s (%s)",
			       t->name, gpo__ckpt_dtype_names[t->dtype],
			       slot_label(t->slot), gpo_dtype_name(dt),
			       gpo__ckpt_dtype_names[gpo__ckpt_file_dtype[dt]]);
	for (i = 0; same && i < t->ndim; i++)
		same = t->shape[i] == ot->shape[i];
	if (!same)
		return gpo__err(-EINVAL,
			       "tensor '%.200s': shape differs from the optimizer's '%s'",
			       t->name, ot->name);
	return 0;
}

static int match_groups(const struct ckpt *ck, const struct gpo_optim *opt,
			struct optim_group *groups)
{
	int g, i, t;

	if (ck->kind != opt->kind)
		return gpo__err(-EINVAL, "the checkpoint is of %s, the optimizer %s",
			       gpo_optim_kind_name(ck->kind),
			       gpo_optim_kind_name(opt->kind));
	if (ck->ngroups != opt->ngroups)
		return gpo__err(-EINVAL, "the checkpoint has %d groups, the optimizer %d",
			       ck->ngroups, opt->ngroups);
	for (g = 0; g < opt->ngroups; g++) {
		const struct ckpt_group *cg = &ck->groups[g];

		for (i = 0, t = 0; t < opt->ntensors; t++) {
			if (opt->tensors[t].group != g)
				continue;
			if (i >= cg->ntensors ||
			    strcmp(cg->tensors[i], opt->tensors[t].name))
				return gpo__err(-EINVAL,
					       "group %d: the checkpoint's tensors differ from the optimizer's at '%s'",
					       g, opt->tensors[t].name);
			i++;
		}
		if (i != cg->ntensors)
			return gpo__err(-EINVAL, "group %d: the checkpoint has more tensors",
				       g);
		groups[g].hp = cg->hp;
		groups[g].momentum_started = cg->momentum_started;
	}
	return 0;
}

/* Every tensor must be there for param and for each slot present. */
static int check_complete_slots(const struct gpo_optim *opt,
				const unsigned char *seen, int have[SL_COUNT],
				unsigned int flags,
				const struct optim_group *groups)
{
	int s, t, g, need;

	for (s = -1; s < SL_COUNT; s++) {
		const unsigned char *row;
		int any = 0;

		row = seen + (size_t)(s + 1) * opt->ntensors;
		for (t = 0; t < opt->ntensors; t++)
			any |= row[t];
		if (s >= 0)
			have[s] = any;
		for (need = 0, g = 0; s >= 0 && g < opt->ngroups; g++)
			need |= gpo__optim_slot_needed(opt->kind, &groups[g].hp, s);
		if (!any && (s < 0 || (need && !(flags & GPO_CKPT_FOREIGN))) &&
		    opt->ntensors)
			return gpo__err(-ENOENT, "the checkpoint has no %s/%s%s%s",
				       s < 0 ? "param" : "state",
				       opt->tensors[0].name, s < 0 ? "" : "/",
				       s < 0 ? "" : gpo__optim_slot_names[s]);
		for (t = 0; any && t < opt->ntensors; t++)
			if (!row[t])
				return gpo__err(-ENOENT, "the checkpoint has no %s/%s%s%s",
					       s < 0 ? "param" : "state",
					       opt->tensors[t].name,
					       s < 0 ? "" : "/",
					       s < 0 ? "" : gpo__optim_slot_names[s]);
	}
	return 0;
}

/*
 * master/<name> for every tensor when the optimizer keeps a master copy
 * (half parameters, master_weights=1), none otherwise
 */
static int check_master(const struct gpo_optim *opt, const unsigned char *seen)
{
	const unsigned char *row = seen +
				   (size_t)(SL_COUNT + 1) * opt->ntensors;
	int want = gpo__optim_wants_master(opt);
	int t;

	for (t = 0; t < opt->ntensors; t++) {
		if (want && !row[t])
			return gpo__err(-ENOENT, "the checkpoint has no master/%s (the optimizer keeps an f32 master copy)",
					opt->tensors[t].name);
		if (!want && row[t])
			return gpo__err(-EINVAL, "the checkpoint has master/%s but the optimizer keeps no master copy: set its param dtype and master_weights to restore it",
					opt->tensors[t].name);
	}
	return 0;
}

/*
 * A u8 slot's codes come with their absmax blocks, and absmax blocks
 * only with their slot's codes
 */
static int check_absmax(const struct gpo_optim *opt,
			const unsigned char *seen, const int have[SL_COUNT])
{
	int s;

	for (s = 0; s < SL_COUNT; s++) {
		if (have[s] && opt->slot_dtype[s] == GPO_U8 && !seen[s] &&
		    gpo__optim_u8_blocks(opt))
			return gpo__err(-ENOENT, "the checkpoint has no absmax/%s for its u8 %s",
					gpo__optim_slot_names[s],
					gpo__optim_slot_names[s]);
		if (!have[s] && seen[s])
			return gpo__err(-EINVAL, "the checkpoint has absmax/%s but no %s",
					gpo__optim_slot_names[s],
					gpo__optim_slot_names[s]);
	}
	return 0;
}

static int match_tensors(const struct ckpt *ck, const struct gpo_optim *opt,
			 unsigned char *seen)
{
	struct name_index ix;
	int i, ret;

	ret = index_names(&ix, opt);
	for (i = 0; i < ck->ntensors && !ret; i++) {
		struct ckpt_tensor *t = &ck->t[i];

		ret = resolve_name(&ix, opt->kind, t);
		if (!ret)
			ret = check_shape(opt, t);
		/* absmax tensors: a row of SL_COUNT after the tensors' */
		if (!ret && t->tensor == CKPT_TENSOR_ABSMAX)
			seen[(size_t)(SL_COUNT + 2) * opt->ntensors +
			     t->slot] = 1;
		else if (!ret)
			seen[(size_t)slot_row(t->slot) * opt->ntensors +
			     t->tensor] = 1;
	}
	free(ix.order);
	return ret;
}

int gpo__ckpt_match(const struct ckpt *ck, const struct gpo_optim *opt,
	       unsigned int flags, int have[SL_COUNT],
	       struct optim_group *groups)
{
	unsigned char *seen;
	int ret = 0;

	memcpy(groups, opt->groups, opt->ngroups * sizeof(*groups));
	if (ck->gpuopt)
		ret = match_groups(ck, opt, groups);
	if (ret)
		return ret;
	seen = calloc((size_t)(SL_COUNT + 2) *
		      (opt->ntensors ? opt->ntensors : 1) + SL_COUNT, 1);
	if (!seen)
		return gpo__err(-ENOMEM, "out of memory");
	/* the tensor fields are the plan: set in a const header on purpose */
	ret = match_tensors((struct ckpt *)ck, opt, seen);
	if (!ret)
		ret = check_complete_slots(opt, seen, have, flags, groups);
	if (!ret)
		ret = check_master(opt, seen);
	if (!ret)
		ret = check_absmax(opt, seen + (size_t)(SL_COUNT + 2) *
					       opt->ntensors, have);
	free(seen);
	return ret;
}

/* ---- restore ------------------------------------------------------------- */

struct restore_job {
	struct gpo_optim *opt;
	struct ckpt *ck;
	int fd;
	int have[SL_COUNT];
	struct optim_group *groups;
	struct dev_buf staged[SL_COUNT + 2];	/* by slot_row() */
	struct dev_buf staged_absmax[SL_COUNT];	/* u8 slots' */
	char *sched_backup;
	int sched_loaded;
};

static void free_staged(struct restore_job *j)
{
	int i;

	for (i = 0; i <= SL_COUNT + 1; i++)
		gpo__pool_free(j->opt->dev, &j->staged[i]);
	for (i = 0; i < SL_COUNT; i++)
		gpo__pool_free(j->opt->dev, &j->staged_absmax[i]);
}

/* Zero bytes [@from, @to), multiples of 4, as float32 zeros. */
static int fill_zero(struct gpo_device *dev, const struct dev_buf *buf,
		     uint64_t from, uint64_t to)
{
	struct gpo_mem_args a = { .value = 0 };
	struct op_call call = {
		.op = OP_FILL, .dtype = GPO_F32, .args = &a,
	};

	if (from >= to)
		return 0;
	call.buf[0] = *buf;
	call.buf[0].off += from;
	call.buf[0].size = to - from;
	a.n = (uint32_t)((to - from) / 4);
	call.work = a.n;
	return gpo__launch(dev, &call);
}

/*
 * Zero what the file does not fill: the padding after each group. The
 * fill starts at a multiple of 256 bytes (GROUP_ALIGN float32s), a valid
 * descriptor offset on every device; the data it covers (of this group or,
 * with smaller elements, of groups before) comes in afterwards.
 */
static int zero_padding(struct gpo_optim *opt, const struct dev_buf *buf,
			uint64_t esize)
{
	const uint64_t align = GROUP_ALIGN * 4;
	int g, ret = 0;

	for (g = 0; g < opt->ngroups && !ret; g++) {
		const struct optim_group *grp = &opt->groups[g];
		uint64_t end = (grp->start + grp->numel) * esize;
		uint64_t next = (g + 1 < opt->ngroups ?
				 opt->groups[g + 1].start : opt->total) * esize;

		if (end < next)
			ret = fill_zero(opt->dev, buf, end / align * align,
					next);
	}
	return ret;
}

/* New buffers for param and each slot in the file. */
static int stage(struct restore_job *j)
{
	struct gpo_optim *opt = j->opt;
	struct gpo_device *dev = opt->dev;
	int i, ret = 0;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i <= SL_COUNT + 1 && !ret; i++) {
		int slot = i == SL_COUNT + 1 ? CKPT_SLOT_MASTER : i - 1;
		uint64_t esize = gpo_dtype_size(slot_dtype(opt, slot));

		if (slot >= 0 && !j->have[i - 1])
			continue;
		if (slot == CKPT_SLOT_MASTER && !opt->master.mem)
			continue;
		ret = gpo__pool_alloc(dev, opt->total * esize, &j->staged[i]);
		if (!ret)
			ret = zero_padding(opt, &j->staged[i], esize);
		/* a u8 slot's absmax blocks, all of them in the file */
		if (!ret && slot >= 0 && opt->slot_dtype[slot] == GPO_U8 &&
		    gpo__optim_u8_blocks(opt))
			ret = gpo__pool_alloc(dev,
				(gpo__optim_u8_blocks(opt) + 3) / 4 * 16,
				&j->staged_absmax[slot]);
	}
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

/* The schedule's state is checked (by loading it) before any data. */
static int load_sched(struct restore_job *j)
{
	struct gpo_sched *s = j->opt->sched;
	int n, ret;

	if (!j->ck->sched || !s)
		return 0;
	n = gpo_sched_save(s, NULL, 0);
	if (n >= 0 && (j->sched_backup = malloc((size_t)n + 1)))
		gpo_sched_save(s, j->sched_backup, (size_t)n + 1);
	ret = gpo_sched_load(s, j->ck->sched);
	if (ret)
		return gpo__err_prefix(ret, "schedule");
	j->sched_loaded = 1;
	return 0;
}

static void unload_sched(struct restore_job *j)
{
	if (j->sched_loaded && j->sched_backup)
		gpo_sched_load(j->opt->sched, j->sched_backup);
}

/*
 * A param buffer bound to the caller's memory (gpo_optim_bind) stays the
 * buffer the caller's kernels read: the staged values are copied into it
 * instead of swapped in. After every check, just before commit(): only a
 * device failure can leave it part written. Whole 4-byte words on the
 * device, a 2-byte dtype's odd last element through the host.
 */
static int copy_to_bound(struct restore_job *j)
{
	struct gpo_optim *opt = j->opt;
	struct gpo_device *dev = opt->dev;
	uint64_t bytes = opt->param.size, words = bytes / 4;
	struct gpo_mem_args a = { .n = (uint32_t)words };
	struct op_call call = {
		.op = OP_COPY, .dtype = GPO_F32, .work = words, .args = &a,
	};
	unsigned char tail[4];
	int ret = 0;

	if (!opt->ext[0])
		return 0;
	call.buf[0] = opt->param;
	call.buf[1] = j->staged[0];
	pthread_mutex_lock(&dev->lock);
	if (words)
		ret = gpo__launch(dev, &call);
	if (!ret)
		ret = dev->ops->wait(dev, NULL);
	if (!ret && bytes % 4)
		ret = dev->ops->read(dev, &j->staged[0], words * 4, tail,
				     bytes % 4);
	if (!ret && bytes % 4)
		ret = dev->ops->write(dev, &opt->param, words * 4, tail,
				      bytes % 4);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

static void swap_in(struct dev_buf *dst, struct dev_buf *src,
		    struct gpo_device *dev)
{
	gpo__pool_free(dev, dst);
	*dst = *src;
	memset(src, 0, sizeof(*src));
}

/* Everything checked out: the new state replaces the old. */
static void commit(struct restore_job *j)
{
	struct gpo_optim *opt = j->opt;
	struct gpo_device *dev = opt->dev;
	int s, g;

	pthread_mutex_lock(&dev->lock);
	/* a bound param got its values by copy_to_bound() */
	if (!opt->ext[0])
		swap_in(&opt->param, &j->staged[0], dev);
	if (opt->master.mem)
		swap_in(&opt->master, &j->staged[SL_COUNT + 1], dev);
	for (s = 0; s < SL_COUNT; s++) {
		if (j->have[s])
			swap_in(&opt->slot[s], &j->staged[s + 1], dev);
		else
			gpo__pool_free(dev, &opt->slot[s]);
		/* u8: the blocks came with the codes (check_absmax()) */
		if (j->have[s] && j->staged_absmax[s].mem)
			swap_in(&opt->absmax[s], &j->staged_absmax[s], dev);
		else if (!j->have[s])
			gpo__pool_free(dev, &opt->absmax[s]);
	}
	for (g = 0; g < opt->ngroups; g++) {
		opt->groups[g].hp = j->groups[g].hp;
		opt->groups[g].momentum_started = j->ck->gpuopt ?
			j->groups[g].momentum_started : j->have[SL_MOMENTUM];
	}
	if (j->ck->gpuopt) {
		opt->step = j->ck->step;
		opt->skipped = j->ck->skipped;
	}
	/*
	 * Slots the configuration needs but a foreign file lacked start
	 * afresh now; if that fails, the next step allocates them again.
	 */
	gpo__optim_ensure_allocated(opt);
	/* the loss scale goes on from where it was saved */
	gpo__ckpt_apply_loss(j->ck, opt);
	pthread_mutex_unlock(&dev->lock);
}

static int restore(struct restore_job *j, unsigned int flags)
{
	struct gpo_optim *opt = j->opt;
	struct sink sk = { .opt = opt };
	int i, ret;

	/* ZeRO-1's shard optimizers took the state when attached */
	if (opt->state_elsewhere)
		return gpo__err(-EBUSY, "the optimizer's state is spread over the ranks (zero=1): restore before gpo_comm_train_attach()");
	j->groups = malloc(opt->ngroups * sizeof(*j->groups));
	if (!j->groups)
		return gpo__err(-ENOMEM, "out of memory");
	ret = gpo__ckpt_match(j->ck, opt, flags, j->have, j->groups);
	if (!ret)
		ret = gpo__ckpt_check_precision(j->ck, opt);
	if (!ret)
		ret = load_sched(j);
	if (ret)
		return ret;
	pthread_mutex_lock(&opt->dev->lock);
	ret = gpo__optim_ensure_allocated(opt);
	/* a queued step that may be skipped: its counts first */
	if (!ret)
		ret = gpo__optim_settle(opt);
	pthread_mutex_unlock(&opt->dev->lock);
	if (!ret)
		ret = stage(j);
	for (i = 0; i <= SL_COUNT + 1; i++)
		sk.dst[i] = &j->staged[i];
	for (i = 0; i < SL_COUNT; i++)
		sk.absmax[i] = &j->staged_absmax[i];
	if (!ret)
		ret = stream_data(j->ck, j->fd, flags, &sk);
	if (!ret)
		ret = copy_to_bound(j);
	if (!ret)
		commit(j);
	return ret;
}

int gpo_optim_restore(struct gpo_optim *opt, const char *path,
		      unsigned int flags)
{
	struct restore_job j = { .opt = opt, .fd = -1 };
	int ret;

	if (!opt || !path)
		return gpo__err(-EINVAL, "gpo_optim_restore: NULL argument");
	if (flags & ~READ_FLAGS)
		return gpo__err(-EINVAL, "gpo_optim_restore: unknown flags %#x",
			       flags & ~READ_FLAGS);
	ret = open_ckpt(path, flags, &j.fd, &j.ck);
	if (ret)
		return ret;
	ret = restore(&j, flags);
	if (ret) {
		unload_sched(&j);
		ret = path_err(ret, path);
	} else {
		gpo__err_clear();
	}
	free_staged(&j);
	free(j.groups);
	free(j.sched_backup);
	gpo__ckpt_free(j.ck);
	close(j.fd);
	return ret;
}

/* ---- inspection ---------------------------------------------------------- */

struct gpo_ckpt {
	struct ckpt *ck;
	int fd;
	unsigned int flags;
	char *path;
};

int gpo_ckpt_open(const char *path, unsigned int flags,
		  struct gpo_ckpt **out)
{
	struct gpo_ckpt *c;
	int ret;

	if (!path || !out)
		return gpo__err(-EINVAL, "gpo_ckpt_open: NULL argument");
	if (flags & ~READ_FLAGS)
		return gpo__err(-EINVAL, "gpo_ckpt_open: unknown flags %#x",
			       flags & ~READ_FLAGS);
	c = calloc(1, sizeof(*c));
	if (!c || !(c->path = strdup(path))) {
		free(c);
		return gpo__err(-ENOMEM, "out of memory");
	}
	c->flags = flags;
	ret = open_ckpt(path, flags, &c->fd, &c->ck);
	if (ret) {
		free(c->path);
		free(c);
		return ret;
	}
	*out = c;
	return 0;
}

void gpo_ckpt_close(struct gpo_ckpt *c)
{
	if (!c)
		return;
	gpo__ckpt_free(c->ck);
	close(c->fd);
	free(c->path);
	free(c);
}

int gpo_ckpt_info(struct gpo_ckpt *c, struct gpo_ckpt_info *info)
{
	if (!c || !info)
		return gpo__err(-EINVAL, "gpo_ckpt_info: NULL argument");
	memset(info, 0, sizeof(*info));
	info->file_bytes = c->ck->file_size;
	info->header_bytes = c->ck->header_len;
	info->data_offset = c->ck->data_start;
	info->tensors = c->ck->ntensors;
	info->metadata = c->ck->nmeta;
	info->gpuopt = c->ck->gpuopt;
	return 0;
}

int gpo_ckpt_tensor(struct gpo_ckpt *c, int index,
		    struct gpo_ckpt_tensor *info)
{
	const struct ckpt_tensor *t;

	if (!c || !info)
		return gpo__err(-EINVAL, "gpo_ckpt_tensor: NULL argument");
	if (index < 0 || index >= c->ck->ntensors)
		return gpo__err(-ENOENT, "no tensor %d", index);
	t = &c->ck->t[index];
	memset(info, 0, sizeof(*info));
	info->name = t->name;
	info->dtype = gpo__ckpt_dtype_names[t->dtype];
	info->ndim = t->ndim;
	info->shape = t->shape;
	info->offset = c->ck->data_start + t->begin;
	info->bytes = t->end - t->begin;
	info->checksum = t->sum;
	info->has_checksum = t->has_sum;
	info->verified = t->verified;
	return 0;
}

int gpo_ckpt_metadata(struct gpo_ckpt *c, int index, const char **key,
		      const char **value)
{
	if (!c || !key || !value)
		return gpo__err(-EINVAL, "gpo_ckpt_metadata: NULL argument");
	if (index < 0 || index >= c->ck->nmeta)
		return gpo__err(-ENOENT, "no metadata entry %d", index);
	*key = c->ck->meta_key[index];
	*value = c->ck->meta_val[index];
	return 0;
}

int gpo_ckpt_verify(struct gpo_ckpt *c)
{
	struct sink sk = { 0 };
	int i, ret;

	if (!c)
		return gpo__err(-EINVAL, "gpo_ckpt_verify: NULL argument");
	for (i = 0; i < c->ck->ntensors; i++)
		c->ck->t[i].verified = 0;
	ret = stream_data(c->ck, c->fd, c->flags, &sk);
	if (ret)
		return path_err(ret, c->path);
	gpo__err_clear();
	return 0;
}
