// SPDX-License-Identifier: MIT
/*
 * tree_jobs.c - jobs/: mkdir makes a job, rmdir removes it, and the files
 * of jobs/<name>/ talk to the job through job_i.h
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fs_i.h"
#include "job_i.h"

int jobs_mkdir(struct fsd *fs, const char *name, uid_t uid, gid_t gid)
{
	return job_create(fs, name, uid, gid, NULL);
}

int jobs_rmdir(struct fsd *fs, const char *name, uid_t uid)
{
	struct job *j = job_lookup(fs, name);
	int ret;

	if (!j)
		return fs_err(-ENOENT, "no job '%s'", name);
	ret = job_remove(j, uid);
	job_put(j);
	return ret;
}

int jobs_dir_mtime(struct fs_node *n, struct timespec *ts)
{
	struct fsd *fs = n->fs;

	switch (n->dir) {
	case D_JOBS:
		pthread_mutex_lock(&fs->lock);
		*ts = fs->jobs_mtime;
		pthread_mutex_unlock(&fs->lock);
		return 0;
	case D_JOB:
		*ts = job_mtime(n->job, JOB_T_DIR);
		return 0;
	case D_PARAMS:
		*ts = job_mtime(n->job, JOB_T_PARAMS);
		return 0;
	case D_CHECKPOINTS:
		return job_ckpt_dir_mtime(n->job, ts);
	default:
		return -ENOENT;
	}
}

/* ---- text files ---------------------------------------------------------- */

static int cfg_file_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return job_config_show(n->job, sb);
}

static int cfg_file_store(struct fs_node *n, const char *text, uid_t uid)
{
	return job_config_store(n->job, text, uid);
}

static int ctl_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return gpo__sbuf_printf(sb, "start\npause\nresume\nstop\nstep N\n"
			   "checkpoint [NAME]\nrestore NAME [foreign]\nreset\n"
			   "sample N [PROMPT]\n");
}

static int ctl_store(struct fs_node *n, const char *text, uid_t uid)
{
	return job_ctl(n->job, text, uid);
}

static int state_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct job_snapshot s;

	job_snapshot(n->job, &s);
	return gpo__sbuf_printf(sb, "%s\n", job_state_name(s.state));
}

static void put_double(struct gpo__sbuf *sb, const char *key, double v)
{
	gpo__sbuf_printf(sb, "%s %.9g\n", key, v);
}

static int stat_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct job_snapshot s;
	int i;

	job_snapshot(n->job, &s);
	gpo__sbuf_printf(sb, "state %s\nstep %llu\n", job_state_name(s.state),
		    (unsigned long long)s.step);
	if (s.max_steps == MAX_STEPS_UNLIMITED)
		gpo__sbuf_printf(sb, "max_steps max\n");
	else
		gpo__sbuf_printf(sb, "max_steps %llu\n",
			    (unsigned long long)s.max_steps);
	put_double(sb, "loss", s.loss);
	put_double(sb, "lr", s.lr);
	/* "-": nothing measured it (no clipping, no step yet) */
	if (isnan(s.grad_norm))
		gpo__sbuf_printf(sb, "grad_norm -\n");
	else
		put_double(sb, "grad_norm", s.grad_norm);
	gpo__sbuf_printf(sb, "skipped %llu\nsteps_per_sec %.2f\nelapsed_s %.3f\n",
		    (unsigned long long)s.skipped, s.steps_per_sec,
		    s.elapsed_s);
	gpo__sbuf_printf(sb, "eta_s %.3f\n", s.eta_s);
	gpo__sbuf_printf(sb,
		    "device %s\noptimizer %s\nmodel %s\nparams %llu\n"
		    "param_bytes %llu\n", s.device, s.optimizer, s.model,
		    (unsigned long long)s.params,
		    (unsigned long long)s.param_bytes);
	/* the precision mode and where the loss scale stands (1: off) */
	put_double(sb, "loss_scale", s.loss_scale);
	gpo__sbuf_printf(sb, "param_dtype %s\nstate_dtype %s\nmaster_weights %d\n",
			 gpo_dtype_name(s.param_dtype),
			 gpo_dtype_name(s.state_dtype), s.master_weights);
	gpo__sbuf_printf(sb, "worker_pid %d\nrestarts %llu\nranks %llu\n",
		    s.worker_pid, (unsigned long long)s.restarts,
		    (unsigned long long)s.ranks);
	/* data parallel: where each rank runs and how the ranks reduce */
	gpo__sbuf_printf(sb, "rank_devices %s\nshards %llu\ndeterministic %d\n"
			 "zero %d\noverlap %d\nbucket_bytes %llu\ntimeout %u\n",
			 s.rank_devices, (unsigned long long)s.shards,
			 s.deterministic, s.zero, s.overlap,
			 (unsigned long long)s.bucket_bytes, s.comm_timeout);
	/* a model kind's own numbers: epoch, eval_loss, accuracy... */
	for (i = 0; i < s.nextra; i++)
		put_double(sb, s.extra[i].name, s.extra[i].value);
	return sb->err;
}

static int loss_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct job_snapshot s;

	job_snapshot(n->job, &s);
	return gpo__sbuf_printf(sb, "%.9g\n", s.loss);
}

static int loss_store(struct fs_node *n, const char *text, uid_t uid)
{
	return job_loss_store(n->job, text, uid);
}

static int error_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return job_error_show(n->job, sb);
}

/* ---- events and history.csv: append-only --------------------------------- */

static int log_read(struct fs_handle *h, char *buf, size_t size, off_t off)
{
	int n = job_log_read(h->node.job, h->node.file->arg, buf, size, off);

	if (n > 0 && off + n > h->read_pos)
		h->read_pos = off + n;
	return n;
}

static off_t log_size(struct fs_node *n)
{
	return job_log_size(n->job, n->file->arg);
}

static struct timespec log_mtime(struct fs_node *n)
{
	return job_mtime(n->job, n->file->arg == LOG_EVENTS ? JOB_T_EVENTS :
			 JOB_T_HISTORY);
}

#define MTIME_OF(name, which)						\
static struct timespec name(struct fs_node *n)				\
{									\
	return job_mtime(n->job, which);				\
}
MTIME_OF(config_mtime, JOB_T_CONFIG)
MTIME_OF(state_mtime, JOB_T_STATE)
MTIME_OF(stat_mtime, JOB_T_STAT)
MTIME_OF(error_mtime, JOB_T_ERROR)
MTIME_OF(params_mtime, JOB_T_PARAMS)
MTIME_OF(sample_mtime, JOB_T_SAMPLE)
#undef MTIME_OF

static unsigned int log_poll(struct fs_handle *h, struct fuse_pollhandle *ph)
{
	if (job_log_poll(h->node.job, h->node.file->arg, h->read_pos, ph))
		return POLLIN | POLLRDNORM;
	return 0;
}

/* ---- params and grad: binary --------------------------------------------- */

static int tensor_read(struct fs_handle *h, char *buf, size_t size,
		       off_t off)
{
	struct model_tensor t;
	int ret;

	if (off == 0 || !h->have_snap) {
		ret = job_tensor_info(h->node.job, h->node.tensor, &t);
		if (!ret)
			ret = gpo__sbuf_resize(&h->snap, t.numel * sizeof(float));
		if (!ret)
			ret = job_params_read(h->node.job, h->node.tensor,
					      h->snap.buf, h->snap.len);
		if (ret)
			return ret;
		h->have_snap = 1;
	}
	return gpo__sbuf_read(&h->snap, buf, size, off);
}

static int grad_read(struct fs_handle *h, char *buf, size_t size, off_t off)
{
	int ret;

	if (off == 0 || !h->have_snap) {
		ret = gpo__sbuf_resize(&h->snap, job_grad_bytes(h->node.job));
		if (!ret)
			ret = job_grad_read(h->node.job, h->snap.buf,
					    h->snap.len);
		if (ret)
			return ret;
		h->have_snap = 1;
	}
	return gpo__sbuf_read(&h->snap, buf, size, off);
}

static void stage_drop(struct fs_handle *h)
{
	free(h->stage);
	if (h->stage_id)
		job_grad_unstage(h->node.job, h->stage_id);
	h->stage = NULL;
	h->stage_id = 0;
	h->stage_len = 0;
	h->stage_total = 0;
	h->stage_gen = 0;
}

/*
 * Binary files take one whole value, in one write or in writes at
 * increasing offsets (the kernel splits a large write() that way). The
 * value is used when the last byte arrives; anything out of order or past
 * the end is refused and forgets what came before. The bytes staged so far
 * belong to the model they were begun under: a model change in between
 * (another size, or the same size meaning other tensors) makes them
 * stale, and the next write fails with ESTALE instead of landing in a
 * buffer of another size. A gradient (@in_place) is staged straight in
 * the job's shared memory where it can be (job_grad_claim()); *whole then
 * stays NULL and *done says it is complete.
 */
static int stage(struct fs_handle *h, const char *buf, size_t size,
		 off_t off, size_t total, int in_place, const char **whole,
		 int *done)
{
	struct job *j = h->node.job;
	uint64_t gen = job_model_gen(j);
	int ret;

	*whole = NULL;
	*done = 0;
	if ((h->stage || h->stage_id) &&
	    (h->stage_total != total || h->stage_gen != gen)) {
		stage_drop(h);
		return fs_err(-ESTALE,
			      "the model changed during a write in parts (nothing applied; write the whole value again)");
	}
	if ((size_t)off != h->stage_len) {
		stage_drop(h);
		return fs_err(-EINVAL,
			      "out of order: a write at offset %lld, expected %zu (nothing applied)",
			      (long long)off, h->stage_len);
	}
	if (size > total - h->stage_len) {
		stage_drop(h);
		return fs_err(-EINVAL,
			      "too long: %llu bytes, the value is %zu (nothing applied)",
			      (unsigned long long)(off + size), total);
	}
	if (off == 0 && size == total) {
		*whole = buf;
		return 0;
	}
	if (!h->stage && !h->stage_id) {
		ret = in_place ? job_grad_claim(j, gen, total, &h->stage_id) :
		      -EAGAIN;
		if (ret == -ESTALE)
			return fs_err(-ESTALE,
				      "the model changed during a write in parts (nothing applied; write the whole value again)");
		if (ret) {
			h->stage = malloc(total ? total : 1);
			if (!h->stage)
				return fs_err(-ENOMEM, "out of memory");
		}
		h->stage_total = total;
		h->stage_gen = gen;
	}
	if (h->stage_id) {
		ret = job_grad_put(j, h->stage_id, h->stage_len, buf, size);
		if (ret) {
			stage_drop(h);
			return ret;
		}
	} else {
		memcpy(h->stage + h->stage_len, buf, size);
	}
	h->stage_len += size;
	if (h->stage_len == total) {
		*done = 1;
		if (!h->stage_id)
			*whole = h->stage;
	}
	return 0;
}

static int tensor_write(struct fs_handle *h, const char *buf, size_t size,
			off_t off, uid_t uid)
{
	struct model_tensor t;
	const char *whole;
	int ret, done;

	ret = job_tensor_info(h->node.job, h->node.tensor, &t);
	if (!ret)
		ret = stage(h, buf, size, off, t.numel * sizeof(float), 0,
			    &whole, &done);
	if (!ret && whole) {
		ret = job_params_write(h->node.job, h->node.tensor, whole,
				       t.numel * sizeof(float));
		stage_drop(h);
	}
	return ret;
}

static int grad_write(struct fs_handle *h, const char *buf, size_t size,
		      off_t off, uid_t uid)
{
	size_t total = job_grad_bytes(h->node.job);
	const char *whole;
	int ret, done;

	ret = stage(h, buf, size, off, total, 1, &whole, &done);
	if (!ret && whole)
		ret = job_grad_step(h->node.job, whole, total);
	else if (!ret && done)
		ret = job_grad_step_staged(h->node.job, h->stage_id, total);
	if (ret || whole || done)
		stage_drop(h);
	return ret;
}

static int stage_flush(struct fs_handle *h, uid_t uid)
{
	size_t got = h->stage_len, total = h->stage_total;

	if (!got)
		return 0;
	stage_drop(h);
	return fs_err(-EINVAL,
		      "short write: %zu of %zu bytes (nothing applied)", got,
		      total);
}

static off_t tensor_size(struct fs_node *n)
{
	struct model_tensor t;

	if (job_tensor_info(n->job, n->tensor, &t))
		return 0;
	return t.numel * sizeof(float);
}

static off_t grad_size(struct fs_node *n)
{
	return job_grad_bytes(n->job);
}

static int index_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct model_tensor t;
	char shape[200];
	int i, count = job_tensor_count(n->job);

	for (i = 0; i < count; i++) {
		if (job_tensor_info(n->job, i, &t))
			break;
		model_shape_text(&t, shape, sizeof(shape));
		gpo__sbuf_printf(sb, "%s float32 %s %llu\n", t.name, shape,
			    (unsigned long long)t.numel * 4);
	}
	return sb->err;
}

/* ---- sample: a gpt's generated bytes, as they are ----------------------- */

static int sample_read(struct fs_handle *h, char *buf, size_t size, off_t off)
{
	int ret;

	if (off == 0 || !h->have_snap) {
		ret = job_sample_copy(h->node.job, &h->snap);
		if (ret)
			return ret;
		h->have_snap = 1;
	}
	return gpo__sbuf_read(&h->snap, buf, size, off);
}

static off_t sample_size(struct fs_node *n)
{
	return job_sample_size(n->job);
}

/* ---- checkpoints/: files of the state directory, read-only --------------- */

/*
 * A checkpoint is opened for each read, not held by the handle: open
 * handles then cost the daemon no fd, and one user's thousands of them
 * cannot make anyone's checkpoint fail with EMFILE.
 */
static int ckpt_open(struct fs_handle *h)
{
	struct stat st;
	int fd = job_ckpt_open(h->node.job, h->node.ckpt, &st);

	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

static int ckpt_read(struct fs_handle *h, char *buf, size_t size, off_t off)
{
	struct stat st;
	ssize_t n;
	int fd;

	fd = job_ckpt_open(h->node.job, h->node.ckpt, &st);
	if (fd < 0)
		return fd;
	n = pread(fd, buf, size, off);
	if (n < 0)
		n = -errno;
	close(fd);
	return (int)n;
}

static off_t ckpt_size(struct fs_node *n)
{
	struct stat st;
	int fd = job_ckpt_open(n->job, n->ckpt, &st);

	if (fd < 0)
		return 0;
	close(fd);
	return st.st_size;
}

static struct timespec ckpt_mtime(struct fs_node *n)
{
	struct timespec t = { 0 };
	struct stat st;
	int fd = job_ckpt_open(n->job, n->ckpt, &st);

	if (fd < 0)
		return t;
	close(fd);
	return st.st_mtim;
}

const struct fs_file checkpoint_file = {
	.name = "", .mode = 0444, .flags = F_PRIVATE, .open = ckpt_open,
	.read_at = ckpt_read, .size = ckpt_size, .mtime = ckpt_mtime,
};

const struct fs_file params_index_file = {
	.name = "index", .mode = 0444, .flags = F_PRIVATE, .show = index_show,
	.mtime = config_mtime,
};

const struct fs_file params_tensor_file = {
	.name = "", .mode = 0600, .flags = F_PRIVATE, .read_at = tensor_read,
	.write_at = tensor_write, .flush = stage_flush, .size = tensor_size,
	.mtime = params_mtime,
};

const struct fs_file job_files[] = {
	{ .name = "config", .mode = 0644, .flags = F_LINES, .show = cfg_file_show,
	  .store = cfg_file_store, .mtime = config_mtime },
	{ .name = "ctl", .mode = 0644, .show = ctl_show, .store = ctl_store },
	{ .name = "state", .mode = 0444, .show = state_show,
	  .mtime = state_mtime },
	{ .name = "stat", .mode = 0444, .show = stat_show,
	  .mtime = stat_mtime },
	{ .name = "history.csv", .mode = 0444, .flags = F_STREAM,
	  .arg = LOG_HISTORY, .read_at = log_read, .size = log_size,
	  .mtime = log_mtime, .poll = log_poll },
	{ .name = "events", .mode = 0444, .flags = F_STREAM, .arg = LOG_EVENTS,
	  .read_at = log_read, .size = log_size, .mtime = log_mtime,
	  .poll = log_poll },
	{ .name = "loss", .mode = 0644, .show = loss_show, .store = loss_store,
	  .mtime = stat_mtime },
	{ .name = "error", .mode = 0444, .show = error_show,
	  .mtime = error_mtime },
	{ .name = "grad", .mode = 0600, .flags = F_PRIVATE,
	  .read_at = grad_read, .write_at = grad_write, .flush = stage_flush,
	  .size = grad_size, .mtime = params_mtime },
	/* the model's output tells its training data: the owner's */
	{ .name = "sample", .mode = 0444, .flags = F_PRIVATE,
	  .read_at = sample_read, .size = sample_size,
	  .mtime = sample_mtime },
	{ .name = NULL },
};
