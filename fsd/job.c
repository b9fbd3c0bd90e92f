// SPDX-License-Identifier: MIT
/*
 * job.c - optimizer jobs: state machine, runner thread, params and grads
 *
 * Locks, always taken in this order:
 *   job->opt_lock   a fair (FIFO) lock around every call on the job's
 *                   optimizer, so a reader of params waits at most one step
 *   job->lock       state, config, statistics, logs
 *   fs->lock        the job list and daemon counters
 * A step runs with opt_lock only, so stat and events never wait for one.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <syslog.h>
#include "fs_i.h"
#include "job_i.h"

#define HISTORY_HEADER "step,loss,lr,grad_norm,elapsed_s\n"
#define POLLERS_MAX 64

struct fair_lock {
	pthread_mutex_t mutex;
	pthread_cond_t cond;
	unsigned long next;
	unsigned long serving;
};

struct job {
	struct fsd *fs;
	struct job *next;		/* fs->jobs, under fs->lock */
	char name[JOB_NAME_MAX + 1];
	uid_t uid;
	gid_t gid;
	int refs;			/* under fs->lock */
	int removed;			/* out of the list, under fs->lock */
	int gone;			/* by rmdir (not shutdown), fs->lock */

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* state, in_step, steps_left */
	struct job_config cfg;
	uint64_t model_gen;		/* counts model changes */
	double ext_loss;		/* external: written to loss, NaN if not */
	enum job_state state;
	uint64_t steps_left;		/* of a "step N" */
	int in_step;			/* steps under way */
	int quit;
	int has_runner;
	pthread_t runner;

	uint64_t step;
	uint64_t skipped;
	uint64_t steps_run;		/* by this daemon, for the rate */
	double loss;
	double lr;
	double grad_norm;
	double grad_scale;		/* as configured: there is no dynamic one */
	uint64_t active_ns;		/* time spent running or stepping */
	uint64_t run_since;		/* entered running, 0 when not */
	char dev_id[32];
	int dev_index;

	struct gpo__sbuf events;
	struct gpo__sbuf history;
	uint64_t history_step;		/* of the last row, 0 for none */
	int history_full;
	struct timespec mtime[JOB_TIMES];	/* see job_touch() */
	struct fuse_pollhandle *pollers[POLLERS_MAX];
	int npollers;
	char error[512];

	struct fair_lock opt_lock;
	struct gpo_optim *opt;
	struct gpo_sched *sched;
	uint64_t mem_bytes;		/* of opt, reserved for uid */
};

struct step_result {
	struct gpo_step_info info;
	double loss;
	uint64_t t0;
	uint64_t t1;
	int ret;
};

static const char *const state_names[JOB_STATES] = {
	"created", "running", "paused", "stopped", "done", "failed",
};

const char *job_state_name(enum job_state s)
{
	return s < JOB_STATES ? state_names[s] : "?";
}

/* ---- the fair lock ------------------------------------------------------- */

static void fair_init(struct fair_lock *l)
{
	pthread_mutex_init(&l->mutex, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->next = 0;
	l->serving = 0;
}

static void fair_destroy(struct fair_lock *l)
{
	pthread_mutex_destroy(&l->mutex);
	pthread_cond_destroy(&l->cond);
}

static void fair_lock(struct fair_lock *l)
{
	unsigned long ticket;

	pthread_mutex_lock(&l->mutex);
	ticket = l->next++;
	while (ticket != l->serving)
		pthread_cond_wait(&l->cond, &l->mutex);
	pthread_mutex_unlock(&l->mutex);
}

static void fair_unlock(struct fair_lock *l)
{
	pthread_mutex_lock(&l->mutex);
	l->serving++;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->mutex);
}

/* ---- logs ---------------------------------------------------------------- */

/*
 * j->lock held: the files of @mask changed now. The job's directory
 * changes with any of them, so `ls -t jobs` sorts by last activity.
 */
static void job_touch(struct job *j, unsigned int mask)
{
	struct timespec now;
	int i;

	clock_gettime(CLOCK_REALTIME, &now);
	mask |= JOB_T(JOB_T_DIR);
	for (i = 0; i < JOB_TIMES; i++)
		if (mask & JOB_T(i))
			j->mtime[i] = now;
}

static void notify_pollers(struct job *j)
{
	int i;

	for (i = 0; i < j->npollers; i++) {
		fuse_notify_poll(j->pollers[i]);
		fuse_pollhandle_destroy(j->pollers[i]);
	}
	j->npollers = 0;
}

/* job_event - append a line to events; j->lock held. uid -1: the daemon */
static void job_event(struct job *j, long uid, const char *fmt, ...)
	FS_PRINTF(3, 4);

static void job_event(struct job *j, long uid, const char *fmt, ...)
{
	char line[512], safe[1024], stamp[40], who[24];
	va_list ap;
	int n;

	if (j->events.len >= JOB_LOG_MAX)
		return;
	gpo__fmt_time(stamp, sizeof(stamp));
	if (uid < 0)
		snprintf(who, sizeof(who), "-");
	else
		snprintf(who, sizeof(who), "%ld", uid);
	n = snprintf(line, sizeof(line), "%s uid=%s ", stamp, who);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	/* names and values come from users: one line, no raw escapes */
	fs_escape(safe, sizeof(safe), line);
	gpo__sbuf_printf(&j->events, "%s\n", safe);
	job_touch(j, JOB_T(JOB_T_EVENTS));
	notify_pollers(j);
}

static void history_row(struct job *j)
{
	double el = j->active_ns / 1e9;

	if (j->run_since)
		el += (gpo__now_ns() - j->run_since) / 1e9;
	if (j->history.len >= JOB_LOG_MAX) {
		if (!j->history_full)
			job_event(j, -1, "history.csv is full (%u bytes)",
				  JOB_LOG_MAX);
		j->history_full = 1;
		return;
	}
	gpo__sbuf_printf(&j->history, "%llu,%.9g,%.9g,%.9g,%.3f\n",
		    (unsigned long long)j->step, j->loss, j->lr, j->grad_norm,
		    el);
	j->history_step = j->step;
	job_touch(j, JOB_T(JOB_T_HISTORY));
	if (j->npollers)
		notify_pollers(j);
}

static void set_state(struct job *j, enum job_state s, long uid)
{
	uint64_t now = gpo__now_ns();

	if (j->state == s)
		return;
	if (j->state == JOB_RUNNING && j->run_since) {
		j->active_ns += now - j->run_since;
		j->run_since = 0;
	}
	if (s == JOB_RUNNING)
		j->run_since = now;
	job_event(j, uid, "state %s -> %s step=%llu", job_state_name(j->state),
		  job_state_name(s), (unsigned long long)j->step);
	fs_journal_job(j->fs, j->name, j->uid,
		       s == JOB_FAILED ? LOG_ERR : LOG_INFO,
		       "%s -> %s at step %llu%s%s", job_state_name(j->state),
		       job_state_name(s), (unsigned long long)j->step,
		       s == JOB_FAILED && j->error[0] ? ": " : "",
		       s == JOB_FAILED ? j->error : "");
	j->state = s;
	job_touch(j, JOB_T(JOB_T_STATE) | JOB_T(JOB_T_STAT));
	/* a job that ends has its last step in history.csv, logged or not */
	if ((s == JOB_DONE || s == JOB_STOPPED || s == JOB_FAILED) &&
	    j->cfg.log_every && j->step && j->step != j->history_step)
		history_row(j);
	pthread_cond_broadcast(&j->cond);
}

static void set_error(struct job *j, const char *msg)
{
	fs_escape(j->error, sizeof(j->error), msg);
	job_touch(j, JOB_T(JOB_T_ERROR));
}

static int wrong_state(struct job *j, const char *verb)
{
	return fs_err(-EBUSY, "%s: the job is %s", verb,
		      job_state_name(j->state));
}

/* a set of job states, for in_state() */
#define STATE_BIT(s) (1u << (s))

/* j->lock held: 0 if the job is in one of @states, else -EBUSY for @verb */
static int in_state(struct job *j, const char *verb, unsigned int states)
{
	return states & STATE_BIT(j->state) ? 0 : wrong_state(j, verb);
}

void job_note_error(struct job *j, const char *msg)
{
	pthread_mutex_lock(&j->lock);
	set_error(j, msg);
	pthread_mutex_unlock(&j->lock);
}

/* @cfg: a copy of the job's config (config_free() it), taken under j->lock */
static int config_get(struct job *j, struct job_config *cfg)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = config_copy(cfg, &j->cfg);
	pthread_mutex_unlock(&j->lock);
	return ret;
}

/* ---- the optimizer ------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The start of a model: rosenbrock's classic point, a seeded random one
 * in [-2, 2) for quadratic, zeros for external models. */
static void model_init(const struct job_config *cfg, float *x)
{
	uint64_t i, n = cfg->model.numel, s = cfg->seed;

	for (i = 0; i < n; i++) {
		switch (cfg->model.kind) {
		case MODEL_ROSENBROCK:
			x[i] = i % 2 ? 1.0f : -1.2f;
			break;
		case MODEL_QUADRATIC:
			x[i] = (float)((splitmix64(&s) >> 40) * 0x1p-24 * 4 -
				       2);
			break;
		default:
			x[i] = 0;
			break;
		}
	}
}

static const char *objective_name(enum model_kind k)
{
	return k == MODEL_QUADRATIC ? "quadratic" :
	       k == MODEL_ROSENBROCK ? "rosenbrock" : NULL;
}

struct built {
	struct gpo_optim *opt;
	struct gpo_sched *sched;
	char dev_id[32];
	int dev_index;
	uid_t uid;
	uint64_t bytes;			/* reserved against the uid's limit */
};

static void built_free(struct fsd *fs, struct built *b)
{
	if (!b->opt)
		return;
	gpo_optim_attach_sched(b->opt, NULL);
	gpo_optim_free(b->opt);
	gpo_sched_free(b->sched);
	b->opt = NULL;
	b->sched = NULL;
	fs_mem_release(fs, b->uid, b->bytes);
	b->bytes = 0;
	pthread_mutex_lock(&fs->lock);
	fs->dev_users--;
	pthread_mutex_unlock(&fs->lock);
}

static int build_sched(const struct job_config *cfg, struct built *b)
{
	struct gpo__sbuf text;
	int ret;

	if (!config_uses_sched(cfg))
		return 0;
	ret = gpo_sched_new(cfg->schedule, &b->sched);
	if (ret)
		return fs_lib_err(ret);
	gpo__sbuf_init(&text);
	ret = config_sched_text(cfg, &text);
	if (!ret)
		ret = gpo_sched_configure(b->sched, text.buf ? text.buf : "");
	if (!ret)
		ret = gpo_optim_attach_sched(b->opt, b->sched);
	gpo__sbuf_free(&text);
	return ret ? fs_lib_err(ret) : 0;
}

static int build_params(const struct job_config *cfg, struct built *b,
			struct gpo_optim *old)
{
	size_t bytes = cfg->model.numel * sizeof(float);
	float *x;
	int ret;

	x = malloc(bytes);
	if (!x)
		return fs_err(-ENOMEM, "out of memory for %zu bytes of params",
			      bytes);
	if (old) {
		ret = gpo_optim_read(old, "param", NULL, x, bytes);
		if (ret)
			goto out_free;
	} else {
		model_init(cfg, x);
	}
	ret = gpo_optim_write(b->opt, "param", NULL, x, bytes);
out_free:
	free(x);
	return ret ? fs_lib_err(ret) : 0;
}

static int build_tensors(const struct job_config *cfg, struct built *b)
{
	const struct model *m = &cfg->model;
	struct gpo__sbuf text;
	int i, ret;

	for (i = 0; i < m->ntensors; i++) {
		ret = gpo_optim_add_tensor(b->opt, m->t[i].name, m->t[i].ndim,
					   m->t[i].shape, 0);
		if (ret < 0)
			return fs_lib_err(ret);
	}
	gpo__sbuf_init(&text);
	ret = config_hp_text(cfg, &text);
	if (!ret)
		ret = gpo_optim_configure(b->opt, -1, text.buf ? text.buf : "");
	gpo__sbuf_free(&text);
	return ret ? fs_lib_err(ret) : 0;
}

/*
 * Make the optimizer @cfg describes. Params come from @old when it holds
 * the same model (a device or optimizer change before the first step),
 * else from the model's start.
 */
static int build(struct fsd *fs, const struct job_config *cfg,
		 struct gpo_optim *old, struct built *b, uid_t uid)
{
	struct gpo_device_info info;
	struct gpo_device *dev;
	int ret;

	memset(b, 0, sizeof(*b));
	if (cfg->model.kind == MODEL_NONE)
		return fs_err(-EINVAL, "no model: write model=... to config");
	/* the limits are checked before a byte of it is touched */
	b->uid = uid;
	b->bytes = config_mem_bytes(cfg);
	ret = fs_mem_reserve(fs, uid, b->bytes);
	if (ret) {
		b->bytes = 0;
		return ret;
	}
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_select(fs->ctx, cfg->device, &dev);
	if (ret) {
		fs_lib_err(ret);
		goto out_unlock;
	}
	ret = gpo_optim_new(dev, cfg->optimizer, &b->opt);
	if (ret) {
		fs_lib_err(ret);
		fs_mem_release(fs, uid, b->bytes);
		goto out_unlock;
	}
	pthread_mutex_lock(&fs->lock);
	fs->dev_users++;
	pthread_mutex_unlock(&fs->lock);
	b->dev_index = gpo_device_index(dev);
	fs_device_seen(fs, b->dev_index, dev);
	gpo_device_info(fs->ctx, b->dev_index, &info);
	snprintf(b->dev_id, sizeof(b->dev_id), "%s", info.id);
	ret = build_tensors(cfg, b);
	if (!ret)
		ret = build_sched(cfg, b);
	if (!ret)
		ret = build_params(cfg, b, old);
	if (ret)
		built_free(fs, b);
out_unlock:
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret;
}

static void install(struct job *j, struct built *b)
{
	struct built old = { .opt = j->opt, .sched = j->sched,
			     .uid = j->uid, .bytes = j->mem_bytes };

	built_free(j->fs, &old);
	j->opt = b->opt;
	j->sched = b->sched;
	j->mem_bytes = b->bytes;
	pthread_mutex_lock(&j->lock);
	snprintf(j->dev_id, sizeof(j->dev_id), "%s", b->dev_id);
	j->dev_index = b->dev_index;
	pthread_mutex_unlock(&j->lock);
}

/* The optimizer, built on first need; opt_lock held. */
static int ensure_built(struct job *j)
{
	struct job_config cfg;
	struct built b;
	int ret;

	if (j->opt)
		return 0;
	/* a handle kept open after rmdir must not bring the memory back */
	if (job_removed(j))
		return fs_err(-ENOENT, "job '%s' was removed", j->name);
	ret = config_get(j, &cfg);
	if (ret)
		return ret;
	ret = build(j->fs, &cfg, NULL, &b, j->uid);
	config_free(&cfg);
	if (ret)
		return ret;
	install(j, &b);
	return 0;
}

/*
 * opt_lock held: the configured hyperparameters, from the next step. A
 * schedule then scales the configured lr.
 */
static int apply_hparams(struct job *j, const struct job_config *cfg)
{
	struct gpo__sbuf text;
	int ret;

	gpo__sbuf_init(&text);
	ret = config_hp_text(cfg, &text);
	if (!ret)
		ret = gpo_optim_configure(j->opt, -1, text.buf ? text.buf : "");
	if (!ret && j->sched)
		ret = gpo_optim_attach_sched(j->opt, j->sched);
	gpo__sbuf_free(&text);
	return ret ? fs_lib_err(ret) : 0;
}

/* ---- checkpoints ------------------------------------------------------------
 *
 * A job's checkpoints are STATE_DIR/<uid>/<name>/checkpoints/NAME.safetensors:
 * a job made again under the same name by the same user finds them after a
 * restart of the daemon, and no other user's job ever sees them. Unnamed
 * and automatic ones are step-<10 digits>, which keep_checkpoints prunes;
 * named ones stay until the job is removed.
 */

#define CKPT_SUFFIX ".safetensors"
#define CKPT_AUTO "step-"

static int job_dir(struct job *j, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/%u/%s", j->fs->state_dir,
			 (unsigned int)j->uid, j->name);

	if (n < 0 || (size_t)n >= len)
		return fs_err(-ENAMETOOLONG,
			      "the state directory's path is too long");
	return 0;
}

static int ckpt_dir(struct job *j, char *buf, size_t len)
{
	char dir[PATH_MAX];
	int ret, n;

	ret = job_dir(j, dir, sizeof(dir));
	if (ret)
		return ret;
	n = snprintf(buf, len, "%s/checkpoints", dir);
	if (n < 0 || (size_t)n >= len)
		return fs_err(-ENAMETOOLONG,
			      "the state directory's path is too long");
	return 0;
}

/* the job's checkpoint directory, never through a link; fd or -errno */
static int ckpt_dirfd(struct job *j, int create)
{
	return fs_state_dirfd(j->fs, j->uid, j->name, "checkpoints", create);
}

/* NAME or NAME.safetensors, NAME a plain name: the file's name, or 0 */
static int ckpt_file_name(const char *name, char *out, size_t len)
{
	size_t n = strlen(name), sl = strlen(CKPT_SUFFIX);
	char base[JOB_NAME_MAX + 1];

	if (n > sl && !strcmp(name + n - sl, CKPT_SUFFIX))
		n -= sl;
	if (!n || n > JOB_NAME_MAX)
		return 0;
	memcpy(base, name, n);
	base[n] = '\0';
	if (!job_name_valid(base))
		return 0;
	snprintf(out, len, "%s%s", base, CKPT_SUFFIX);
	return 1;
}

int job_ckpt_valid(const char *file)
{
	char name[JOB_NAME_MAX + sizeof(CKPT_SUFFIX)];

	return ckpt_file_name(file, name, sizeof(name)) && !strcmp(name, file);
}

static int ckpt_path(struct job *j, const char *name, char *buf, size_t len)
{
	char dir[PATH_MAX], file[JOB_NAME_MAX + sizeof(CKPT_SUFFIX)];
	int ret, n;

	if (!ckpt_file_name(name, file, sizeof(file)))
		return fs_err(-EINVAL,
			      "'%.64s' is not a plain name: 1-63 of A-Z a-z 0-9 _ . -, not starting with '.'",
			      name);
	ret = ckpt_dir(j, dir, sizeof(dir));
	if (ret)
		return ret;
	n = snprintf(buf, len, "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= len)
		return fs_err(-ENAMETOOLONG,
			      "the state directory's path is too long");
	return 0;
}

static int is_auto_ckpt(const char *name, void *arg)
{
	return !strncmp(name, CKPT_AUTO, strlen(CKPT_AUTO)) &&
	       job_ckpt_valid(name);
}

/* Keep the newest @keep automatic checkpoints (0: all). */
static void ckpt_prune(struct job *j, uint64_t keep)
{
	char dir[40], **names;
	int n, i, dfd;

	if (!keep)
		return;
	dfd = ckpt_dirfd(j, 0);
	if (dfd < 0)
		return;
	fs_fd_path(dfd, NULL, dir, sizeof(dir));
	/* the names carry the step, zero-padded: sorted is oldest first */
	n = gpo__dir_list(dir, is_auto_ckpt, NULL, NULL, &names);
	for (i = 0; i + (int)keep < n; i++)
		unlinkat(dfd, names[i], 0);
	if (n > 0)
		gpo__dir_free(names, n);
	close(dfd);
}

/* opt_lock held: save the optimizer as checkpoint @name */
static int ckpt_save(struct job *j, const char *name, long uid)
{
	char file[JOB_NAME_MAX + sizeof(CKPT_SUFFIX)], path[128];
	int ret, dfd;

	/* its files are gone with it: a later job of the name inherits none */
	if (job_removed(j))
		return fs_err(-ENOENT, "job '%s' was removed", j->name);
	if (!ckpt_file_name(name, file, sizeof(file)))
		return ckpt_path(j, name, path, sizeof(path));	/* the error */
	dfd = ckpt_dirfd(j, 1);
	if (dfd < 0)
		return fs_err(dfd, "the job's checkpoint directory: %s",
			      strerror(-dfd));
	fs_fd_path(dfd, file, path, sizeof(path));
	ret = gpo_optim_save(j->opt, path, 0);
	close(dfd);
	if (ret)
		return fs_lib_err(ret);
	pthread_mutex_lock(&j->lock);
	job_event(j, uid, "checkpoint %s at step %llu", strrchr(path, '/') + 1,
		  (unsigned long long)gpo_optim_steps_done(j->opt));
	pthread_mutex_unlock(&j->lock);
	return 0;
}

static void auto_name(struct job *j, char *buf, size_t len)
{
	snprintf(buf, len, CKPT_AUTO "%010llu",
		 (unsigned long long)gpo_optim_steps_done(j->opt));
}

/*
 * opt_lock held, after a step: the automatic checkpoint, if one is due.
 * Its failure is reported but does not stop the job.
 */
static void ckpt_auto(struct job *j, const struct gpo_step_info *si)
{
	uint64_t every = j->cfg.checkpoint_every;
	char name[32], msg[512];

	if (!every || si->skipped || si->step % every)
		return;
	auto_name(j, name, sizeof(name));
	if (ckpt_save(j, name, -1)) {
		snprintf(msg, sizeof(msg), "checkpoint %s: %s", name,
			 fs_errmsg());
		pthread_mutex_lock(&j->lock);
		set_error(j, msg);
		job_event(j, -1, "%s", msg);
		pthread_mutex_unlock(&j->lock);
		return;
	}
	ckpt_prune(j, j->cfg.keep_checkpoints);
}

static int ctl_checkpoint(struct job *j, const char *arg, uid_t uid)
{
	char name[32];
	int ret;

	fair_lock(&j->opt_lock);
	ret = ensure_built(j);
	if (!ret && !arg)
		auto_name(j, name, sizeof(name));
	if (!ret)
		ret = ckpt_save(j, arg ? arg : name, uid);
	if (!ret && !arg)
		ckpt_prune(j, j->cfg.keep_checkpoints);
	fair_unlock(&j->opt_lock);
	return ret;
}

/*
 * restore NAME [foreign]: "foreign" lets the library read a safetensors
 * file gpuopt did not write (no gpuopt metadata or checksums), matched to
 * the optimizer by its tensors' names, shapes and dtypes alone.
 */
static int ctl_restore(struct job *j, const char *arg, const char *how,
		       uid_t uid)
{
	char path[PATH_MAX + 80], file[JOB_NAME_MAX + sizeof(CKPT_SUFFIX)];
	unsigned int flags = 0;
	struct stat st;
	uint64_t step;
	int ret, dfd, fd = -1;

	if (!arg)
		return fs_err(-EINVAL, "restore NAME: a name is needed");
	if (how && strcmp(how, "foreign"))
		return fs_err(-EINVAL,
			      "restore NAME [foreign]: '%.32s' is not foreign",
			      how);
	if (how)
		flags |= GPO_CKPT_FOREIGN;
	ret = ckpt_path(j, arg, path, sizeof(path));
	if (ret)
		return ret;
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	ret = j->state == JOB_RUNNING || j->in_step ?
	      wrong_state(j, "restore") : 0;
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = ensure_built(j);
	if (!ret) {
		/* only a regular file, never through a link, never blocking */
		ckpt_file_name(arg, file, sizeof(file));
		dfd = ckpt_dirfd(j, 0);
		fd = dfd < 0 ? dfd : fs_state_open_file(dfd, file, &st);
		if (dfd >= 0)
			close(dfd);
		if (fd < 0)
			ret = fs_err(-ENOENT, "restore: no checkpoint '%s'",
				     arg);
		else
			fs_fd_path(fd, NULL, path, sizeof(path));
	}
	if (!ret) {
		ret = gpo_optim_restore(j->opt, path, flags);
		if (ret == -ENODATA && !how)
			fs_err(ret, "%s (write 'restore %s foreign' to read it anyway)",
			       gpo_errmsg(), arg);
		else if (ret)
			fs_lib_err(ret);
	}
	/* config stays the truth about hyperparameters */
	if (!ret)
		ret = apply_hparams(j, &j->cfg);
	if (!ret) {
		step = gpo_optim_steps_done(j->opt);
		pthread_mutex_lock(&j->lock);
		j->step = step;
		j->loss = NAN;
		j->grad_norm = NAN;
		gpo_optim_get(j->opt, -1, "lr", &j->lr);
		job_event(j, uid, "restored %s%s at step %llu", file, how ? " (foreign)" : "",
			  (unsigned long long)step);
		job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
		set_state(j, step ? JOB_PAUSED : JOB_CREATED, uid);
		pthread_mutex_unlock(&j->lock);
	}
	fair_unlock(&j->opt_lock);
	if (fd >= 0)
		close(fd);
	return ret;
}

static int is_regular(int dfd, const struct dirent *d)
{
	struct stat st;

	if (d->d_type != DT_UNKNOWN)
		return d->d_type == DT_REG;
	return !fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
	       S_ISREG(st.st_mode);
}

int job_ckpt_list(struct job *j, void (*fn)(void *arg, const char *name),
		  void *arg)
{
	struct dirent *d;
	DIR *dp;
	int dfd;

	dfd = ckpt_dirfd(j, 0);
	if (dfd < 0)
		return 0;	/* none yet */
	dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return 0;
	}
	/* only regular files are checkpoints: no FIFO, link or directory */
	while ((d = readdir(dp)))
		if (job_ckpt_valid(d->d_name) && is_regular(dfd, d))
			fn(arg, d->d_name);
	closedir(dp);
	return 0;
}

int job_ckpt_dir_mtime(struct job *j, struct timespec *ts)
{
	struct stat st;
	int dfd = ckpt_dirfd(j, 0), ret;

	if (dfd < 0)
		return -ENOENT;
	ret = fstat(dfd, &st) ? -ENOENT : 0;
	close(dfd);
	if (!ret)
		*ts = st.st_mtim;
	return ret;
}

int job_ckpt_open(struct job *j, const char *file, struct stat *st)
{
	int fd, dfd;

	if (!job_ckpt_valid(file))
		return -ENOENT;
	dfd = ckpt_dirfd(j, 0);
	if (dfd < 0)
		return dfd;
	fd = fs_state_open_file(dfd, file, st);
	close(dfd);
	return fd;
}

/*
 * rmdir: the job's checkpoints go with it. Everything is removed relative
 * to directory fds opened without following links: a link planted in the
 * state directory is removed itself, never what it points to.
 */
static void ckpt_remove_all(struct job *j)
{
	struct dirent *d;
	int dfd, jfd, ufd;
	DIR *dp;

	dfd = ckpt_dirfd(j, 0);
	if (dfd >= 0 && (dp = fdopendir(dfd))) {
		while ((d = readdir(dp))) {
			if (d->d_name[0] == '.' && (!d->d_name[1] ||
			    (d->d_name[1] == '.' && !d->d_name[2])))
				continue;
			unlinkat(dirfd(dp), d->d_name, 0);
		}
		closedir(dp);
	} else if (dfd >= 0) {
		close(dfd);
	}
	jfd = fs_state_dirfd(j->fs, j->uid, j->name, NULL, 0);
	if (jfd >= 0) {
		unlinkat(jfd, "checkpoints", AT_REMOVEDIR);
		close(jfd);
	}
	ufd = fs_state_dirfd(j->fs, j->uid, NULL, NULL, 0);
	if (ufd >= 0) {
		unlinkat(ufd, j->name, AT_REMOVEDIR);
		close(ufd);
	}
}

/* ---- steps --------------------------------------------------------------- */

static uint64_t active_ns(const struct job *j)
{
	return j->active_ns + (j->run_since ? gpo__now_ns() - j->run_since : 0);
}

/* j->lock held: a step finished (or failed) */
static void after_step(struct job *j, const struct step_result *r)
{
	const struct gpo_step_info *si = &r->info;

	j->in_step--;
	pthread_cond_broadcast(&j->cond);
	if (r->t1 && j->dev_index >= 0)
		fs_busy_add(j->fs, j->dev_index, r->t0, r->t1);
	if (r->ret) {
		set_error(j, fs_errmsg());
		job_event(j, -1, "failed at step %llu: %s",
			  (unsigned long long)j->step, fs_errmsg());
		set_state(j, JOB_FAILED, -1);
		return;
	}
	if (j->state != JOB_RUNNING)
		j->active_ns += r->t1 - r->t0;
	j->step = si->step;
	j->skipped = si->skipped_total;
	j->loss = r->loss;
	j->lr = si->lr;
	j->grad_norm = si->grad_norm;
	j->steps_run++;
	job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
	__atomic_add_fetch(&j->fs->steps_total, 1, __ATOMIC_RELAXED);
	if (!si->skipped && j->cfg.log_every && j->step % j->cfg.log_every == 0)
		history_row(j);
	if (j->steps_left && !--j->steps_left && j->state == JOB_RUNNING)
		set_state(j, JOB_PAUSED, -1);
	if (j->step >= j->cfg.max_steps &&
	    (j->state == JOB_RUNNING || j->state == JOB_PAUSED ||
	     j->state == JOB_CREATED))
		set_state(j, JOB_DONE, -1);
}

/*
 * opt_lock held: is the job's device still there? A rescan that no longer
 * finds it fails the job's next step rather than letting it run on.
 */
static int device_check(struct job *j)
{
	struct fsd *fs = j->fs;
	struct gpo_device_info info;
	int ret;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_info(fs->ctx, j->dev_index, &info);
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (!ret && !info.present)
		return fs_err(-ENODEV,
			      "device %s (%s) is gone (ENODEV): a rescan no longer finds it",
			      info.id, info.name);
	return ret ? fs_lib_err(ret) : 0;
}

/* One step of a built-in objective; opt_lock held. */
static int objective_step(struct job *j, struct step_result *r)
{
	const char *name = objective_name(j->cfg.model.kind);
	int ret;

	ret = gpo_optim_objective(j->opt, name, &r->loss);
	if (ret)
		return fs_lib_err(ret);
	if (!isfinite(r->loss))
		return fs_err(-ERANGE, "the loss is %g: the run diverged",
			      r->loss);
	if (j->sched)
		gpo_optim_set_metric(j->opt, r->loss);
	ret = gpo_optim_step(j->opt, &r->info);
	return ret ? fs_lib_err(ret) : 0;
}

static void *runner_main(void *arg)
{
	struct job *j = arg;
	struct step_result r;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (!j->quit && (j->state != JOB_RUNNING ||
				    !objective_name(j->cfg.model.kind)))
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->quit)
			break;
		if (j->step >= j->cfg.max_steps) {
			set_state(j, JOB_DONE, -1);
			continue;
		}
		j->in_step++;
		pthread_mutex_unlock(&j->lock);

		memset(&r, 0, sizeof(r));
		fair_lock(&j->opt_lock);
		r.t0 = gpo__now_ns();
		r.ret = ensure_built(j);
		if (!r.ret)
			r.ret = device_check(j);
		if (!r.ret)
			r.ret = objective_step(j, &r);
		r.t1 = gpo__now_ns();
		if (!r.ret)
			ckpt_auto(j, &r.info);
		fair_unlock(&j->opt_lock);

		pthread_mutex_lock(&j->lock);
		after_step(j, &r);
	}
	pthread_mutex_unlock(&j->lock);
	return NULL;
}

/* j->lock held */
static int start_runner(struct job *j)
{
	int ret;

	if (j->has_runner)
		return 0;
	ret = pthread_create(&j->runner, NULL, runner_main, j);
	if (ret)
		return fs_err(-ret, "cannot start the runner: %s",
			      strerror(ret));
	j->has_runner = 1;
	return 0;
}

/* j->lock held: wait until no step is under way */
static void wait_idle(struct job *j)
{
	while (j->in_step)
		pthread_cond_wait(&j->cond, &j->lock);
}

/* ---- ctl ----------------------------------------------------------------- */

static int build_locked(struct job *j)
{
	int ret;

	fair_lock(&j->opt_lock);
	ret = ensure_built(j);
	fair_unlock(&j->opt_lock);
	return ret;
}

/*
 * Build the optimizer for @verb, which the job's @states allow. The build
 * runs without j->lock, so the state is checked before and after it.
 * Returns 0 with j->lock held, or -errno without it.
 */
static int build_in_state(struct job *j, const char *verb,
			  unsigned int states)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = in_state(j, verb, states);
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = build_locked(j);
	if (ret)
		return ret;
	pthread_mutex_lock(&j->lock);
	ret = in_state(j, verb, states);
	if (ret)
		pthread_mutex_unlock(&j->lock);
	return ret;
}

static int ctl_start(struct job *j, uid_t uid)
{
	int ret;

	ret = build_in_state(j, "start", STATE_BIT(JOB_CREATED));
	if (ret)
		return ret;
	if (objective_name(j->cfg.model.kind)) {
		ret = start_runner(j);
		if (ret)
			goto out_unlock;
	}
	j->error[0] = '\0';
	set_state(j, JOB_RUNNING, uid);
out_unlock:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

/* pause, stop: from one of @states to @to, then wait out a step under way */
static int ctl_halt(struct job *j, uid_t uid, const char *verb,
		    unsigned int states, enum job_state to)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = in_state(j, verb, states);
	if (!ret)
		set_state(j, to, uid);
	wait_idle(j);
	pthread_mutex_unlock(&j->lock);
	return ret;
}

static int ctl_pause(struct job *j, uid_t uid)
{
	return ctl_halt(j, uid, "pause", STATE_BIT(JOB_RUNNING), JOB_PAUSED);
}

static int ctl_resume(struct job *j, uid_t uid)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = in_state(j, "resume", STATE_BIT(JOB_PAUSED));
	/* a job paused by restore has never run: it has no runner yet */
	if (!ret && objective_name(j->cfg.model.kind))
		ret = start_runner(j);
	if (!ret)
		set_state(j, JOB_RUNNING, uid);
	pthread_mutex_unlock(&j->lock);
	return ret;
}

static int ctl_stop(struct job *j, uid_t uid)
{
	return ctl_halt(j, uid, "stop",
			STATE_BIT(JOB_RUNNING) | STATE_BIT(JOB_PAUSED),
			JOB_STOPPED);
}

/* j->lock held: wait for a "step N" to end, waking for shutdown */
static int wait_steps(struct job *j)
{
	struct timespec ts;

	while (j->state == JOB_RUNNING && j->steps_left) {
		if (fs_exiting(j->fs))
			return fs_err(-EINTR, "the daemon is stopping");
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&j->cond, &j->lock, &ts);
	}
	if (j->state == JOB_FAILED)
		return fs_err(-EIO, "%s", j->error);
	/* max_steps ending it early is success */
	if (j->steps_left && j->state != JOB_DONE)
		return fs_err(-EINTR, "interrupted: the job is %s",
			      job_state_name(j->state));
	return 0;
}

static int ctl_step(struct job *j, const char *arg, uid_t uid)
{
	uint64_t n;
	int ret;

	if (!arg || fs_parse_u64(arg, &n) || !n)
		return fs_err(-EINVAL, "step N: N must be a whole number >= 1");
	pthread_mutex_lock(&j->lock);
	ret = objective_name(j->cfg.model.kind) ? 0 :
	      fs_err(-EINVAL,
		     "step N needs a built-in model; external models step on writes to grad");
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = build_in_state(j, "step", STATE_BIT(JOB_CREATED) |
				     STATE_BIT(JOB_PAUSED));
	if (ret)
		return ret;
	ret = start_runner(j);
	if (ret)
		goto out_unlock;
	j->steps_left = n;
	set_state(j, JOB_RUNNING, uid);
	ret = wait_steps(j);
	j->steps_left = 0;
out_unlock:
	pthread_mutex_unlock(&j->lock);
	return ret;
}

/* opt_lock held: a job that starts over starts its schedule over */
static int restart_sched(struct job *j)
{
	struct built b = { .opt = j->opt };
	int ret;

	if (!j->sched)
		return 0;
	gpo_optim_attach_sched(j->opt, NULL);
	gpo_sched_free(j->sched);
	ret = build_sched(&j->cfg, &b);
	j->sched = b.sched;
	return ret;
}

static int ctl_reset(struct job *j, uid_t uid)
{
	int ret = 0;

	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->in_step) {
		ret = wrong_state(j, "reset");
		goto out_unlock;
	}
	if (j->opt) {
		ret = gpo_optim_reset(j->opt);
		if (ret) {
			fs_lib_err(ret);
			goto out_unlock;
		}
		ret = apply_hparams(j, &j->cfg);
		if (!ret)
			ret = restart_sched(j);
		if (ret)
			goto out_unlock;
	}
	j->step = 0;
	j->steps_run = 0;
	j->skipped = 0;
	j->loss = NAN;
	j->grad_norm = NAN;
	j->active_ns = 0;
	j->error[0] = '\0';
	gpo__sbuf_reset(&j->history);
	gpo__sbuf_printf(&j->history, HISTORY_HEADER);
	j->history_step = 0;
	j->history_full = 0;
	job_touch(j, JOB_T(JOB_T_HISTORY) | JOB_T(JOB_T_STAT) |
		  JOB_T(JOB_T_PARAMS) | JOB_T(JOB_T_ERROR));
	set_state(j, JOB_CREATED, uid);
out_unlock:
	pthread_mutex_unlock(&j->lock);
	fair_unlock(&j->opt_lock);
	return ret;
}

static int ctl_dispatch(struct job *j, const char *verb, const char *arg,
			const char *extra, uid_t uid)
{
	if (extra && strcmp(verb, "restore"))
		return fs_err(-EINVAL, "ctl: '%s' takes at most one argument",
			      verb);
	int noarg = !arg;

	if (!strcmp(verb, "start") && noarg)
		return ctl_start(j, uid);
	if (!strcmp(verb, "pause") && noarg)
		return ctl_pause(j, uid);
	if (!strcmp(verb, "resume") && noarg)
		return ctl_resume(j, uid);
	if (!strcmp(verb, "stop") && noarg)
		return ctl_stop(j, uid);
	if (!strcmp(verb, "reset") && noarg)
		return ctl_reset(j, uid);
	if (!strcmp(verb, "step"))
		return ctl_step(j, arg, uid);
	if (!strcmp(verb, "checkpoint"))
		return ctl_checkpoint(j, arg, uid);
	if (!strcmp(verb, "restore"))
		return ctl_restore(j, arg, extra, uid);
	return fs_err(-EINVAL,
		      "unknown verb '%.32s' (start pause resume stop step N checkpoint [NAME] restore NAME [foreign] reset)",
		      verb);
}

int job_ctl(struct job *j, const char *text, uid_t uid)
{
	char line[128], *verb, *arg, *extra, *more, *save = NULL;
	int ret;

	if (strlen(text) >= sizeof(line))
		return fs_err(-EINVAL, "ctl: too long");
	snprintf(line, sizeof(line), "%s", text);
	verb = strtok_r(line, " \t\n", &save);
	arg = verb ? strtok_r(NULL, " \t\n", &save) : NULL;
	extra = arg ? strtok_r(NULL, " \t\n", &save) : NULL;
	more = extra ? strtok_r(NULL, " \t\n", &save) : NULL;
	if (!verb)
		ret = fs_err(-EINVAL, "ctl: empty write");
	else if (more)
		ret = fs_err(-EINVAL, "ctl: too many arguments to '%s'", verb);
	else
		ret = ctl_dispatch(j, verb, arg, extra, uid);
	pthread_mutex_lock(&j->lock);
	if (ret)
		job_event(j, uid, "ctl %s%s%s%s%s: %s", verb ? verb : "",
			  arg ? " " : "", arg ? arg : "", extra ? " " : "",
			  extra ? extra : "", fs_errmsg());
	else
		job_event(j, uid, "ctl %s%s%s%s%s", verb, arg ? " " : "",
			  arg ? arg : "", extra ? " " : "",
			  extra ? extra : "");
	pthread_mutex_unlock(&j->lock);
	return ret;
}

/* ---- config -------------------------------------------------------------- */

static int started(const struct job *j)
{
	return j->state != JOB_CREATED || j->step || j->skipped;
}

/* opt_lock held: bring a built optimizer in line with @cfg */
static int apply_config(struct job *j, const struct job_config *cfg,
			unsigned int changed)
{
	struct built b;
	int ret;

	if (!j->opt)
		return 0;
	if (changed & (CFG_OPTIMIZER | CFG_MODEL | CFG_DEVICE | CFG_SCHED)) {
		ret = build(j->fs, cfg, changed & CFG_MODEL ? NULL : j->opt,
			    &b, j->uid);
		if (!ret)
			install(j, &b);
		return ret;
	}
	if (!(changed & CFG_HP))
		return 0;
	return apply_hparams(j, cfg);
}

/* j->lock held */
static void log_config(struct job *j, const char *text, uid_t uid, int err)
{
	char line[200];
	size_t i, n = 0;
	int sep = 0;

	for (i = 0; text[i] && n < sizeof(line) - 4; i++) {
		if (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' ||
		    text[i] == ';') {
			sep = n > 0;
			continue;
		}
		if (sep)
			line[n++] = ' ';
		sep = 0;
		line[n++] = text[i];
	}
	if (text[i])
		line[n++] = '.', line[n++] = '.';
	line[n] = '\0';
	if (err)
		job_event(j, uid, "config %s: %s", line, fs_errmsg());
	else
		job_event(j, uid, "config %s", line);
}

static int config_store(struct job *j, const char *text, uid_t uid)
{
	struct job_config cur, next;
	unsigned int changed;
	int ret;

	ret = config_get(j, &cur);
	if (ret)
		return ret;
	ret = config_parse(j->fs, &cur, text, &next, &changed);
	config_free(&cur);
	if (ret)
		return ret;

	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if ((changed & (CFG_OPTIMIZER | CFG_MODEL | CFG_DEVICE | CFG_SCHED)) &&
	    started(j))
		ret = fs_err(-EBUSY,
			     "optimizer, schedule, model and device change only before the first step (the job is %s at step %llu; reset first)",
			     job_state_name(j->state),
			     (unsigned long long)j->step);
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = apply_config(j, &next, changed);
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		config_free(&j->cfg);
		j->cfg = next;
		if (changed & CFG_MODEL)
			j->model_gen++;
		if (!j->step)
			j->lr = config_lr(j->fs, &j->cfg);
		j->grad_scale = config_hp(j->fs, &j->cfg, "grad_scale");
		job_touch(j, JOB_T(JOB_T_CONFIG) | JOB_T(JOB_T_STAT));
		log_config(j, text, uid, 0);
		pthread_cond_broadcast(&j->cond);
		pthread_mutex_unlock(&j->lock);
	} else {
		config_free(&next);
	}
	fair_unlock(&j->opt_lock);
	return ret;
}

int job_config_store(struct job *j, const char *text, uid_t uid)
{
	int ret = config_store(j, text, uid);

	if (ret) {
		pthread_mutex_lock(&j->lock);
		log_config(j, text, uid, ret);
		pthread_mutex_unlock(&j->lock);
	}
	return ret;
}

int job_config_show(struct job *j, struct gpo__sbuf *sb)
{
	struct job_config cfg;
	int ret;

	ret = config_get(j, &cfg);
	if (ret)
		return ret;
	ret = config_show(j->fs, &cfg, NULL, sb);
	config_free(&cfg);
	return ret;
}

/* ---- params and grads ---------------------------------------------------- */

int job_tensor_count(struct job *j)
{
	int n;

	pthread_mutex_lock(&j->lock);
	n = j->cfg.model.ntensors;
	pthread_mutex_unlock(&j->lock);
	return n;
}

int job_tensor_find(struct job *j, const char *name)
{
	int i, ret = -ENOENT;

	pthread_mutex_lock(&j->lock);
	for (i = 0; i < j->cfg.model.ntensors; i++) {
		if (!strcmp(j->cfg.model.t[i].name, name)) {
			ret = i;
			break;
		}
	}
	pthread_mutex_unlock(&j->lock);
	return ret;
}

int job_tensor_info(struct job *j, int index, struct model_tensor *t)
{
	int ret = 0;

	pthread_mutex_lock(&j->lock);
	if (index < 0 || index >= j->cfg.model.ntensors)
		ret = fs_err(-ENOENT, "no such tensor (the model changed)");
	else
		*t = j->cfg.model.t[index];
	pthread_mutex_unlock(&j->lock);
	return ret;
}

static int tensor_io(struct job *j, int tensor, void *buf, size_t bytes,
		     int write)
{
	struct model_tensor t;
	int ret;

	fair_lock(&j->opt_lock);
	ret = job_tensor_info(j, tensor, &t);
	if (!ret && bytes != t.numel * sizeof(float))
		ret = fs_err(-EINVAL,
			     "params/%s takes exactly %llu bytes, not %zu",
			     t.name, (unsigned long long)t.numel * 4, bytes);
	if (!ret)
		ret = ensure_built(j);
	if (!ret) {
		if (write)
			ret = gpo_optim_write(j->opt, "param", t.name, buf,
					      bytes);
		else
			ret = gpo_optim_read(j->opt, "param", t.name, buf,
					     bytes);
		if (ret)
			fs_lib_err(ret);
	}
	if (!ret && write) {
		pthread_mutex_lock(&j->lock);
		job_touch(j, JOB_T(JOB_T_PARAMS) | JOB_T(JOB_T_STAT));
		pthread_mutex_unlock(&j->lock);
	}
	fair_unlock(&j->opt_lock);
	return ret;
}

int job_params_read(struct job *j, int tensor, void *dst, size_t bytes)
{
	return tensor_io(j, tensor, dst, bytes, 0);
}

int job_params_write(struct job *j, int tensor, const void *src,
		     size_t bytes)
{
	return tensor_io(j, tensor, (void *)src, bytes, 1);
}

uint64_t job_model_gen(struct job *j)
{
	uint64_t n;

	pthread_mutex_lock(&j->lock);
	n = j->model_gen;
	pthread_mutex_unlock(&j->lock);
	return n;
}

uint64_t job_grad_bytes(struct job *j)
{
	uint64_t n;

	pthread_mutex_lock(&j->lock);
	n = j->cfg.model.numel * sizeof(float);
	pthread_mutex_unlock(&j->lock);
	return n;
}

int job_grad_read(struct job *j, void *dst, size_t bytes)
{
	int ret;

	fair_lock(&j->opt_lock);
	ret = bytes == job_grad_bytes(j) ? 0 :
	      fs_err(-EINVAL, "grad is %llu bytes",
		     (unsigned long long)job_grad_bytes(j));
	if (!ret)
		ret = ensure_built(j);
	if (!ret) {
		ret = gpo_optim_read(j->opt, "grad", NULL, dst, bytes);
		if (ret)
			fs_lib_err(ret);
	}
	fair_unlock(&j->opt_lock);
	return ret;
}

/* j->lock held: may a gradient step the job now? */
static int grad_allowed(struct job *j, size_t bytes)
{
	int ret;

	if (j->cfg.model.kind != MODEL_EXTERNAL)
		return fs_err(-EINVAL,
			      "grad takes gradients of external models only (model=%s)",
			      j->cfg.model.spec ? j->cfg.model.spec : "none");
	if (bytes != j->cfg.model.numel * sizeof(float))
		return fs_err(-EINVAL, "grad takes exactly %llu bytes, not %zu",
			      (unsigned long long)j->cfg.model.numel * 4,
			      bytes);
	ret = in_state(j, "grad", STATE_BIT(JOB_CREATED) |
		       STATE_BIT(JOB_PAUSED) | STATE_BIT(JOB_RUNNING));
	if (ret)
		return ret;
	if (j->step >= j->cfg.max_steps)
		return fs_err(-EBUSY, "grad: max_steps (%llu) reached",
			      (unsigned long long)j->cfg.max_steps);
	return 0;
}

int job_grad_step(struct job *j, const void *src, size_t bytes)
{
	struct step_result r;
	int ret;

	memset(&r, 0, sizeof(r));
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	ret = grad_allowed(j, bytes);
	/* the loss written for this step, if any, goes with it */
	r.loss = j->ext_loss;
	pthread_mutex_unlock(&j->lock);
	/* failing to build refuses the gradient, it does not fail the job */
	if (!ret)
		ret = ensure_built(j);
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		ret = grad_allowed(j, bytes);
		if (!ret)
			j->in_step++;
		pthread_mutex_unlock(&j->lock);
	}
	if (ret)
		goto out_unlock;
	r.t0 = gpo__now_ns();
	r.ret = device_check(j);
	if (!r.ret) {
		r.ret = gpo_optim_write(j->opt, "grad", NULL, src, bytes);
		if (!r.ret)
			r.ret = gpo_optim_step(j->opt, &r.info);
		if (r.ret)
			fs_lib_err(r.ret);
	}
	r.t1 = gpo__now_ns();
	if (!r.ret)
		ckpt_auto(j, &r.info);
	pthread_mutex_lock(&j->lock);
	/* gradients arriving: the job runs until paused, stopped or done */
	if (!r.ret && j->state == JOB_CREATED)
		set_state(j, JOB_RUNNING, -1);
	after_step(j, &r);
	j->ext_loss = NAN;
	pthread_mutex_unlock(&j->lock);
	ret = r.ret;
out_unlock:
	fair_unlock(&j->opt_lock);
	return ret;
}

/*
 * loss of an external job: the loss of the step the next gradient makes,
 * for stat, history.csv and a plateau schedule.
 */
int job_loss_store(struct job *j, const char *text, uid_t uid)
{
	char *end;
	double v;
	int ret = 0;

	errno = 0;
	v = gpo__strtod(text, &end);
	while (*end == '\n' || *end == ' ')
		end++;
	if (errno || end == text || *end || !isfinite(v))
		return fs_err(-EINVAL, "loss takes one finite number");
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (j->cfg.model.kind != MODEL_EXTERNAL)
		ret = fs_err(-EINVAL,
			     "loss is written for external models only (model=%s)",
			     j->cfg.model.spec ? j->cfg.model.spec : "none");
	else
		j->ext_loss = v;
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = ensure_built(j);
	if (!ret)
		gpo_optim_set_metric(j->opt, v);
	fair_unlock(&j->opt_lock);
	return ret;
}

/* ---- logs, stat, error --------------------------------------------------- */

static struct gpo__sbuf *log_of(struct job *j, enum job_log which)
{
	return which == LOG_EVENTS ? &j->events : &j->history;
}

size_t job_log_size(struct job *j, enum job_log which)
{
	size_t n;

	pthread_mutex_lock(&j->lock);
	n = log_of(j, which)->len;
	pthread_mutex_unlock(&j->lock);
	return n;
}

struct timespec job_mtime(struct job *j, enum job_time which)
{
	struct timespec t;

	pthread_mutex_lock(&j->lock);
	t = j->mtime[which];
	pthread_mutex_unlock(&j->lock);
	return t;
}

int job_log_read(struct job *j, enum job_log which, char *buf, size_t size,
		 off_t off)
{
	size_t n;

	pthread_mutex_lock(&j->lock);
	n = gpo__sbuf_read(log_of(j, which), buf, size, off);
	pthread_mutex_unlock(&j->lock);
	return n;
}

int job_log_poll(struct job *j, enum job_log which, off_t pos,
		 struct fuse_pollhandle *ph)
{
	int ready;

	pthread_mutex_lock(&j->lock);
	ready = log_of(j, which)->len > (size_t)pos;
	if (!ready && ph) {
		if (j->npollers == POLLERS_MAX) {
			fuse_notify_poll(j->pollers[0]);
			fuse_pollhandle_destroy(j->pollers[0]);
			memmove(j->pollers, j->pollers + 1,
				(POLLERS_MAX - 1) * sizeof(j->pollers[0]));
			j->npollers--;
		}
		j->pollers[j->npollers++] = ph;
		ph = NULL;
	}
	pthread_mutex_unlock(&j->lock);
	if (ph)
		fuse_pollhandle_destroy(ph);
	return ready;
}

int job_error_show(struct job *j, struct gpo__sbuf *sb)
{
	pthread_mutex_lock(&j->lock);
	if (j->error[0])
		gpo__sbuf_printf(sb, "%s\n", j->error);
	pthread_mutex_unlock(&j->lock);
	return sb->err;
}

static const char *model_kind_name(enum model_kind k)
{
	switch (k) {
	case MODEL_EXTERNAL:
		return "external";
	case MODEL_QUADRATIC:
		return "quadratic";
	case MODEL_ROSENBROCK:
		return "rosenbrock";
	default:
		return "none";
	}
}

void job_snapshot(struct job *j, struct job_snapshot *s)
{
	double el;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&j->lock);
	snprintf(s->name, sizeof(s->name), "%s", j->name);
	s->uid = j->uid;
	s->state = j->state;
	s->step = j->step;
	s->max_steps = j->cfg.max_steps;
	s->skipped = j->skipped;
	s->loss = j->loss;
	s->lr = j->lr;
	s->grad_norm = j->grad_norm;
	s->grad_scale = j->grad_scale;
	el = active_ns(j) / 1e9;
	s->elapsed_s = el;
	s->steps_per_sec = el > 0 ? j->steps_run / el : 0;
	s->eta_s = NAN;
	if (j->state == JOB_DONE)
		s->eta_s = 0;
	else if (s->steps_per_sec > 0 && s->max_steps != MAX_STEPS_UNLIMITED)
		s->eta_s = (s->max_steps - j->step) / s->steps_per_sec;
	snprintf(s->device, sizeof(s->device), "%s",
		 j->dev_id[0] ? j->dev_id : "-");
	snprintf(s->optimizer, sizeof(s->optimizer), "%s",
		 gpo_optim_kind_name(j->cfg.optimizer));
	snprintf(s->model, sizeof(s->model), "%s",
		 model_kind_name(j->cfg.model.kind));
	s->params = j->cfg.model.numel;
	s->param_bytes = j->cfg.model.numel * sizeof(float);
	pthread_mutex_unlock(&j->lock);
}

/* ---- life and death ------------------------------------------------------ */

int job_name_valid(const char *name)
{
	const char *p;

	if (!*name || strlen(name) > JOB_NAME_MAX || name[0] == '.')
		return 0;
	for (p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_.-", *p)))
			return 0;
	return 1;
}

static void job_free(struct job *j)
{
	struct built b = { .opt = j->opt, .sched = j->sched, .uid = j->uid,
			   .bytes = j->mem_bytes };

	pthread_mutex_lock(&j->lock);
	j->quit = 1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (j->has_runner)
		pthread_join(j->runner, NULL);
	built_free(j->fs, &b);
	while (j->npollers)
		fuse_pollhandle_destroy(j->pollers[--j->npollers]);
	config_free(&j->cfg);
	gpo__sbuf_free(&j->events);
	gpo__sbuf_free(&j->history);
	fair_destroy(&j->opt_lock);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	free(j);
}

static struct job *find_locked(struct fsd *fs, const char *name)
{
	struct job *j;

	for (j = fs->jobs; j; j = j->next)
		if (!strcmp(j->name, name))
			return j;
	return NULL;
}

/* removed jobs still open count until released: handles kept open must
 * not get round the limit */
static int count_uid_locked(struct fsd *fs, uid_t uid)
{
	struct job *j;
	int n = 0;

	for (j = fs->jobs; j; j = j->next)
		n += j->uid == uid;
	for (j = fs->zombies; j; j = j->next)
		n += j->uid == uid;
	return n;
}

static struct job *job_alloc(struct fsd *fs, const char *name, uid_t uid,
			     gid_t gid)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->fs = fs;
	snprintf(j->name, sizeof(j->name), "%s", name);
	j->uid = uid;
	j->gid = gid;
	j->refs = 1;
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	fair_init(&j->opt_lock);
	config_init(fs, &j->cfg);
	j->loss = NAN;
	j->grad_norm = NAN;
	j->ext_loss = NAN;
	j->dev_index = -1;
	gpo__sbuf_init(&j->events);
	gpo__sbuf_init(&j->history);
	gpo__sbuf_printf(&j->history, HISTORY_HEADER);
	job_touch(j, ~0u);
	j->lr = config_lr(fs, &j->cfg);
	j->grad_scale = config_hp(fs, &j->cfg, "grad_scale");
	return j;
}

int job_create(struct fsd *fs, const char *name, uid_t uid, gid_t gid,
	       struct job **out)
{
	struct job *j;
	int ret = 0;

	if (!job_name_valid(name))
		return fs_err(-EINVAL,
			      "bad job name '%.64s': 1-63 of A-Z a-z 0-9 _ . -, not starting with '.'",
			      name);
	j = job_alloc(fs, name, uid, gid);
	if (!j)
		return fs_err(-ENOMEM, "out of memory");
	pthread_mutex_lock(&fs->lock);
	if (find_locked(fs, name))
		ret = fs_err(-EEXIST, "job '%s' exists", name);
	else if (count_uid_locked(fs, uid) >= (int)fs->max_jobs_per_uid)
		ret = fs_err(-EDQUOT, "uid %u has %u jobs, the limit",
			     (unsigned int)uid, fs->max_jobs_per_uid);
	if (!ret) {
		j->next = fs->jobs;
		fs->jobs = j;
		fs->njobs++;
		clock_gettime(CLOCK_REALTIME, &fs->jobs_mtime);
	}
	pthread_mutex_unlock(&fs->lock);
	if (ret) {
		job_free(j);
		return ret;
	}
	pthread_mutex_lock(&j->lock);
	job_event(j, uid, "created");
	pthread_mutex_unlock(&j->lock);
	if (out)
		*out = j;
	return 0;
}

static void unlink_locked(struct fsd *fs, struct job *j)
{
	struct job **pp;

	for (pp = &fs->jobs; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			fs->njobs--;
			clock_gettime(CLOCK_REALTIME, &fs->jobs_mtime);
			break;
		}
	}
	j->removed = 1;
	j->next = fs->zombies;
	fs->zombies = j;
}

/* fs->lock held: the last reference of a removed job is gone */
static void zombie_unlink_locked(struct fsd *fs, struct job *j)
{
	struct job **pp;

	for (pp = &fs->zombies; *pp; pp = &(*pp)->next) {
		if (*pp == j) {
			*pp = j->next;
			break;
		}
	}
}

int job_removed(struct job *j)
{
	int removed;

	pthread_mutex_lock(&j->fs->lock);
	removed = j->gone;
	pthread_mutex_unlock(&j->fs->lock);
	return removed;
}

int job_remove(struct job *j, uid_t uid)
{
	struct fsd *fs = j->fs;
	int ret = 0;

	if (uid != 0 && uid != j->uid && uid != fs->admin_uid)
		return fs_err(-EPERM, "job '%s' belongs to uid %u", j->name,
			      (unsigned int)j->uid);
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->in_step)
		ret = fs_err(-EBUSY, "job '%s' is running: stop it first",
			     j->name);
	else
		j->quit = 1;	/* no new step may start */
	pthread_mutex_unlock(&j->lock);
	if (ret)
		return ret;
	pthread_mutex_lock(&fs->lock);
	if (j->removed)
		ret = fs_err(-ENOENT, "job '%s' is gone", j->name);
	else
		unlink_locked(fs, j);
	j->gone = 1;
	pthread_mutex_unlock(&fs->lock);
	if (ret)
		return ret;
	fair_lock(&j->opt_lock);
	ckpt_remove_all(j);
	/* its memory goes now, not when the last handle is closed */
	{
		struct built b = { .opt = j->opt, .sched = j->sched,
				   .uid = j->uid, .bytes = j->mem_bytes };

		built_free(fs, &b);
		j->opt = NULL;
		j->sched = NULL;
		j->mem_bytes = 0;
	}
	fair_unlock(&j->opt_lock);
	job_put(j);	/* the list's reference */
	return 0;
}

/* at shutdown, a job that checkpoints is checkpointed once more */
static void ckpt_final(struct job *j)
{
	char name[32];

	fair_lock(&j->opt_lock);
	if (j->opt) {
		auto_name(j, name, sizeof(name));
		if (!ckpt_save(j, name, -1))
			ckpt_prune(j, j->cfg.keep_checkpoints);
	}
	fair_unlock(&j->opt_lock);
}

void job_stop_all(struct fsd *fs)
{
	struct job *j;
	int save;

	for (;;) {
		pthread_mutex_lock(&fs->lock);
		j = fs->jobs;
		if (j)
			unlink_locked(fs, j);
		pthread_mutex_unlock(&fs->lock);
		if (!j)
			break;
		pthread_mutex_lock(&j->lock);
		save = j->cfg.checkpoint_every &&
		       (j->state == JOB_RUNNING || j->state == JOB_PAUSED);
		if (j->state == JOB_RUNNING || j->state == JOB_PAUSED) {
			job_event(j, -1, "the daemon is stopping");
			set_state(j, JOB_STOPPED, -1);
		}
		wait_idle(j);
		pthread_mutex_unlock(&j->lock);
		if (save)
			ckpt_final(j);
		job_put(j);
	}
}

struct job *job_lookup(struct fsd *fs, const char *name)
{
	struct job *j;

	pthread_mutex_lock(&fs->lock);
	j = find_locked(fs, name);
	if (j)
		j->refs++;
	pthread_mutex_unlock(&fs->lock);
	return j;
}

void job_get(struct job *j)
{
	pthread_mutex_lock(&j->fs->lock);
	j->refs++;
	pthread_mutex_unlock(&j->fs->lock);
}

void job_put(struct job *j)
{
	struct fsd *fs;
	int last;

	if (!j)
		return;
	fs = j->fs;
	pthread_mutex_lock(&fs->lock);
	last = --j->refs == 0;
	if (last && j->removed)
		zombie_unlink_locked(fs, j);
	pthread_mutex_unlock(&fs->lock);
	if (last)
		job_free(j);
}

const char *job_name(const struct job *j)
{
	return j->name;
}

uid_t job_uid(const struct job *j)
{
	return j->uid;
}

gid_t job_gid(const struct job *j)
{
	return j->gid;
}

void job_list(struct fsd *fs, void (*fn)(void *arg, const char *name),
	      void *arg)
{
	struct job *j;

	pthread_mutex_lock(&fs->lock);
	for (j = fs->jobs; j; j = j->next)
		fn(arg, j->name);
	pthread_mutex_unlock(&fs->lock);
}

int job_snapshots(struct fsd *fs, struct job_snapshot **out)
{
	struct job **list = NULL;
	struct job_snapshot *s;
	struct job *j;
	int n = 0, i;

	pthread_mutex_lock(&fs->lock);
	if (fs->njobs)
		list = malloc(fs->njobs * sizeof(*list));
	for (j = fs->jobs; list && j; j = j->next) {
		j->refs++;
		list[n++] = j;
	}
	pthread_mutex_unlock(&fs->lock);
	if (!list && fs->njobs)
		return fs_err(-ENOMEM, "out of memory");
	s = calloc(n ? n : 1, sizeof(*s));
	for (i = 0; i < n; i++) {
		if (s)
			job_snapshot(list[i], &s[i]);
		job_put(list[i]);
	}
	free(list);
	if (!s)
		return fs_err(-ENOMEM, "out of memory");
	*out = s;
	return n;
}
