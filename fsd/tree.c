// SPDX-License-Identifier: MIT
/*
 * tree.c - path lookup and the rules every file of the tree follows
 *
 * A path resolves to a node: a directory kind, or a file of one of the
 * tables in tree_*.c. Text files are made fresh by a read at offset 0 and
 * served from that copy at other offsets, so a reader with any buffer size
 * sees one consistent text; append-only files (events, history.csv) are
 * read at offsets as they grow. A write to a text file is one whole value
 * at offset 0. A failed write returns its errno and leaves its reason in
 * error_log and, under a job, in the job's error file.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "fs_i.h"
#include "job_i.h"

#define WRITE_MAX (256u << 10)		/* bytes of one text value */
#define LINE_MAX_BYTES (1u << 20)	/* of one line of an F_LINES file */

static struct fsd *fs_get(void)
{
	return fuse_get_context()->private_data;
}

static uid_t caller_uid(void)
{
	return fuse_get_context()->uid;
}

static int is_admin(struct fsd *fs, uid_t uid)
{
	return uid == 0 || uid == fs->admin_uid;
}

int fs_parse_u64(const char *text, uint64_t *out)
{
	char num[64];
	size_t n = strlen(text);

	if (n && text[n - 1] == '\n')
		n--;
	if (n >= sizeof(num))
		return -EINVAL;
	memcpy(num, text, n);
	num[n] = '\0';
	return gpo__parse_u64(num, out);
}

const struct fs_file *fs_file_find(const struct fs_file *table,
				   const char *name)
{
	for (; table->name; table++)
		if (!strcmp(table->name, name))
			return table;
	return NULL;
}

/* ---- lookup -------------------------------------------------------------- */

static void node_put(struct fs_node *n)
{
	job_put(n->job);
	n->job = NULL;
}

static int parse_index(struct fsd *fs, const char *name, int *out)
{
	uint64_t v;
	int ret = 0;

	if (fs_parse_u64(name, &v) || strchr(name, '\n') ||
	    (name[0] == '0' && name[1]))
		return -ENOENT;
	pthread_rwlock_rdlock(&fs->ctx_lock);
	if (v >= (uint64_t)fs->ndevs)
		ret = -ENOENT;
	pthread_rwlock_unlock(&fs->ctx_lock);
	*out = (int)v;
	return ret;
}

static int lookup_file(struct fs_node *n, const struct fs_file *table,
		       const char *name)
{
	n->file = fs_file_find(table, name);
	if (!n->file)
		return -ENOENT;
	n->dir = D_NONE;
	return 0;
}

/* the named subdirectories of the root and of a job, for lookup and ls */
struct subdir {
	const char *name;
	enum fs_dir dir;
};

static const struct subdir root_dirs[] = {
	{ "devices", D_DEVICES },
	{ "pools", D_POOLS },
	{ "jobs", D_JOBS },
	{ NULL },
};

static const struct subdir job_dirs[] = {
	{ "params", D_PARAMS },
	{ "checkpoints", D_CHECKPOINTS },
	{ NULL },
};

/* @name in a directory of the subdirectories @dirs and the files @files */
static int lookup_named(struct fs_node *n, const struct subdir *dirs,
			const struct fs_file *files, const char *name)
{
	for (; dirs->name; dirs++) {
		if (!strcmp(dirs->name, name)) {
			n->dir = dirs->dir;
			return 0;
		}
	}
	return lookup_file(n, files, name);
}

static int lookup_params(struct fs_node *n, const char *name)
{
	if (!strcmp(name, "index")) {
		n->file = &params_index_file;
	} else {
		n->tensor = job_tensor_find(n->job, name);
		if (n->tensor < 0)
			return -ENOENT;
		n->file = &params_tensor_file;
	}
	n->dir = D_NONE;
	return 0;
}

static int lookup_checkpoint(struct fs_node *n, const char *name)
{
	struct stat st;
	int fd;

	if (strlen(name) >= sizeof(n->ckpt))
		return -ENOENT;
	fd = job_ckpt_open(n->job, name, &st);
	if (fd < 0)
		return -ENOENT;
	close(fd);
	strcpy(n->ckpt, name);
	n->file = &checkpoint_file;
	n->dir = D_NONE;
	return 0;
}

static int lookup_child(struct fs_node *n, const char *name)
{
	switch (n->dir) {
	case D_ROOT:
		return lookup_named(n, root_dirs, root_files, name);
	case D_DEVICES:
	case D_POOLS:
		n->dir = n->dir == D_DEVICES ? D_DEVICE : D_POOL;
		return parse_index(n->fs, name, &n->index);
	case D_DEVICE:
		return lookup_file(n, device_files, name);
	case D_POOL:
		return lookup_file(n, pool_files, name);
	case D_JOBS:
		n->job = job_lookup(n->fs, name);
		n->dir = D_JOB;
		return n->job ? 0 : -ENOENT;
	case D_JOB:
		return lookup_named(n, job_dirs, job_files, name);
	case D_PARAMS:
		return lookup_params(n, name);
	case D_CHECKPOINTS:
		return lookup_checkpoint(n, name);
	default:
		return -ENOTDIR;
	}
}

static int resolve(struct fsd *fs, const char *path, struct fs_node *n)
{
	char buf[PATH_MAX], *name, *save = NULL;
	int ret = 0;

	memset(n, 0, sizeof(*n));
	n->fs = fs;
	n->dir = D_ROOT;
	n->index = -1;
	n->tensor = -1;
	snprintf(n->path, sizeof(n->path), "%s", path);
	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, path);
	for (name = strtok_r(buf, "/", &save); name;
	     name = strtok_r(NULL, "/", &save)) {
		if (n->dir == D_NONE)
			ret = -ENOTDIR;
		else
			ret = lookup_child(n, name);
		if (ret) {
			node_put(n);
			return ret;
		}
	}
	return 0;
}

/* resolve() for a path that must name a file, not a directory */
static int resolve_file(const char *path, struct fs_node *n)
{
	int ret = resolve(fs_get(), path, n);

	if (!ret && n->dir != D_NONE) {
		node_put(n);
		ret = -EISDIR;
	}
	return ret;
}

/* ---- attributes ---------------------------------------------------------- */

static mode_t dir_mode(enum fs_dir d)
{
	switch (d) {
	case D_JOBS:
		/* anyone makes jobs; sticky: only owners remove them */
		return 01777;
	case D_JOB:
		return 0755;
	case D_PARAMS:
	case D_CHECKPOINTS:
		return 0700;
	default:
		return 0555;
	}
}

/*
 * The size of the content a read would see now: tools trust it (test -s,
 * cmp, tail -f), so a text file is made to measure it.
 */
static off_t file_size(struct fs_node *n)
{
	struct gpo__sbuf sb;
	off_t size = 0;

	if (n->file->size)
		return n->file->size(n);
	if (!n->file->show)
		return 0;
	gpo__sbuf_init(&sb);
	if (!n->file->show(n, &sb) && !sb.err)
		size = sb.len;
	gpo__sbuf_free(&sb);
	return size;
}

static void node_stat(struct fs_node *n, struct stat *st)
{
	struct fsd *fs = n->fs;
	time_t t = time(NULL) - (gpo__now_ns() - fs->start_ns) / 1000000000ull;

	memset(st, 0, sizeof(*st));
	st->st_uid = n->job ? job_uid(n->job) : fs->admin_uid;
	st->st_gid = n->job ? job_gid(n->job) : fs->admin_gid;
	st->st_atime = st->st_mtime = st->st_ctime = t;
	st->st_blksize = 4096;
	if (n->dir != D_NONE) {
		st->st_mode = S_IFDIR | dir_mode(n->dir);
		st->st_nlink = 2;
		if (!jobs_dir_mtime(n, &st->st_mtim))
			st->st_ctim = st->st_mtim;
		return;
	}
	st->st_mode = S_IFREG | n->file->mode;
	st->st_nlink = 1;
	st->st_size = file_size(n);
	if (n->file->mtime)
		st->st_ctim = st->st_mtim = n->file->mtime(n);
}

static int fs_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	struct fs_node n;
	int ret;

	ret = resolve(fs_get(), path, &n);
	if (ret)
		return ret;
	node_stat(&n, st);
	node_put(&n);
	return 0;
}

/* ---- directories --------------------------------------------------------- */

struct fill {
	void *buf;
	fuse_fill_dir_t filler;
};

static void fill_name(void *arg, const char *name)
{
	struct fill *f = arg;

	f->filler(f->buf, name, NULL, 0, 0);
}

static void fill_table(struct fill *f, const struct fs_file *t)
{
	for (; t->name; t++)
		fill_name(f, t->name);
}

static void fill_dirs(struct fill *f, const struct subdir *d)
{
	for (; d->name; d++)
		fill_name(f, d->name);
}

static void fill_indices(struct fsd *fs, struct fill *f)
{
	char name[16];
	int i, n;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	n = fs->ndevs;
	pthread_rwlock_unlock(&fs->ctx_lock);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "%d", i);
		fill_name(f, name);
	}
}

static void fill_params(struct fs_node *n, struct fill *f)
{
	struct model_tensor t;
	int i, count = job_tensor_count(n->job);

	fill_name(f, "index");
	for (i = 0; i < count; i++)
		if (!job_tensor_info(n->job, i, &t))
			fill_name(f, t.name);
}

static int fs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct fill f = { buf, filler };
	struct fs_node n;
	int ret;

	ret = resolve(fs_get(), path, &n);
	if (ret)
		return ret;
	if (n.dir == D_NONE) {
		node_put(&n);
		return -ENOTDIR;
	}
	fill_name(&f, ".");
	fill_name(&f, "..");
	switch (n.dir) {
	case D_ROOT:
		fill_table(&f, root_files);
		fill_dirs(&f, root_dirs);
		break;
	case D_DEVICES:
	case D_POOLS:
		fill_indices(n.fs, &f);
		break;
	case D_DEVICE:
		fill_table(&f, device_files);
		break;
	case D_POOL:
		fill_table(&f, pool_files);
		break;
	case D_JOBS:
		job_list(n.fs, fill_name, &f);
		break;
	case D_JOB:
		fill_table(&f, job_files);
		fill_dirs(&f, job_dirs);
		break;
	case D_PARAMS:
		fill_params(&n, &f);
		break;
	case D_CHECKPOINTS:
		job_ckpt_list(n.job, fill_name, &f);
		break;
	default:
		break;
	}
	node_put(&n);
	return 0;
}

/* ---- errors -------------------------------------------------------------- */

static int report(struct fs_node *n, uid_t uid, const char *op, int err)
{
	const char *msg = fs_errmsg();

	if (err >= 0)
		return err;
	if (!*msg)
		msg = strerror(-err);
	fs_log_error(n->fs, uid, n->path, msg);
	if (n->job)
		job_note_error(n->job, msg);
	fs_debug(n->fs, "%s %s uid=%u: %s (%s)", op, n->path,
		 (unsigned int)uid, msg, strerror(-err));
	return err;
}

/* ---- files --------------------------------------------------------------- */

static struct fs_handle *handle_of(struct fuse_file_info *fi)
{
	return (struct fs_handle *)(uintptr_t)fi->fh;
}

static void handle_link(struct fs_handle *h)
{
	struct fsd *fs = h->node.fs;

	pthread_mutex_lock(&fs->lock);
	h->prev = NULL;
	h->next = fs->handles;
	if (fs->handles)
		fs->handles->prev = h;
	fs->handles = h;
	pthread_mutex_unlock(&fs->lock);
}

static void handle_unlink(struct fs_handle *h)
{
	struct fsd *fs = h->node.fs;

	pthread_mutex_lock(&fs->lock);
	if (h->prev)
		h->prev->next = h->next;
	else
		fs->handles = h->next;
	if (h->next)
		h->next->prev = h->prev;
	pthread_mutex_unlock(&fs->lock);
}

static int may_write(struct fs_node *n, uid_t uid)
{
	const struct fs_file *f = n->file;

	if (!f->store && !f->write_at)
		return fs_err(-EACCES, "read-only file");
	if ((f->flags & F_ADMIN) && !is_admin(n->fs, uid))
		return fs_err(-EACCES, "only root may write this file");
	if (n->job && uid != job_uid(n->job) && !is_admin(n->fs, uid))
		return fs_err(-EACCES, "job '%s' belongs to uid %u",
			      job_name(n->job), (unsigned int)job_uid(n->job));
	return 0;
}

static int may_read(struct fs_node *n, uid_t uid)
{
	const struct fs_file *f = n->file;

	if (!f->show && !f->read_at)
		return fs_err(-EACCES, "write-only file");
	if ((f->flags & F_PRIVATE) && n->job && uid != job_uid(n->job) &&
	    !is_admin(n->fs, uid))
		return fs_err(-EACCES, "job '%s' belongs to uid %u",
			      job_name(n->job), (unsigned int)job_uid(n->job));
	return 0;
}

/* a handle of a job removed since it was opened serves nothing more */
static int handle_alive(struct fs_handle *h)
{
	if (h->node.job && job_removed(h->node.job))
		return fs_err(-ENOENT, "job '%s' was removed",
			      job_name(h->node.job));
	return 0;
}

static int fs_open(const char *path, struct fuse_file_info *fi)
{
	struct fs_handle *h;
	struct fs_node n;
	uid_t uid = caller_uid();
	int acc = fi->flags & O_ACCMODE, ret;

	fs_err_clear();
	ret = resolve_file(path, &n);
	if (ret)
		return ret;
	if (acc != O_RDONLY)
		ret = may_write(&n, uid);
	if (!ret && acc != O_WRONLY)
		ret = may_read(&n, uid);
	if (ret) {
		node_put(&n);
		return ret;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		node_put(&n);
		return -ENOMEM;
	}
	h->node = n;
	h->fd = -1;
	pthread_mutex_init(&h->lock, NULL);
	gpo__sbuf_init(&h->snap);
	if (n.file->open) {
		ret = n.file->open(h);
		if (ret) {
			node_put(&h->node);
			pthread_mutex_destroy(&h->lock);
			free(h);
			return ret;
		}
	}
	handle_link(h);
	fi->fh = (uintptr_t)h;
	fi->direct_io = 1;
	fi->keep_cache = 0;
	return 0;
}

static void handle_free(struct fs_handle *h)
{
	if (h->fd >= 0)
		close(h->fd);
	gpo__sbuf_free(&h->snap);
	free(h->stage);
	if (h->stage_id)
		job_grad_unstage(h->node.job, h->stage_id);
	free(h->lines);
	node_put(&h->node);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

static int lines_flush(struct fs_handle *h, uid_t uid, int release);

static int fs_release(const char *path, struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	uid_t uid = caller_uid();

	/* a line its writer never closed: errors go to the logs only */
	if ((h->node.file->flags & F_LINES) && h->lines_len) {
		fs_err_clear();
		report(&h->node, uid, "release", lines_flush(h, uid, 1));
	}

	handle_unlink(h);
	handle_free(h);
	return 0;
}

void fs_close_all(struct fsd *fs)
{
	struct fs_handle *h;

	while ((h = fs->handles)) {
		handle_unlink(h);
		handle_free(h);
	}
}

static int read_locked(struct fs_handle *h, char *buf, size_t size,
		       off_t off)
{
	const struct fs_file *f = h->node.file;
	int ret;

	if (f->read_at)
		return f->read_at(h, buf, size, off);
	if (off == 0 || !h->have_snap) {
		gpo__sbuf_reset(&h->snap);
		h->have_snap = 0;
		ret = f->show(&h->node, &h->snap);
		if (!ret)
			ret = h->snap.err;
		if (ret)
			return ret;
		h->have_snap = 1;
	}
	return gpo__sbuf_read(&h->snap, buf, size, off);
}

static int fs_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	int ret;

	fs_err_clear();
	if (off < 0)
		return -EINVAL;
	ret = handle_alive(h);
	if (ret)
		return ret;
	pthread_mutex_lock(&h->lock);
	ret = read_locked(h, buf, size, off);
	pthread_mutex_unlock(&h->lock);
	return ret;
}

static int store_text(struct fs_handle *h, const char *buf, size_t size,
		      off_t off, uid_t uid)
{
	char *text;
	int ret;

	if (off != 0)
		return fs_err(-EINVAL,
			      "a write is one whole value at offset 0 (got offset %lld)",
			      (long long)off);
	if (size > WRITE_MAX)
		return fs_err(-EINVAL, "a value is at most %u bytes",
			      WRITE_MAX);
	if (memchr(buf, '\0', size))
		return fs_err(-EINVAL, "a value is text, without NUL bytes");
	text = malloc(size + 1);
	if (!text)
		return fs_err(-ENOMEM, "out of memory");
	memcpy(text, buf, size);
	text[size] = '\0';
	ret = h->node.file->store(&h->node, text, uid);
	free(text);
	return ret;
}

static void lines_drop(struct fs_handle *h)
{
	free(h->lines);
	h->lines = NULL;
	h->lines_len = 0;
}

/* apply @text (@len bytes of complete lines) as one all-or-nothing value */
static int lines_apply(struct fs_handle *h, const char *text, size_t len,
		       uid_t uid)
{
	char *copy = malloc(len + 1);
	int ret;

	if (!copy)
		return fs_err(-ENOMEM, "out of memory");
	memcpy(copy, text, len);
	copy[len] = '\0';
	ret = h->node.file->store(&h->node, copy, uid);
	free(copy);
	return ret;
}

/*
 * F_LINES files (config) take what shells write: a value in any number of
 * writes at increasing offsets, one line per write or one line across
 * many. The lines a write completes are applied together, all or nothing;
 * the incomplete last line waits for its newline or for close(2). A bad
 * line fails that write and forgets what was pending, so no part of it
 * applies later.
 */
static int store_lines(struct fs_handle *h, const char *buf, size_t size,
		       off_t off, uid_t uid)
{
	const char *nl;
	size_t keep;
	char *p;
	int ret;

	if ((uint64_t)off != h->lines_next) {
		lines_drop(h);
		return fs_err(-EINVAL,
			      "a write at offset %lld, expected offset %llu (writes to one open file continue where the last ended; nothing applied)",
			      (long long)off,
			      (unsigned long long)h->lines_next);
	}
	if (memchr(buf, '\0', size)) {
		lines_drop(h);
		return fs_err(-EINVAL, "a value is text, without NUL bytes");
	}
	nl = memrchr(buf, '\n', size);
	if (h->lines_len + (nl ? 0 : size) > LINE_MAX_BYTES ||
	    (nl && h->lines_len + (size_t)(nl - buf) > LINE_MAX_BYTES)) {
		lines_drop(h);
		return fs_err(-EINVAL, "a line is at most %u bytes",
			      LINE_MAX_BYTES);
	}
	p = realloc(h->lines, h->lines_len + size + 1);
	if (!p)
		return fs_err(-ENOMEM, "out of memory");
	h->lines = p;
	memcpy(h->lines + h->lines_len, buf, size);
	h->lines_len += size;
	h->lines_next += size;
	h->lines_pid = fuse_get_context()->pid;
	if (!nl)
		return 0;
	keep = size - (size_t)(nl - buf) - 1;
	ret = lines_apply(h, h->lines, h->lines_len - keep, uid);
	if (ret) {
		/* a failed write moves no file position */
		h->lines_next -= size;
		lines_drop(h);
		return ret;
	}
	memmove(h->lines, h->lines + h->lines_len - keep, keep);
	h->lines_len = keep;
	return 0;
}

/*
 * close(2) by the writer: a last line without its newline is applied now,
 * and close returns its error. A close by another process sharing the fd
 * (a child the writer forked, closing it at exec) leaves the line to its
 * writer, or to the release of the handle.
 */
static int lines_flush(struct fs_handle *h, uid_t uid, int release)
{
	int ret = 0;

	if (!h->lines_len)
		return 0;
	if (!release && fuse_get_context()->pid != h->lines_pid)
		return 0;
	ret = lines_apply(h, h->lines, h->lines_len, uid);
	lines_drop(h);
	return ret;
}

static int fs_write(const char *path, const char *buf, size_t size,
		    off_t off, struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	const struct fs_file *f = h->node.file;
	uid_t uid = caller_uid();
	int ret;

	fs_err_clear();
	ret = may_write(&h->node, uid);
	if (!ret)
		ret = handle_alive(h);
	if (!ret) {
		pthread_mutex_lock(&h->lock);
		if (f->write_at)
			ret = f->write_at(h, buf, size, off, uid);
		else if (f->flags & F_LINES)	/* ">>" goes on at the end */
			ret = store_lines(h, buf, size,
					  fi->flags & O_APPEND ?
					  (off_t)h->lines_next : off, uid);
		else	/* "echo >>" writes at the size: still one value */
			ret = store_text(h, buf, size,
					 fi->flags & O_APPEND ? 0 : off, uid);
		h->have_snap = 0;
		pthread_mutex_unlock(&h->lock);
	}
	if (ret)
		return report(&h->node, uid, "write", ret);
	fs_debug(h->node.fs, "write %s uid=%u: %zu bytes at %lld", path,
		 (unsigned int)uid, size, (long long)off);
	return size;
}

static int fs_flush(const char *path, struct fuse_file_info *fi)
{
	struct fs_handle *h = handle_of(fi);
	uid_t uid = caller_uid();

	int ret;

	fs_err_clear();
	if (!h->node.file->flush && !(h->node.file->flags & F_LINES))
		return 0;
	pthread_mutex_lock(&h->lock);
	if (h->node.file->flags & F_LINES)
		ret = lines_flush(h, uid, 0);
	else
		ret = h->node.file->flush(h, uid);
	h->have_snap = 0;
	pthread_mutex_unlock(&h->lock);
	return report(&h->node, uid, "close", ret);
}

static int fs_truncate(const char *path, off_t size,
		       struct fuse_file_info *fi)
{
	struct fs_node n;
	int ret;

	fs_err_clear();
	ret = resolve_file(path, &n);
	if (ret)
		return ret;
	ret = may_write(&n, caller_uid());
	/* "echo x > file" truncates first: that is no change */
	if (!ret && size != 0)
		ret = fs_err(-EINVAL, "files of the tree cannot be resized");
	node_put(&n);
	return ret;
}

static int fs_poll(const char *path, struct fuse_file_info *fi,
		   struct fuse_pollhandle *ph, unsigned int *reventsp)
{
	struct fs_handle *h = handle_of(fi);

	if (h->node.file->poll) {
		pthread_mutex_lock(&h->lock);
		*reventsp = h->node.file->poll(h, ph);
		pthread_mutex_unlock(&h->lock);
		return 0;
	}
	if (ph)
		fuse_pollhandle_destroy(ph);
	*reventsp = POLLIN | POLLRDNORM | POLLOUT | POLLWRNORM;
	return 0;
}

static int fs_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	struct fs_node n;
	int ret;

	ret = resolve(fs_get(), path, &n);
	node_put(&n);
	return ret;
}

/* ---- jobs/: mkdir and rmdir ---------------------------------------------- */

static int split_parent(const char *path, char *parent, size_t len,
			const char **name)
{
	const char *slash = strrchr(path, '/');

	if (!slash || (size_t)(slash - path) >= len)
		return -ENOENT;
	memcpy(parent, path, slash - path);
	parent[slash - path] = '\0';
	*name = slash + 1;
	return 0;
}

static int dir_op(const char *path, int make)
{
	struct fuse_context *c = fuse_get_context();
	struct fsd *fs = fs_get();
	char parent[PATH_MAX];
	struct fs_node n, target;
	const char *name;
	int ret;

	fs_err_clear();
	ret = split_parent(path, parent, sizeof(parent), &name);
	if (!ret)
		ret = resolve(fs, parent, &n);
	if (ret)
		return ret;
	if (n.dir != D_JOBS)
		ret = fs_err(-EPERM, "directories are made only in jobs/");
	else if (make)
		ret = jobs_mkdir(fs, name, c->uid, c->gid);
	else
		ret = jobs_rmdir(fs, name, c->uid);
	if (!ret) {
		fs_debug(fs, "%s %s uid=%u", make ? "mkdir" : "rmdir", path,
			 (unsigned int)c->uid);
		node_put(&n);
		return 0;
	}
	/* the reason goes to the job's error file too, if there is one */
	if (make || resolve(fs, path, &target))
		target = n;
	else
		node_put(&n);
	snprintf(target.path, sizeof(target.path), "%s", path);
	report(&target, c->uid, make ? "mkdir" : "rmdir", ret);
	node_put(&target);
	return ret;
}

static int fs_mkdir(const char *path, mode_t mode)
{
	return dir_op(path, 1);
}

static int fs_rmdir(const char *path)
{
	return dir_op(path, 0);
}

static int fs_refuse(void)
{
	return -EPERM;
}

static int fs_unlink(const char *path)
{
	return fs_refuse();
}

static int fs_rename(const char *from, const char *to, unsigned int flags)
{
	return fs_refuse();
}

static int fs_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	return fs_refuse();
}

static int fs_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	return fs_refuse();
}

static int fs_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fs_node n;
	int ret;

	/* O_CREAT of a file that exists is an open */
	ret = resolve(fs_get(), path, &n);
	if (ret)
		return -EACCES;
	node_put(&n);
	return fs_open(path, fi);
}

static int fs_mknod(const char *path, mode_t mode, dev_t rdev)
{
	return -EACCES;
}

static void *fs_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	/* the tree changes under the kernel: cache nothing */
	cfg->entry_timeout = 0;
	cfg->negative_timeout = 0;
	cfg->attr_timeout = 0;
	cfg->direct_io = 1;
	cfg->kernel_cache = 0;
	cfg->auto_cache = 0;
	cfg->hard_remove = 1;
	cfg->use_ino = 0;
	fs_notify_ready(fs_get());
	return fs_get();
}

const struct fuse_operations fs_ops = {
	.init = fs_init,
	.getattr = fs_getattr,
	.readdir = fs_readdir,
	.open = fs_open,
	.create = fs_create,
	.mknod = fs_mknod,
	.release = fs_release,
	.read = fs_read,
	.write = fs_write,
	.flush = fs_flush,
	.truncate = fs_truncate,
	.poll = fs_poll,
	.utimens = fs_utimens,
	.mkdir = fs_mkdir,
	.rmdir = fs_rmdir,
	.unlink = fs_unlink,
	.rename = fs_rename,
	.chmod = fs_chmod,
	.chown = fs_chown,
};
