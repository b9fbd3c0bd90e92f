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
#include <inttypes.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include "fs_i.h"
#include "job_i.h"
#include "worker/proto.h"

extern char **environ;

#define HISTORY_HEADER "step,loss,lr,grad_norm,elapsed_s\n"
/*
 * Models that learn from data add their own columns (the step's extras):
 * an mlp counts samples a second, a gpt tokens (bytes) a second.
 */
#define HISTORY_EXTRAS 4
static const char *const history_mlp[HISTORY_EXTRAS] = {
	"epoch", "samples_per_sec", "eval_loss", "accuracy",
};
static const char *const history_gpt[HISTORY_EXTRAS] = {
	"epoch", "tokens_per_sec", "eval_loss", "accuracy",
};
#define POLLERS_MAX 64

/* the job's worker process, under opt_lock */
struct wproc {
	pid_t pid;			/* 0: none */
	int sock;			/* our end of the socketpair */
	int shm;			/* the memfd */
	int err;			/* its stderr, non-blocking */
	void *map;			/* shm, mapped; remapped under map_lock */
	uint64_t size;
	/*
	 * [0, cmd_off) of shm: a gradient being written in parts by the
	 * grad write @stage_id (0: none), copied there by its FUSE writes
	 * as they come; every command's bytes start at cmd_off. Under
	 * map_lock, set under opt_lock too.
	 */
	uint64_t cmd_off;
	uint64_t stage_id;
	uint64_t stage_next;		/* ids given out; never reused */
	uint64_t drained_ns;		/* stderr last read */
	int built;			/* it holds the optimizer */
	int mpi;			/* mpiexec: its ranks are its group */
	int holds_dev;			/* counted in fs->dev_users */
	char tail[2048];		/* the newest bytes of its stderr */
	size_t tail_len;
};

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
	uint64_t mem_bytes;		/* of its worker's state, reserved for uid */
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
	double loss_scale;		/* the worker's last word, else config's */
	uint64_t active_ns;		/* time spent running or stepping */
	uint64_t run_since;		/* entered running, 0 when not */
	char dev_id[32];		/* the daemon's id of its device */
	int dev_index;			/* and index */
	char rank_devs[RANK_DEVS_MAX];	/* each rank's device id, by commas */
	struct wp_pool pool;		/* its worker's, when has_pool */
	int has_pool;

	struct gpo__sbuf events;
	struct gpo__sbuf history;
	uint64_t history_step;		/* of the last row, 0 for none */
	int history_full;
	struct timespec mtime[JOB_TIMES];	/* see job_touch() */
	struct fuse_pollhandle *pollers[POLLERS_MAX];
	int npollers;
	char error[512];

	int worker_died;		/* the last failure was its worker's */
	uint64_t restarts;		/* by restart_on_failure */
	uint64_t spe;			/* a data model's steps per epoch */
	uint32_t nextra;		/* the model kind's own numbers */
	struct wp_extra extra[WP_EXTRA_MAX];
	struct gpo__sbuf sample;	/* the last sample's bytes */
	uint64_t samples;		/* made so far: each has its own seed */

	struct fair_lock opt_lock;
	pthread_mutex_t map_lock;	/* w.map's mapping and w.stage_id */
	struct wproc w;

	/* its record in the state directory: see "records" below */
	pthread_mutex_t save_lock;	/* one writer of the record at a time */
	int dirty;			/* changed since it was saved */
	int purged;			/* rmdir removed the record */
	int was_running;		/* paused by the daemon's shutdown */
	char restore_from[80];		/* a checkpoint the next build restores */
	char last_ckpt[80];		/* the newest checkpoint saved or restored */
	uint64_t last_ckpt_step;
};

struct step_result {
	struct wp_stat st;
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
	j->dirty = 1;
	job_touch(j, JOB_T(JOB_T_EVENTS));
	notify_pollers(j);
}

static void history_row(struct job *j)
{
	const char *const *cols;
	double el = j->active_ns / 1e9;
	uint32_t k;
	size_t i;

	if (j->run_since)
		el += (gpo__now_ns() - j->run_since) / 1e9;
	if (j->history.len >= JOB_LOG_MAX) {
		if (!j->history_full)
			job_event(j, -1, "history.csv is full (%u bytes)",
				  JOB_LOG_MAX);
		j->history_full = 1;
		return;
	}
	cols = j->cfg.model.kind == MODEL_MLP ? history_mlp :
	       j->cfg.model.kind == MODEL_GPT ? history_gpt : NULL;
	if (cols && j->history.len == strlen(HISTORY_HEADER) &&
	    !strcmp(j->history.buf, HISTORY_HEADER)) {
		gpo__sbuf_reset(&j->history);
		gpo__sbuf_printf(&j->history, "%.*s", (int)strlen(HISTORY_HEADER) - 1,
				 HISTORY_HEADER);
		for (i = 0; i < HISTORY_EXTRAS; i++)
			gpo__sbuf_printf(&j->history, ",%s", cols[i]);
		gpo__sbuf_printf(&j->history, "\n");
	}
	gpo__sbuf_printf(&j->history, "%llu,%.9g,%.9g,%.9g,%.3f",
		    (unsigned long long)j->step, j->loss, j->lr, j->grad_norm,
		    el);
	for (i = 0; cols && i < HISTORY_EXTRAS; i++) {
		double v = NAN;

		for (k = 0; k < j->nextra; k++)
			if (!strcmp(j->extra[k].name, cols[i]))
				v = j->extra[k].value;
		gpo__sbuf_printf(&j->history, ",%.9g", v);
	}
	gpo__sbuf_printf(&j->history, "\n");
	j->history_step = j->step;
	j->dirty = 1;
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

/* ---- the worker ----------------------------------------------------------
 *
 * A job's optimizer lives in its own gpuoptfs-worker process (fsd/worker/),
 * started as the job's owner when the job first needs it and speaking
 * fsd/worker/proto.h. Calls go one at a time under opt_lock. A worker that
 * dies, or gives no answer within its watchdog time, fails its job alone,
 * with the cause and the last lines of its stderr in error and events.
 */

#ifndef GPUOPTFS_WORKER_PATH
#define GPUOPTFS_WORKER_PATH "/usr/local/libexec/gpuoptfs-worker"
#endif
#define WORKER_TIMEOUT_S 30	/* one step, one read or write of params */
#define WORKER_SLOW 10		/* builds and checkpoints: kernels compile */
#define WORKER_NOFILE 256
#define WORKER_TAIL_LINES 3
#define WORKER_SLICE_MS 250	/* a wait for a reply wakes this often */
#define WORKER_DRAIN_NS 100000000ull /* stderr read this often at least */

static char worker_exe[PATH_MAX];
static int worker_timeout = WORKER_TIMEOUT_S;
/*
 * Jobs with ranks=: gpuoptfs-worker-mpi beside the worker, started
 * through mpiexec (GPUOPTFS_MPIEXEC, else the first in PATH; set empty,
 * no MPI), both found once at the first need; mpi_why says what is
 * missing.
 */
static char worker_mpi_exe[PATH_MAX];
static char mpiexec_exe[PATH_MAX];
static char mpi_why[PATH_MAX + 80];

static void mpi_setup(void)
{
	const char *env = getenv("GPUOPTFS_MPIEXEC"), *path, *p, *e;
	const char *slash = strrchr(worker_exe, '/');
	int dir = slash ? (int)(slash - worker_exe) : 0;

	if (!slash ||
	    snprintf(worker_mpi_exe, sizeof(worker_mpi_exe),
		     "%.*s/gpuoptfs-worker-mpi", dir, worker_exe) >=
		    (int)sizeof(worker_mpi_exe) ||
	    access(worker_mpi_exe, X_OK)) {
		snprintf(mpi_why, sizeof(mpi_why),
			 "this gpuoptfs has no MPI worker (%s: built with Open MPI's libopenmpi-dev)",
			 worker_mpi_exe);
		return;
	}
	if (env) {
		if (*env == '/' && !access(env, X_OK))
			snprintf(mpiexec_exe, sizeof(mpiexec_exe), "%s", env);
	} else {
		path = getenv("PATH");
		p = path ? path : "/usr/bin:/bin";
		for (; *p; p = *e ? e + 1 : e) {
			e = strchrnul(p, ':');
			/* relative entries are the caller's cwd: never */
			if (*p != '/' ||
			    snprintf(mpiexec_exe, sizeof(mpiexec_exe),
				     "%.*s/mpiexec", (int)(e - p), p) >=
				    (int)sizeof(mpiexec_exe))
				continue;
			if (!access(mpiexec_exe, X_OK))
				break;
			mpiexec_exe[0] = '\0';
		}
	}
	if (!mpiexec_exe[0])
		snprintf(mpi_why, sizeof(mpi_why),
			 "no mpiexec (Open MPI's openmpi-bin) for this gpuoptfs");
}
static pthread_once_t worker_once = PTHREAD_ONCE_INIT;

/*
 * The worker beside the daemon's own executable (a build tree, or an
 * install that put both in bin/), else the compiled-in path.
 * GPUOPTFS_WORKER_TIMEOUT (seconds) shortens the watchdog for tests.
 */
static void worker_setup(void)
{
	char self[PATH_MAX], *slash;
	const char *t = getenv("GPUOPTFS_WORKER_TIMEOUT");
	ssize_t n;
	uint64_t v;

	if (t && !fs_parse_u64(t, &v) && v >= 1 && v <= 3600)
		worker_timeout = v;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			if (snprintf(worker_exe, sizeof(worker_exe),
				     "%s/gpuoptfs-worker", self) <
			    (int)sizeof(worker_exe) &&
			    !access(worker_exe, X_OK))
				return;
		}
	}
	snprintf(worker_exe, sizeof(worker_exe), "%s", GPUOPTFS_WORKER_PATH);
}

static void workers_setup(void)
{
	worker_setup();
	mpi_setup();
}

unsigned int job_comm_timeout_max(void)
{
	pthread_once(&worker_once, workers_setup);
	return worker_timeout > 2 ? worker_timeout / 2 : 1;
}

const char *job_mpi_why(void)
{
	pthread_once(&worker_once, workers_setup);
	return mpi_why[0] ? mpi_why : NULL;
}

/*
 * The step that ends the job: max_steps; for a model trained on data with
 * epochs=N, N epochs (max_steps then only when it was written)
 */
static uint64_t step_limit(const struct job *j)
{
	uint64_t lim = j->cfg.max_steps, e = j->cfg.train.epochs;

	if (!config_learns(&j->cfg) || !e)
		return lim;
	if (!j->cfg.max_steps_given)
		lim = MAX_STEPS_UNLIMITED;
	if (j->spe && e * j->spe < lim)
		lim = e * j->spe;
	return lim;
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
	case MODEL_MLP:
		return "mlp";
	case MODEL_GPT:
		return "gpt";
	default:
		return "none";
	}
}

/* keep the newest bytes of the worker's stderr, for the failure's cause */
static void stderr_drain(struct job *j)
{
	struct wproc *w = &j->w;
	char buf[4096];
	size_t keep;
	ssize_t n;

	if (w->err < 0)
		return;
	while ((n = read(w->err, buf, sizeof(buf))) > 0) {
		if ((size_t)n >= sizeof(w->tail)) {
			memcpy(w->tail, buf + n - sizeof(w->tail),
			       sizeof(w->tail));
			w->tail_len = sizeof(w->tail);
			continue;
		}
		keep = sizeof(w->tail) - n;
		if (w->tail_len > keep) {
			memmove(w->tail, w->tail + w->tail_len - keep, keep);
			w->tail_len = keep;
		}
		memcpy(w->tail + w->tail_len, buf, n);
		w->tail_len += n;
	}
}

/* the last lines of the worker's stderr, joined by " | ", made printable */
static void stderr_tail(struct job *j, char *out, size_t len)
{
	struct wproc *w = &j->w;
	size_t i, start, o = 0;
	int lines = 0;

	start = w->tail_len;
	while (start > 0 && w->tail[start - 1] == '\n')
		start--;
	i = start;
	while (i > 0) {
		if (w->tail[i - 1] == '\n' && ++lines == WORKER_TAIL_LINES)
			break;
		i--;
	}
	for (; i < start && o + 4 < len; i++) {
		unsigned char c = w->tail[i];

		if (c == '\n') {
			memcpy(out + o, " | ", 3);
			o += 3;
		} else {
			out[o++] = c >= 0x20 && c < 0x7f ? c : '?';
		}
	}
	out[o] = '\0';
}

static void worker_close(struct job *j)
{
	struct wproc *w = &j->w;

	pthread_mutex_lock(&j->map_lock);
	if (w->map)
		munmap(w->map, w->size);
	w->map = NULL;
	w->size = 0;
	w->cmd_off = 0;
	w->stage_id = 0;	/* a grad write in parts: its bytes are gone */
	pthread_mutex_unlock(&j->map_lock);
	if (w->sock >= 0)
		close(w->sock);
	if (w->shm >= 0)
		close(w->shm);
	if (w->err >= 0)
		close(w->err);
	w->sock = w->shm = w->err = -1;
	w->pid = 0;
	w->mpi = 0;
	w->built = 0;
	fs_mem_release(j->fs, j->uid, j->mem_bytes);
	j->mem_bytes = 0;
	/* the worker's memory went with it */
	pthread_mutex_lock(&j->lock);
	j->has_pool = 0;
	pthread_mutex_unlock(&j->lock);
	if (w->holds_dev) {
		pthread_mutex_lock(&j->fs->lock);
		j->fs->dev_users--;
		pthread_mutex_unlock(&j->fs->lock);
		w->holds_dev = 0;
	}
}

/* wait up to @ms for the worker to exit; 1 with its status, else 0 */
static int reap(pid_t pid, int *status, int ms)
{
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);

		if (r == pid || (r < 0 && errno != EINTR))
			return r == pid;
		if (ms <= 0)
			return 0;
		usleep(10000);
		ms -= 10;
	}
}

/*
 * Kill the worker; mpiexec first gets SIGTERM, on which it ends its
 * ranks (SIGKILL would leave them behind), then its process group goes.
 * 1: it is reaped already, in *@status.
 */
static int worker_kill(struct job *j, int *status)
{
	struct wproc *w = &j->w;

	if (w->mpi) {
		kill(w->pid, SIGTERM);
		if (reap(w->pid, status, 3000))
			return 1;
		kill(-w->pid, SIGKILL);
	}
	kill(w->pid, SIGKILL);
	return 0;
}

/* opt_lock held: end the worker, quietly (rmdir, shutdown, rebuild) */
static void worker_stop(struct job *j)
{
	struct wproc *w = &j->w;
	struct wp_req rq = { .cmd = WP_QUIT };
	int status;

	if (!w->pid)
		return;
	send(w->sock, &rq, sizeof(rq), MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(w->sock, SHUT_RDWR);
	if (!reap(w->pid, &status, 2000) && !worker_kill(j, &status))
		reap(w->pid, &status, 60000);
	worker_close(j);
}

/*
 * mpiexec says which rank ended the job ("... process rank 1 with PID
 * ... exited on signal 9 (Killed)."): that line, in @out, rather than
 * the last lines of its banner
 */
static void mpi_cause(struct job *j, char *out, size_t len)
{
	struct wproc *w = &j->w;
	const char *p, *e, *end = w->tail + w->tail_len;
	size_t i, o = 0;

	p = memmem(w->tail, w->tail_len, "process rank ", 13);
	if (!p)
		p = memmem(w->tail, w->tail_len, "gpuoptfs-worker-mpi: rank ", 26);
	if (!p)
		return;
	e = memchr(p, '\n', end - p);
	if (!e)
		e = end;
	/* "mpirun noticed that" is the line's start: rank first */
	if (!strncmp(p, "process ", 8))
		p += 8;
	for (i = 0; p + i < e && o + 1 < len; i++)
		out[o++] = p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '?';
	out[o] = '\0';
}

/*
 * opt_lock held: the worker died, or stopped answering after @hung_s
 * seconds. Its job fails with the cause; the error returned says it too.
 */
static int worker_lost(struct job *j, int hung_s)
{
	struct wproc *w = &j->w;
	char cause[160], tail[300], msg[512];
	const char *sig;
	int status = 0, reaped = 0;

	if (hung_s)
		reaped = worker_kill(j, &status);
	if (!reaped && !reap(w->pid, &status, 2000) &&
	    !worker_kill(j, &status))
		reap(w->pid, &status, 60000);
	if (hung_s) {
		snprintf(cause, sizeof(cause),
			 "worker stopped answering after %d s", hung_s);
	} else if (WIFSIGNALED(status)) {
		sig = sigabbrev_np(WTERMSIG(status));
		snprintf(cause, sizeof(cause), "worker killed by SIG%s",
			 sig ? sig : "?");
	} else if (WIFEXITED(status)) {
		snprintf(cause, sizeof(cause), "worker exited with status %d",
			 WEXITSTATUS(status));
	} else {
		snprintf(cause, sizeof(cause), "worker lost");
	}
	stderr_drain(j);
	stderr_tail(j, tail, sizeof(tail));
	if (w->mpi)
		mpi_cause(j, tail, sizeof(tail));
	snprintf(msg, sizeof(msg), "%s%s%s", cause, tail[0] ? ": " : "", tail);
	fs_debug(j->fs, "job %s: %s", j->name, msg);
	worker_close(j);
	w->tail_len = 0;
	pthread_mutex_lock(&j->lock);
	set_error(j, msg);
	job_event(j, -1, "%s", msg);
	j->worker_died = 1;
	if (j->state == JOB_CREATED || j->state == JOB_RUNNING ||
	    j->state == JOB_PAUSED)
		set_state(j, JOB_FAILED, -1);
	pthread_mutex_unlock(&j->lock);
	return fs_err(-EIO, "%s", msg);
}

/*
 * opt_lock held: one command and its reply. @slow gives builds and
 * checkpoints their longer watchdog.
 */
static int worker_call(struct job *j, struct wp_req *rq, struct wp_rep *rp,
		       int slow)
{
	struct wproc *w = &j->w;
	int timeout = worker_timeout * (slow ? WORKER_SLOW : 1);
	uint64_t now, t0 = gpo__now_ns();
	ssize_t n;

	if (!w->pid)
		return fs_err(-EIO, "the job has no worker");
	rq->shm_size = w->size;
	rq->off = rq->flags & WP_F_STAGED ? 0 : w->cmd_off;
	n = send(w->sock, rq, sizeof(*rq), MSG_NOSIGNAL);
	if (n != sizeof(*rq))
		return worker_lost(j, 0);
	/*
	 * One send and one recv a command: the socket's receive timeout
	 * (WORKER_SLICE_MS, set at its start) wakes us now and then to
	 * read the worker's stderr, so that it never fills its pipe, and
	 * for the watchdog.
	 */
	for (;;) {
		n = recv(w->sock, rp, sizeof(*rp), 0);
		if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
			       errno != EINTR))
			break;
		stderr_drain(j);
		w->drained_ns = gpo__now_ns();
		if (w->drained_ns - t0 >= (uint64_t)timeout * 1000000000ull)
			return worker_lost(j, timeout);
	}
	if (n != sizeof(*rp))
		return worker_lost(j, 0);
	now = gpo__now_ns();
	if (rp->ret || now - w->drained_ns >= WORKER_DRAIN_NS) {
		stderr_drain(j);
		w->drained_ns = now;
	}
	rp->msg[sizeof(rp->msg) - 1] = '\0';
	rp->dev_id[sizeof(rp->dev_id) - 1] = '\0';
	if (rp->st.nextra > WP_EXTRA_MAX)
		rp->st.nextra = WP_EXTRA_MAX;
	if (rp->flags & WP_R_POOL) {
		pthread_mutex_lock(&j->lock);
		j->pool = rp->pool;
		j->has_pool = 1;
		pthread_mutex_unlock(&j->lock);
	}
	if (rp->ret)
		return fs_err(rp->ret < 0 ? rp->ret : -EIO, "%s", rp->msg);
	return 0;
}

/* the worker's half of the fork: become the owner, limited, then exec */
static void __attribute__((noreturn))
worker_child(struct job *j, int fds[6], uint64_t mem_limit, const char *exe,
	     char **argv, rlim_t nofile)
{
	struct rlimit rl = { nofile, nofile };
	gid_t gid = j->gid;
	uid_t uid = j->uid;
	sigset_t all;
	int i, hi[6];

	/* above 5 first, so that no dup2 below overwrites another */
	for (i = 0; i < 6; i++) {
		hi[i] = fds[i] < 0 ? -1 : fcntl(fds[i], F_DUPFD, 10);
		if (fds[i] >= 0 && hi[i] < 0)
			_exit(126);
	}
	for (i = 0; i < 6; i++)
		if (hi[i] >= 0 && dup2(hi[i], i) < 0)
			_exit(126);
	for (i = 6; i > 3 && hi[i - 1] < 0; i--)
		;
	close_range(i, ~0u, 0);
	if (geteuid() == 0 && (uid != 0 || gid != 0)) {
		if (syscall(SYS_setgroups, 1, &gid) ||
		    syscall(SYS_setresgid, gid, gid, gid) ||
		    syscall(SYS_setresuid, uid, uid, uid))
			_exit(126);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    setrlimit(RLIMIT_NOFILE, &rl))
		_exit(126);
	rl.rlim_cur = rl.rlim_max = 0;
	setrlimit(RLIMIT_CORE, &rl);
	if (mem_limit) {
		rl.rlim_cur = rl.rlim_max = mem_limit;
		if (setrlimit(RLIMIT_AS, &rl))
			_exit(126);
	}
	umask(022);
	setsid();
	sigfillset(&all);
	sigprocmask(SIG_UNBLOCK, &all, NULL);
	execve(exe, argv, environ);
	_exit(127);
}

/* opt_lock held: the job's checkpoints directory, for the worker */
static int ckpt_dir_fd(struct job *j);

/*
 * A job with ranks=: its worker is mpiexec running gpuoptfs-worker-mpi
 * on every rank, as the job's owner with the limits of any worker (the
 * ranks inherit them). mpiexec passes no fds to its ranks, so rank 0
 * connects to an abstract unix socket of a random name that only this
 * job listens on; the peer must run as the job's owner (SO_PEERCRED),
 * and gets the memfd and the checkpoints directory over it (SCM_RIGHTS).
 */
#define MPI_ARGS_MAX 20

static int mpi_listen(char *name, size_t len)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	uint64_t r[2];
	int fd, n;

	if (getrandom(r, sizeof(r), 0) != sizeof(r))
		return fs_err(-EIO, "no random socket name: %s", strerror(errno));
	n = snprintf(name, len, "@gpuoptfs-%d-%016llx%016llx", (int)getpid(),
		     (unsigned long long)r[0], (unsigned long long)r[1]);
	memcpy(a.sun_path + 1, name + 1, n - 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a,
			   offsetof(struct sockaddr_un, sun_path) + n) ||
	    listen(fd, 4)) {
		n = -errno;
		if (fd >= 0)
			close(fd);
		return fs_err(n, "cannot listen for the job's rank 0: %s",
			      strerror(-n));
	}
	return fd;
}

/*
 * Wait for the job's rank 0 on @lfd for @timeout s, reading the
 * worker's stderr meanwhile; hand it @shm and @ck. Its socket, or an error
 * (the worker died or never came).
 */
static int mpi_accept(struct job *j, int lfd, int shm, int ck, int timeout)
{
	struct wproc *w = &j->w;
	uint64_t t0 = gpo__now_ns();
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} cb;
	struct iovec iov = { "fds", 4 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *cm;
	struct pollfd pf = { .fd = lfd, .events = POLLIN };
	struct ucred cr = { 0 };
	socklen_t cl = sizeof(cr);
	siginfo_t si;
	int fd, fds[2] = { shm, ck };

	for (;;) {
		if (gpo__now_ns() - t0 >= (uint64_t)timeout * 1000000000ull)
			return worker_lost(j, timeout);
		/* left for worker_lost() to reap */
		memset(&si, 0, sizeof(si));
		if (!waitid(P_PID, w->pid, &si, WEXITED | WNOHANG | WNOWAIT) &&
		    si.si_pid == w->pid)
			return worker_lost(j, 0);
		stderr_drain(j);
		if (poll(&pf, 1, WORKER_SLICE_MS) <= 0)
			continue;
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) &&
		    cr.uid == j->uid && cr.gid == j->gid)
			break;
		fs_debug(j->fs, "job %s: a stranger (uid %u) connected in place of rank 0",
			 j->name, (unsigned int)cr.uid);
		close(fd);
	}
	mh.msg_control = cb.buf;
	mh.msg_controllen = CMSG_SPACE((ck >= 0 ? 2 : 1) * sizeof(int));
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN((ck >= 0 ? 2 : 1) * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, (ck >= 0 ? 2 : 1) * sizeof(int));
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0) {
		close(fd);
		return worker_lost(j, 0);
	}
	return fd;
}

/* mpiexec's words for @cfg; @argv has MPI_ARGS_MAX + 1 places */
static void mpi_argv(struct job *j, const struct job_config *cfg,
		     char *bufs[4], char **argv, const char *sock)
{
	int a = 0;

	argv[a++] = "mpiexec";
	/* Open MPI refuses root unless told; only root's own jobs are */
	if (j->uid == 0)
		argv[a++] = "--allow-run-as-root";
	argv[a++] = "--oversubscribe";
	/* a shared machine: the ranks are not pinned to cores */
	argv[a++] = "--bind-to";
	argv[a++] = "none";
	argv[a++] = "-np";
	snprintf(bufs[0], 24, "%llu", (unsigned long long)cfg->ranks);
	argv[a++] = bufs[0];
	if (cfg->hosts[0]) {
		argv[a++] = "--host";
		snprintf(bufs[1], sizeof(cfg->hosts), "%s", cfg->hosts);
		argv[a++] = bufs[1];
	}
	argv[a++] = worker_mpi_exe;
	argv[a++] = j->name;
	snprintf(bufs[2], 120, "%s", sock);
	argv[a++] = bufs[2];
	/*
	 * a hung rank fails the step well before the daemon's watchdog
	 * fires (a step waits on the others more than once):
	 * job_comm_timeout_max() bounds timeout=
	 */
	if (config_comm_text(cfg, bufs[3], 160))
		snprintf(bufs[3], 160, "timeout=%u", job_comm_timeout_max());
	argv[a++] = bufs[3];
	argv[a] = NULL;
}

/* opt_lock held: start the job's worker and check that it answers */
static int worker_spawn(struct job *j)
{
	struct wproc *w = &j->w;
	int sv[2] = { -1, -1 }, ep[2] = { -1, -1 };
	int shm = -1, ck = -1, nul = -1, ret;
	struct wp_req rq = { .cmd = WP_HELLO };
	struct timeval slice = { 0, WORKER_SLICE_MS * 1000 };
	struct wp_rep rp;
	struct job_config cfg;
	uint64_t mem_limit;
	char sock_name[80], b0[24], b1[128], b2[120], b3[160];
	char *bufs[4] = { b0, b1, b2, b3 }, *mpi_args[MPI_ARGS_MAX + 1];
	int lfd = -1;
	uint64_t nranks;
	pid_t pid;

	pthread_once(&worker_once, workers_setup);
	ret = config_get(j, &cfg);
	if (ret)
		return ret;
	mem_limit = cfg.memory_limit_bytes;
	nranks = cfg.ranks;
	if (config_mpi(&cfg)) {
		if (mpi_why[0]) {
			config_free(&cfg);
			return fs_err(-EINVAL, "ranks=%llu: %s",
				      (unsigned long long)nranks, mpi_why);
		}
		lfd = mpi_listen(sock_name, sizeof(sock_name));
		if (lfd < 0) {
			config_free(&cfg);
			return lfd;
		}
		mpi_argv(j, &cfg, bufs, mpi_args, sock_name);
	}
	config_free(&cfg);
	ck = ckpt_dir_fd(j);
	if (ck < 0) {
		if (lfd >= 0)
			close(lfd);
		return ck;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) ||
	    pipe2(ep, O_CLOEXEC)) {
		ret = fs_err(-errno, "cannot start a worker: %s",
			     strerror(errno));
		goto out_close;
	}
	/* sealed against shrinking: the worker, run by the job's owner,
	 * must not be able to make our mapping of it fault */
	shm = memfd_create("gpuoptfs-job", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (shm >= 0 && fcntl(shm, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL)) {
		close(shm);
		shm = -1;
	}
	nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (shm < 0 || nul < 0 ||
	    setsockopt(sv[0], SOL_SOCKET, SO_RCVTIMEO, &slice,
		       sizeof(slice))) {
		ret = fs_err(-errno, "cannot start a worker: %s",
			     strerror(errno));
		goto out_close;
	}
	pid = fork();
	if (pid < 0) {
		ret = fs_err(-errno, "cannot fork a worker: %s",
			     strerror(errno));
		goto out_close;
	}
	if (pid == 0) {
		int fds[6] = { nul, nul, ep[1], sv[1], shm, ck };
		char *argv[] = { "gpuoptfs-worker", j->name, NULL };

		if (lfd >= 0) {
			/* mpiexec and its ranks get no fd of ours */
			fds[3] = fds[4] = fds[5] = -1;
			/* mpiexec keeps pipes and sockets for every rank */
			worker_child(j, fds, mem_limit, mpiexec_exe, mpi_args,
				     WORKER_NOFILE + 16 * nranks);
		}
		worker_child(j, fds, mem_limit, worker_exe, argv,
			     WORKER_NOFILE);
	}
	close(sv[1]);
	close(ep[1]);
	close(nul);
	fcntl(ep[0], F_SETFL, O_NONBLOCK);
	w->pid = pid;
	w->mpi = lfd >= 0;
	w->sock = sv[0];
	w->err = ep[0];
	w->shm = shm;
	w->tail_len = 0;
	w->drained_ns = gpo__now_ns();
	if (lfd >= 0) {
		/* the socketpair is unused: rank 0 connects instead */
		close(w->sock);
		w->sock = -1;
		ret = mpi_accept(j, lfd, shm, ck, worker_timeout * WORKER_SLOW);
		close(lfd);
		close(ck);
		if (ret < 0)
			return ret;
		w->sock = ret;
		if (setsockopt(w->sock, SOL_SOCKET, SO_RCVTIMEO, &slice,
			       sizeof(slice))) {
			ret = fs_err(-errno, "cannot start a worker: %s",
				     strerror(errno));
			worker_stop(j);
			return ret;
		}
	} else {
		close(ck);
	}
	ret = worker_call(j, &rq, &rp, 1);
	if (!ret && rp.version != WP_VERSION)
		ret = fs_err(-EPROTO, "%s speaks protocol %u, not %u",
			     worker_exe, rp.version, WP_VERSION);
	if (ret && w->pid)
		worker_stop(j);
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		job_event(j, -1, "worker %d started as uid %u",
			  (int)pid, (unsigned int)j->uid);
		pthread_mutex_unlock(&j->lock);
	}
	return ret;

out_close:
	if (lfd >= 0)
		close(lfd);
	close(sv[0]);
	close(sv[1]);
	close(ep[0]);
	close(ep[1]);
	if (shm >= 0)
		close(shm);
	if (nul >= 0)
		close(nul);
	close(ck);
	return ret;
}

/* opt_lock held: where a command's bytes go in shm (see cmd_off) */
static void *shm_cmd(struct job *j)
{
	return (char *)j->w.map + j->w.cmd_off;
}

/* opt_lock held: make the shared mapping hold @bytes from cmd_off on */
static int shm_reserve(struct job *j, uint64_t bytes)
{
	struct wproc *w = &j->w;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t size = (w->cmd_off + bytes + page - 1) / page * page;
	void *p;

	if (!size)
		size = page;
	if (size <= w->size)
		return 0;
	if (ftruncate(w->shm, size))
		return fs_err(-errno, "shared memory of %llu bytes: %s",
			      (unsigned long long)size, strerror(errno));
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, w->shm, 0);
	if (p == MAP_FAILED)
		return fs_err(-errno, "shared memory of %llu bytes: %s",
			      (unsigned long long)size, strerror(errno));
	/* a grad write in parts may be copying into the old mapping */
	pthread_mutex_lock(&j->map_lock);
	if (w->map)
		munmap(w->map, w->size);
	w->map = p;
	w->size = size;
	pthread_mutex_unlock(&j->map_lock);
	return 0;
}

/*
 * ctx_lock held: device @index as the worker finds it in its own
 * enumeration (proto.h's struct wp_dev). The ordinal among same-named
 * devices is only asked for where the device has no uuid; the daemon's
 * present devices keep the order of their probe, as the worker's do.
 */
static int dev_describe(struct fsd *fs, int index, struct wp_dev *d)
{
	struct gpo_device_info info, o;
	int i, ret;

	memset(d, 0, sizeof(*d));
	ret = gpo_device_info(fs->ctx, index, &info);
	if (ret)
		return fs_lib_err(ret);
	snprintf(d->backend, sizeof(d->backend), "%s", info.backend);
	snprintf(d->uuid, sizeof(d->uuid), "%s", info.uuid);
	snprintf(d->name, sizeof(d->name), "%s", info.name);
	for (i = 0; i < index; i++)
		if (!gpo_device_info(fs->ctx, i, &o) && o.present &&
		    !strcmp(o.backend, info.backend) &&
		    !strcmp(o.name, info.name))
			d->ordinal++;
	return 0;
}

/*
 * The device the job's spec names in the daemon's context, described for
 * the worker in @b, with the present devices an operator disabled after
 * it at @off (room for gpo_device_count() of them). The daemon's index
 * and id stay the job's: a worker numbers its devices on its own. Gone
 * devices are left out: one that came back is a new, enabled device with
 * the same uuid.
 */
static int dev_plan(struct job *j, const char *spec, struct wp_build *b,
		    struct wp_dev *off, int max, int *index, char *id,
		    size_t idlen)
{
	struct fsd *fs = j->fs;
	struct gpo_device_info info;
	struct gpo_pool_stats ps;
	struct gpo_device *dev;
	int i, n, ret;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_select(fs->ctx, spec, &dev);
	if (ret) {
		fs_lib_err(ret);
		goto out_unlock;
	}
	*index = gpo_device_index(dev);
	/* its pool shows in pools/, and its limit caps the worker's */
	fs_device_seen(fs, *index, dev);
	b->pool_limit = gpo_pool_stats(dev, &ps) ? UINT64_MAX : ps.limit_bytes;
	ret = dev_describe(fs, *index, &b->device);
	if (!ret)
		ret = gpo_device_info(fs->ctx, *index, &info);
	if (ret)
		goto out_unlock;
	snprintf(id, idlen, "%s", info.id);
	n = gpo_device_count(fs->ctx);
	for (i = 0; i < n && (int)b->ndisabled < max; i++) {
		if (gpo_device_info(fs->ctx, i, &info) || info.enabled ||
		    !info.present)
			continue;
		ret = dev_describe(fs, i, &off[b->ndisabled]);
		if (ret)
			goto out_unlock;
		b->ndisabled++;
	}
out_unlock:
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret;
}

/*
 * Each of @n ranks' devices (config_rank_device()) for the worker, in
 * @rd, with its own pools/<i>/max: a rank's memory counts against its
 * own device's pool; their ids joined by commas in @ids (stat's
 * rank_devices). @n 0: none (one process).
 */
static int ranks_plan(struct job *j, const struct job_config *cfg,
		      struct wp_rank_dev *rd, uint64_t n, char *ids,
		      size_t idlen)
{
	struct fsd *fs = j->fs;
	struct gpo_device_info info;
	struct gpo_pool_stats ps;
	struct gpo_device *dev;
	char spec[DEVICE_SPEC_MAX];
	size_t used = 0;
	uint64_t r;
	int index, ret = 0;

	ids[0] = '\0';
	pthread_rwlock_rdlock(&fs->ctx_lock);
	for (r = 0; r < n; r++) {
		ret = config_rank_device(fs, cfg, r, spec, sizeof(spec));
		if (ret)
			break;
		ret = gpo_device_select(fs->ctx, spec, &dev);
		if (ret) {
			char msg[300];

			fs_lib_err(ret);
			snprintf(msg, sizeof(msg), "%s", fs_errmsg());
			ret = fs_err(ret, "rank %llu's device '%s': %s",
				     (unsigned long long)r, spec, msg);
			break;
		}
		index = gpo_device_index(dev);
		fs_device_seen(fs, index, dev);
		memset(&rd[r], 0, sizeof(rd[r]));
		rd[r].pool_limit = gpo_pool_stats(dev, &ps) ? UINT64_MAX :
				   ps.limit_bytes;
		ret = dev_describe(fs, index, &rd[r].device);
		if (ret)
			break;
		ret = gpo_device_info(fs->ctx, index, &info);
		if (ret) {
			fs_lib_err(ret);
			break;
		}
		used += snprintf(ids + used, idlen - used, "%s%s",
				 r ? "," : "", info.id);
		if (used >= idlen)
			used = idlen - 1;
	}
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret;
}

/* opt_lock held: the optimizer @cfg describes, made in the worker; its
 * params kept from the one it replaces when @keep (same model) */
static int worker_build(struct job *j, const struct job_config *cfg, int keep)
{
	const struct model *m = &cfg->model;
	struct gpo__sbuf hp, st, mt;
	struct wp_req rq = { .cmd = WP_BUILD };
	struct wp_rep rp;
	struct wp_build *b;
	struct wp_tensor *t;
	struct wp_dev *off;
	struct wp_rank_dev *rd;
	char dev_id[32], spec[DEVICE_SPEC_MAX], *rank_ids;
	uint64_t need, mem = config_mem_bytes(cfg), more = 0, nrd;
	int i, ndev, dev_index, ret;

	if (m->kind == MODEL_NONE)
		return fs_err(-EINVAL, "no model: write model=... to config");
	/* ranks each on a device of their own, told one by one */
	nrd = cfg->ranks > 1 ? cfg->ranks : 0;
	rank_ids = calloc(1, RANK_DEVS_MAX);
	if (!rank_ids)
		return fs_err(-ENOMEM, "out of memory");
	/* the uid's limit is checked before the worker touches a byte */
	if (mem > j->mem_bytes) {
		more = mem - j->mem_bytes;
		ret = fs_mem_reserve(j->fs, j->uid, more);
		if (ret) {
			free(rank_ids);
			return ret;
		}
	}
	gpo__sbuf_init(&hp);
	gpo__sbuf_init(&st);
	gpo__sbuf_init(&mt);
	ret = config_hp_text(cfg, &hp);
	if (!ret && config_uses_sched(cfg))
		ret = config_sched_text(cfg, &st);
	if (!ret)
		ret = config_model_text(cfg, &mt);
	if (ret)
		goto out_free;
	pthread_rwlock_rdlock(&j->fs->ctx_lock);
	ndev = gpo_device_count(j->fs->ctx);
	pthread_rwlock_unlock(&j->fs->ctx_lock);
	if (ndev < 1)
		ndev = 1;
	/* params and gradients grow it when they first cross */
	need = sizeof(*b) + (uint64_t)ndev * sizeof(*off) +
	       nrd * sizeof(*rd) +
	       (uint64_t)m->ntensors * sizeof(*t) + hp.len + st.len + mt.len;
	ret = shm_reserve(j, need);
	if (ret)
		goto out_free;
	b = shm_cmd(j);
	memset(b, 0, sizeof(*b));
	off = (struct wp_dev *)(b + 1);
	/* the job's device is rank 0's */
	pthread_rwlock_rdlock(&j->fs->ctx_lock);
	ret = config_rank_device(j->fs, cfg, 0, spec, sizeof(spec));
	pthread_rwlock_unlock(&j->fs->ctx_lock);
	if (!ret)
		ret = dev_plan(j, spec, b, off, ndev, &dev_index, dev_id,
			       sizeof(dev_id));
	if (ret)
		goto out_free;
	rd = (struct wp_rank_dev *)(off + b->ndisabled);
	ret = ranks_plan(j, cfg, rd, nrd, rank_ids, RANK_DEVS_MAX);
	if (ret)
		goto out_free;
	if (!nrd)
		snprintf(rank_ids, RANK_DEVS_MAX, "%s", dev_id);
	b->nrank_devs = (uint32_t)nrd;
	b->optimizer = cfg->optimizer;
	b->ntensors = m->ntensors;
	snprintf(b->model, sizeof(b->model), "%s", model_kind_name(m->kind));
	if (config_uses_sched(cfg))
		snprintf(b->schedule, sizeof(b->schedule), "%s",
			 cfg->schedule);
	b->seed = cfg->seed;
	b->numel = m->numel;
	b->hp_len = hp.len;
	b->sched_len = st.len;
	b->model_len = mt.len;
	b->param_dtype = cfg->param_dtype;
	b->state_dtype = cfg->state_dtype;
	t = (struct wp_tensor *)(rd + nrd);
	for (i = 0; i < m->ntensors; i++, t++) {
		memset(t, 0, sizeof(*t));
		snprintf(t->name, sizeof(t->name), "%s", m->t[i].name);
		t->ndim = m->t[i].ndim;
		memcpy(t->shape, m->t[i].shape, sizeof(t->shape));
	}
	if (hp.len)
		memcpy(t, hp.buf, hp.len);
	if (st.len)
		memcpy((char *)t + hp.len, st.buf, st.len);
	if (mt.len)
		memcpy((char *)t + hp.len + st.len, mt.buf, mt.len);
	rq.flags = keep ? WP_F_KEEP_PARAMS : 0;
	rq.bytes = (char *)t + hp.len + st.len + mt.len - (char *)b;
	ret = worker_call(j, &rq, &rp, 1);
	if (ret)
		goto out_free;
	if (mem < j->mem_bytes)
		fs_mem_release(j->fs, j->uid, j->mem_bytes - mem);
	j->mem_bytes = mem;
	more = 0;
	j->w.built = 1;
	if (!j->w.holds_dev) {
		pthread_mutex_lock(&j->fs->lock);
		j->fs->dev_users++;
		pthread_mutex_unlock(&j->fs->lock);
		j->w.holds_dev = 1;
	}
	pthread_mutex_lock(&j->lock);
	snprintf(j->dev_id, sizeof(j->dev_id), "%s", dev_id);
	snprintf(j->rank_devs, sizeof(j->rank_devs), "%s", rank_ids);
	j->dev_index = dev_index;
	if (strcmp(rp.dev_id, dev_id))
		fs_debug(j->fs, "job %s: device %s is %s in its worker",
			 j->name, dev_id, rp.dev_id);
	j->spe = rp.steps_per_epoch;
	pthread_mutex_unlock(&j->lock);
out_free:
	fs_mem_release(j->fs, j->uid, more);
	gpo__sbuf_free(&hp);
	gpo__sbuf_free(&st);
	gpo__sbuf_free(&mt);
	free(rank_ids);
	return ret;
}

static int restore_pending(struct job *j);

/* The optimizer, built on first need, its worker started; opt_lock held. */
static int ensure_built(struct job *j)
{
	struct job_config cfg;
	int ret;

	if (j->w.built)
		return 0;
	pthread_mutex_lock(&j->lock);
	ret = j->quit ? fs_err(-ENOENT, "job '%s' is gone (rmdir)", j->name) :
	      0;
	pthread_mutex_unlock(&j->lock);
	if (ret)
		return ret;
	if (!j->w.pid) {
		ret = worker_spawn(j);
		if (ret)
			return ret;
	}
	ret = config_get(j, &cfg);
	if (ret)
		return ret;
	ret = worker_build(j, &cfg, 0);
	config_free(&cfg);
	if (!ret && j->restore_from[0])
		ret = restore_pending(j);
	return ret;
}

/*
 * opt_lock held: the configured hyperparameters, from the next step. A
 * schedule then scales the configured lr; @flags WP_F_RESTART_SCHED
 * starts it over.
 */
static int apply_hparams(struct job *j, const struct job_config *cfg,
			 unsigned int flags, double *lr)
{
	struct wp_req rq = { .cmd = WP_HPARAMS, .flags = flags };
	struct gpo__sbuf hp, st;
	struct wp_rep rp;
	int ret;

	gpo__sbuf_init(&hp);
	gpo__sbuf_init(&st);
	ret = config_hp_text(cfg, &hp);
	if (!ret && config_uses_sched(cfg))
		ret = config_sched_text(cfg, &st);
	if (!ret)
		ret = shm_reserve(j, hp.len + st.len);
	if (!ret) {
		if (hp.len)
			memcpy(shm_cmd(j), hp.buf, hp.len);
		if (st.len)
			memcpy((char *)shm_cmd(j) + hp.len, st.buf, st.len);
		rq.arg = hp.len;
		rq.bytes = hp.len + st.len;
		ret = worker_call(j, &rq, &rp, 0);
	}
	if (!ret && lr)
		*lr = rp.st.lr;
	gpo__sbuf_free(&hp);
	gpo__sbuf_free(&st);
	return ret;
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

/*
 * opt_lock held: an fd of the job's checkpoints directory, made if need
 * be, for the worker. The worker writes there as the job's owner but
 * reaches it only through this fd: the directories above are the daemon's
 * alone (0700), so no other user gets in by path, and by the worker's
 * /proc/PID/fd only its owner does. The sticky bit (01777) lets the
 * worker replace only its own files; the daemon, owning the directory,
 * lists, reads, prunes and removes them.
 */
static int ckpt_dir_fd(struct job *j)
{
	char dir[PATH_MAX];
	int ret, fd;

	/* made and opened a step at a time, never through a link */
	ret = ckpt_dir(j, dir, sizeof(dir));
	if (ret)
		return ret;
	fd = ckpt_dirfd(j, 1);
	if (fd < 0)
		return fs_err(fd, "%s: %s", dir, strerror(-fd));
	if (j->uid != geteuid() && fchmod(fd, 01777)) {
		ret = fs_err(-errno, "%s: %s", dir, strerror(errno));
		close(fd);
		return ret;
	}
	return fd;
}

/* opt_lock held: save the optimizer as checkpoint @name, in the worker */
static int ckpt_save(struct job *j, const char *name, long uid)
{
	char path[PATH_MAX + 80];
	struct wp_req rq = { .cmd = WP_SAVE };
	struct wp_rep rp;
	int ret;

	ret = ckpt_path(j, name, path, sizeof(path));
	if (ret)
		return ret;
	snprintf(rq.name, sizeof(rq.name), "%s", strrchr(path, '/') + 1);
	ret = worker_call(j, &rq, &rp, 1);
	if (ret)
		return ret;
	pthread_mutex_lock(&j->lock);
	snprintf(j->last_ckpt, sizeof(j->last_ckpt), "%s", rq.name);
	j->last_ckpt_step = rp.st.step;
	job_event(j, uid, "checkpoint %s at step %llu", rq.name,
		  (unsigned long long)rp.st.step);
	pthread_mutex_unlock(&j->lock);
	return 0;
}

static void auto_name(uint64_t step, char *buf, size_t len)
{
	snprintf(buf, len, CKPT_AUTO "%010llu", (unsigned long long)step);
}

/*
 * opt_lock held, after a step: the automatic checkpoint, if one is due.
 * Its failure is reported but does not stop the job.
 */
static void ckpt_auto(struct job *j, const struct wp_stat *si)
{
	uint64_t every = j->cfg.checkpoint_every;
	char name[32], msg[512];

	if (!every || si->skipped || si->step % every)
		return;
	auto_name(si->step, name, sizeof(name));
	if (ckpt_save(j, name, -1)) {
		if (!j->w.pid)
			return;		/* the worker died: the job failed */
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

static uint64_t job_step(struct job *j)
{
	uint64_t step;

	pthread_mutex_lock(&j->lock);
	step = j->step;
	pthread_mutex_unlock(&j->lock);
	return step;
}

static int ctl_checkpoint(struct job *j, const char *arg, uid_t uid)
{
	char name[32];
	int ret;

	fair_lock(&j->opt_lock);
	ret = ensure_built(j);
	if (!ret && !arg)
		auto_name(job_step(j), name, sizeof(name));
	if (!ret)
		ret = ckpt_save(j, arg ? arg : name, uid);
	if (!ret && !arg)
		ckpt_prune(j, j->cfg.keep_checkpoints);
	fair_unlock(&j->opt_lock);
	return ret;
}

/*
 * opt_lock held: the settings a restore brought back (in shm, proto.h's
 * WP_R_SAVED) become the job's config, as config shows them and its
 * record keeps them. Should they not fit the config (they passed the
 * library's checks, so they should), the configured ones go back to the
 * worker instead.
 */
static int take_restored(struct job *j, const char *file)
{
	const char *hp = shm_cmd(j), *sched, *end;
	struct job_config next;
	char msg[WP_MSG_MAX];
	int ret = -EPROTO;

	end = memchr(hp, '\0', WP_RESTORED_MAX);
	sched = end ? end + 1 : NULL;
	if (sched && memchr(sched, '\0', WP_RESTORED_MAX - (sched - hp)))
		ret = config_restored(j->fs, &j->cfg, hp, sched, &next);
	if (ret) {
		snprintf(msg, sizeof(msg), "%s",
			 ret == -EPROTO ? "a garbled reply" : fs_errmsg());
		pthread_mutex_lock(&j->lock);
		job_event(j, -1, "restore %s: its settings do not fit the config (%s); the configured ones stay",
			  file, msg);
		pthread_mutex_unlock(&j->lock);
		return apply_hparams(j, &j->cfg, 0, NULL);
	}
	pthread_mutex_lock(&j->lock);
	config_free(&j->cfg);
	j->cfg = next;
	j->grad_scale = config_hp(j->fs, &j->cfg, "grad_scale");
	/* the loss scale is the file's, with the worker's reply */
	job_touch(j, JOB_T(JOB_T_CONFIG));
	pthread_mutex_unlock(&j->lock);
	return 0;
}

/*
 * opt_lock held: restore checkpoint file @file in the worker. A file
 * gpuopt wrote brings back its hyperparameters and schedule (as torch's
 * load_state_dict): they replace the config's. A foreign one holds none:
 * the configured ones stay.
 */
static int restore_file(struct job *j, const char *file, unsigned int flags,
			struct wp_stat *st)
{
	struct wp_req rq = { .cmd = WP_RESTORE, .flags = flags };
	struct wp_rep rp;
	int ret;

	snprintf(rq.name, sizeof(rq.name), "%s", file);
	rq.bytes = WP_RESTORED_MAX;
	ret = shm_reserve(j, rq.bytes);
	if (ret)
		return ret;
	ret = worker_call(j, &rq, &rp, 1);
	*st = rp.st;
	if (!ret && (rp.flags & WP_R_SAVED))
		ret = take_restored(j, file);
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
	char path[PATH_MAX + 80], msg[WP_MSG_MAX];
	struct wp_stat st;
	int ret;

	if (!arg)
		return fs_err(-EINVAL, "restore NAME: a name is needed");
	if (how && strcmp(how, "foreign"))
		return fs_err(-EINVAL,
			      "restore NAME [foreign]: '%.32s' is not foreign",
			      how);
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
	if (!ret && access(path, F_OK))
		ret = fs_err(-ENOENT, "restore: no checkpoint '%s'", arg);
	if (!ret) {
		ret = restore_file(j, strrchr(path, '/') + 1,
				   how ? WP_F_FOREIGN : 0, &st);
		if (ret == -ENODATA && !how) {
			snprintf(msg, sizeof(msg), "%s", fs_errmsg());
			fs_err(ret, "%s (write 'restore %s foreign' to read it anyway)",
			       msg, arg);
		}
	}
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		j->step = st.step;
		j->loss = NAN;
		j->grad_norm = NAN;
		j->lr = st.lr;
		if (isfinite(st.loss_scale))
			j->loss_scale = st.loss_scale;
		snprintf(j->last_ckpt, sizeof(j->last_ckpt), "%s",
			 strrchr(path, '/') + 1);
		j->last_ckpt_step = st.step;
		job_event(j, uid, "restored %s%s at step %llu",
			  strrchr(path, '/') + 1, how ? " (foreign)" : "",
			  (unsigned long long)st.step);
		job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
		set_state(j, st.step ? JOB_PAUSED : JOB_CREATED, uid);
		pthread_mutex_unlock(&j->lock);
	}
	fair_unlock(&j->opt_lock);
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

static int rec_dir_open(struct fsd *fs, uid_t uid, const char *name,
			int make);

/* an fd of the job's checkpoints directory as it is, or -errno */
static int ckpt_dir_open_nofollow(struct job *j)
{
	int dfd, fd;

	dfd = rec_dir_open(j->fs, j->uid, j->name, 0);
	if (dfd < 0)
		return dfd;
	fd = openat(dfd, "checkpoints",
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

/*
 * The job's checkpoint files: counted, or removed when @remove. Reached
 * without following a symlink, so that rmdir or purge never removes
 * files of a directory a link points to. Returns the count, or -errno.
 */
static int ckpt_files(struct job *j, int remove)
{
	struct dirent *d;
	int fd, n = 0;
	DIR *dp;

	fd = ckpt_dir_open_nofollow(j);
	if (fd < 0)
		return fd == -ENOENT ? 0 : fd;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return -errno;
	}
	while ((d = readdir(dp))) {
		if (!job_ckpt_valid(d->d_name))
			continue;
		if (!remove || !unlinkat(dirfd(dp), d->d_name, 0))
			n++;
	}
	closedir(dp);
	return n;
}

/* ---- steps --------------------------------------------------------------- */

static uint64_t active_ns(const struct job *j)
{
	return j->active_ns + (j->run_since ? gpo__now_ns() - j->run_since : 0);
}

/* j->lock held: a step finished (or failed) */
static void after_step(struct job *j, const struct step_result *r)
{
	const struct wp_stat *si = &r->st;

	j->in_step--;
	pthread_cond_broadcast(&j->cond);
	if (r->t1 && j->dev_index >= 0)
		fs_busy_add(j->fs, j->dev_index, r->t0, r->t1);
	if (r->ret) {
		if (j->state == JOB_FAILED)
			return;		/* its worker died: said already */
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
	j->loss = si->loss;
	j->lr = si->lr;
	j->grad_norm = si->grad_norm;
	if (isfinite(si->loss_scale))
		j->loss_scale = si->loss_scale;
	j->nextra = si->nextra;
	memcpy(j->extra, si->extra, si->nextra * sizeof(si->extra[0]));
	j->steps_run++;
	job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
	__atomic_add_fetch(&j->fs->steps_total, 1, __ATOMIC_RELAXED);
	if (!si->skipped && j->cfg.log_every && j->step % j->cfg.log_every == 0)
		history_row(j);
	if (j->steps_left && !--j->steps_left && j->state == JOB_RUNNING)
		set_state(j, JOB_PAUSED, -1);
	if (j->step >= step_limit(j) &&
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

/* One step of a built-in model, in the worker; opt_lock held. */
static int objective_step(struct job *j, struct step_result *r)
{
	struct wp_req rq = { .cmd = WP_STEP };
	struct wp_rep rp;
	int ret;

	ret = worker_call(j, &rq, &rp, 0);
	r->st = rp.st;
	return ret;
}

/* the newest automatic checkpoint's file name, or "" for none */
static void ckpt_newest(struct job *j, char *out, size_t len)
{
	char dir[PATH_MAX], **names;
	int n;

	out[0] = '\0';
	if (ckpt_dir(j, dir, sizeof(dir)))
		return;
	n = gpo__dir_list(dir, is_auto_ckpt, NULL, NULL, &names);
	if (n > 0) {
		snprintf(out, len, "%s", names[n - 1]);
		gpo__dir_free(names, n);
	}
}

/*
 * opt_lock held: restart_on_failure: a new worker, at the newest automatic
 * checkpoint (or at the start when there is none).
 */
static int worker_restart(struct job *j, char *from, size_t len)
{
	struct wp_stat st;
	int ret;

	ckpt_newest(j, from, len);
	ret = ensure_built(j);
	if (ret || !from[0]) {
		if (!from[0])
			snprintf(from, len, "the start");
		memset(&st, 0, sizeof(st));
		st.loss = NAN;
		st.grad_norm = NAN;
		st.lr = config_lr(j->fs, &j->cfg);
	} else {
		ret = restore_file(j, from, 0, &st);
	}
	if (ret)
		return ret;
	pthread_mutex_lock(&j->lock);
	j->step = st.step;
	j->lr = st.lr;
	j->loss = NAN;
	j->grad_norm = NAN;
	if (isfinite(st.loss_scale))
		j->loss_scale = st.loss_scale;
	pthread_mutex_unlock(&j->lock);
	return 0;
}

/* j->lock held: after a worker's death, restart it if the config says so */
static void maybe_restart(struct job *j)
{
	char from[80], msg[512];
	int ret;

	if (j->state != JOB_FAILED || !j->worker_died || j->quit ||
	    j->restarts >= j->cfg.restart_on_failure)
		return;
	j->worker_died = 0;
	j->restarts++;
	j->in_step++;		/* rmdir and reset wait for it */
	pthread_mutex_unlock(&j->lock);
	fair_lock(&j->opt_lock);
	ret = worker_restart(j, from, sizeof(from));
	if (ret)
		snprintf(msg, sizeof(msg), "%s", fs_errmsg());
	fair_unlock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	j->in_step--;
	pthread_cond_broadcast(&j->cond);
	if (ret) {
		job_event(j, -1, "restart %llu of %llu failed: %s",
			  (unsigned long long)j->restarts,
			  (unsigned long long)j->cfg.restart_on_failure, msg);
		return;
	}
	job_event(j, -1, "restart %llu of %llu: a new worker from %s at step %llu",
		  (unsigned long long)j->restarts,
		  (unsigned long long)j->cfg.restart_on_failure, from,
		  (unsigned long long)j->step);
	job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
	set_state(j, JOB_RUNNING, -1);
}

static void *runner_main(void *arg)
{
	struct job *j = arg;
	struct step_result r;

	pthread_mutex_lock(&j->lock);
	for (;;) {
		while (!j->quit && (j->state != JOB_RUNNING ||
				    !config_steps_itself(&j->cfg)))
			pthread_cond_wait(&j->cond, &j->lock);
		if (j->quit)
			break;
		if (j->step >= step_limit(j)) {
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
			ckpt_auto(j, &r.st);
		/* a failed step of ranks leaves them aborting: end them now */
		if (r.ret && j->w.mpi && j->w.pid)
			worker_stop(j);
		fair_unlock(&j->opt_lock);

		pthread_mutex_lock(&j->lock);
		after_step(j, &r);
		maybe_restart(j);
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
	if (config_steps_itself(&j->cfg)) {
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
	if (!ret && config_steps_itself(&j->cfg))
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

/*
 * A "step N" write waits in a FUSE thread. So that one user's waits never
 * take the threads everyone's reads need, at most STEP_WAITERS_UID of
 * them wait per uid and STEP_WAITERS in all (the daemon runs 16 threads
 * by default); more get EAGAIN.
 */
#define STEP_WAITERS 8
#define STEP_WAITERS_UID 4

static pthread_mutex_t waiters_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { uid_t uid; int n; } waiters[STEP_WAITERS];
static int waiters_total;

static int waiter_enter(uid_t uid)
{
	int i, free_slot = -1, ret = 0;

	pthread_mutex_lock(&waiters_lock);
	for (i = 0; i < STEP_WAITERS; i++) {
		if (waiters[i].n && waiters[i].uid == uid)
			break;
		if (!waiters[i].n && free_slot < 0)
			free_slot = i;
	}
	if (waiters_total >= STEP_WAITERS)
		ret = fs_err(-EAGAIN,
			     "step N: %d writes wait already, the most at once (write start, or try again later)",
			     waiters_total);
	else if (i < STEP_WAITERS && waiters[i].n >= STEP_WAITERS_UID)
		ret = fs_err(-EAGAIN,
			     "step N: uid %u has %d writes waiting, the most at once (write start, or try again later)",
			     (unsigned int)uid, waiters[i].n);
	if (!ret) {
		if (i == STEP_WAITERS) {
			i = free_slot;
			waiters[i].uid = uid;
		}
		waiters[i].n++;
		waiters_total++;
	}
	pthread_mutex_unlock(&waiters_lock);
	return ret;
}

static void waiter_leave(uid_t uid)
{
	int i;

	pthread_mutex_lock(&waiters_lock);
	for (i = 0; i < STEP_WAITERS; i++) {
		if (waiters[i].n && waiters[i].uid == uid) {
			waiters[i].n--;
			waiters_total--;
			break;
		}
	}
	pthread_mutex_unlock(&waiters_lock);
}

/*
 * j->lock held: wait for a "step N" to end, waking every 100 ms for
 * shutdown, rmdir and the writer's signals: an interrupted writer gets
 * EINTR at once (the steps go on; the job pauses after them).
 */
static int wait_steps(struct job *j)
{
	struct timespec ts;
	uint64_t n;

	while (j->state == JOB_RUNNING && j->steps_left) {
		if (fs_exiting(j->fs)) {
			j->steps_left = 0;
			return fs_err(-EINTR, "the daemon is stopping");
		}
		if (fuse_interrupted())
			return fs_err(-EINTR,
				      "interrupted at step %llu: the job pauses after its %llu steps left",
				      (unsigned long long)j->step,
				      (unsigned long long)j->steps_left);
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&j->cond, &j->lock, &ts);
	}
	n = j->steps_left;
	j->steps_left = 0;
	if (j->state == JOB_FAILED)
		return fs_err(-EIO, "%s", j->error);
	/* max_steps ending it early is success */
	if (n && j->state != JOB_DONE)
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
	ret = config_steps_itself(&j->cfg) ? 0 :
	      fs_err(-EINVAL,
		     "step N needs a built-in model; external models step on writes to grad");
	pthread_mutex_unlock(&j->lock);
	if (ret)
		return ret;
	ret = waiter_enter(uid);
	if (ret)
		return ret;
	ret = build_in_state(j, "step", STATE_BIT(JOB_CREATED) |
			     STATE_BIT(JOB_PAUSED));
	if (ret)
		goto out_leave;
	ret = start_runner(j);
	if (ret)
		goto out_unlock;
	j->steps_left = n;
	set_state(j, JOB_RUNNING, uid);
	ret = wait_steps(j);
out_unlock:
	pthread_mutex_unlock(&j->lock);
out_leave:
	waiter_leave(uid);
	return ret;
}

/* opt_lock held: the worker's optimizer back to step 0, its schedule
 * started over */
static int reset_worker(struct job *j)
{
	struct wp_req rq = { .cmd = WP_RESET };
	struct wp_rep rp;
	int ret;

	if (!j->w.built)
		return 0;
	ret = worker_call(j, &rq, &rp, 0);
	if (!ret)
		ret = apply_hparams(j, &j->cfg, WP_F_RESTART_SCHED, NULL);
	return ret;
}

static int ctl_reset(struct job *j, uid_t uid)
{
	int ret = 0;

	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->in_step)
		ret = wrong_state(j, "reset");
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = reset_worker(j);
	pthread_mutex_lock(&j->lock);
	if (!ret && (j->state == JOB_RUNNING || j->in_step))
		ret = wrong_state(j, "reset");
	if (ret)
		goto out_unlock;
	j->worker_died = 0;
	j->restarts = 0;
	j->nextra = 0;
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

/* purge: remove the job's checkpoints now, so that rmdir may follow */
static int ctl_purge(struct job *j, uid_t uid)
{
	int ret = 0, n = 0;

	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->in_step)
		ret = wrong_state(j, "purge");
	pthread_mutex_unlock(&j->lock);
	if (!ret) {
		n = ckpt_files(j, 1);
		if (n < 0)
			ret = fs_err(n, "purge: the checkpoints: %s",
				     strerror(-n));
	}
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		j->last_ckpt[0] = '\0';
		job_event(j, uid, "purge: %d checkpoints removed", n);
		job_touch(j, JOB_T(JOB_T_DIR));
		pthread_mutex_unlock(&j->lock);
	}
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
	if (!strcmp(verb, "purge") && noarg)
		return ctl_purge(j, uid);
	if (!strcmp(verb, "step"))
		return ctl_step(j, arg, uid);
	if (!strcmp(verb, "checkpoint"))
		return ctl_checkpoint(j, arg, uid);
	if (!strcmp(verb, "restore"))
		return ctl_restore(j, arg, extra, uid);
	return fs_err(-EINVAL,
		      "unknown verb '%.32s' (start pause resume stop step N checkpoint [NAME] restore NAME [foreign] reset purge)",
		      verb);
}

/* ---- samples ------------------------------------------------------------- */

/*
 * A sample is generated in calls of at most SAMPLE_CHUNK bytes, each
 * continuing the text so far, so that no one call nears the worker's
 * watchdog however slow the device; the job's steps wait for the whole
 * (opt_lock held throughout), so that every byte comes from one model.
 */
#define SAMPLE_CHUNK 256

static uint64_t sample_seed(uint64_t seed, uint64_t k)
{
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (k + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * opt_lock held: @n bytes after @prompt of @plen into @out, in chunks;
 * chunk c draws with seed + c
 */
static int sample_run(struct job *j, const char *prompt, size_t plen,
		      size_t n, double temperature, uint64_t seed, char *out)
{
	struct wp_req rq = { .cmd = WP_SAMPLE };
	struct wp_rep rp;
	struct wp_sample *sa;
	size_t done = 0, ctx = JOB_PROMPT_MAX, keep, from, k, c;
	char *p;
	int ret;

	pthread_mutex_lock(&j->lock);
	if (j->cfg.model.kind == MODEL_GPT && j->cfg.model.gpt[3] < ctx)
		ctx = j->cfg.model.gpt[3];
	pthread_mutex_unlock(&j->lock);
	ret = shm_reserve(j, sizeof(*sa) + JOB_PROMPT_MAX + SAMPLE_CHUNK);
	if (ret)
		return ret;
	for (c = 0; done < n; c++) {
		if (c && fuse_interrupted())
			return fs_err(-EINTR, "sample: interrupted after %zu of %zu bytes (no sample made)",
				      done, n);
		k = n - done < SAMPLE_CHUNK ? n - done : SAMPLE_CHUNK;
		sa = shm_cmd(j);
		p = (char *)(sa + 1);
		/*
		 * The prompt, then what came so far: the model sees the
		 * last ctx - 1 bytes of it, so it gets no more than ctx
		 */
		keep = plen + done < ctx ? plen + done : ctx;
		from = plen + done - keep;
		if (from < plen) {
			memcpy(p, prompt + from, plen - from);
			memcpy(p + plen - from, out, done);
		} else {
			memcpy(p, out + (from - plen), keep);
		}
		sa->n = k;
		sa->prompt_len = keep;
		sa->seed = seed + c;
		sa->temperature = temperature;
		rq.bytes = sizeof(*sa) + keep + k;
		ret = worker_call(j, &rq, &rp, 1);
		if (ret)
			return ret;
		/* shm_cmd() again: nothing remaps it during the call, but
		 * the mapping is the job's to move */
		memcpy(out + done, (char *)shm_cmd(j) + sizeof(*sa) + keep, k);
		done += k;
	}
	return 0;
}

/*
 * "sample N [PROMPT]": a gpt model generates N bytes (after PROMPT, the
 * rest of the line) into the job's sample file, greedily or at the
 * config's temperature. Like "step N" it waits in a FUSE thread, so it
 * counts against the same per-uid limit of waiting writers.
 */
static int ctl_sample(struct job *j, const char *text, uid_t uid)
{
	const char *p = text + strlen("sample"), *prompt = "";
	char num[24], *out = NULL;
	size_t len, plen = 0;
	uint64_t n, seed;
	double temperature;
	int ret;

	p += strspn(p, " \t");
	len = strcspn(p, " \t\n");
	if (!len || len >= sizeof(num))
		return fs_err(-EINVAL, "sample N [PROMPT]: N must be a whole number in [1, %u]",
			      JOB_SAMPLE_MAX);
	memcpy(num, p, len);
	num[len] = '\0';
	if (fs_parse_u64(num, &n) || n < 1 || n > JOB_SAMPLE_MAX)
		return fs_err(-EINVAL, "sample N [PROMPT]: N must be a whole number in [1, %u], not '%s'",
			      JOB_SAMPLE_MAX, num);
	p += len;
	/* one blank ends N; the prompt is the rest, less a final newline */
	if (*p == ' ' || *p == '\t') {
		prompt = p + 1;
		plen = strlen(prompt);
		if (plen && prompt[plen - 1] == '\n')
			plen--;
	}
	if (plen > JOB_PROMPT_MAX)
		return fs_err(-EINVAL, "sample: a prompt is at most %u bytes, not %zu",
			      JOB_PROMPT_MAX, plen);
	pthread_mutex_lock(&j->lock);
	ret = j->cfg.model.kind == MODEL_GPT ? 0 :
	      fs_err(-EINVAL, "sample: model %.64s generates no text (gpt models do)",
		     j->cfg.model.spec ? j->cfg.model.spec : "none");
	seed = sample_seed(j->cfg.seed, j->samples);
	temperature = j->cfg.temperature;
	pthread_mutex_unlock(&j->lock);
	if (ret)
		return ret;
	out = malloc(n);
	if (!out)
		return fs_err(-ENOMEM, "out of memory");
	ret = waiter_enter(uid);
	if (ret)
		goto out_free;
	fair_lock(&j->opt_lock);
	ret = ensure_built(j);
	if (!ret)
		ret = sample_run(j, prompt, plen, n, temperature, seed, out);
	/* still under opt_lock: no model change comes in between */
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		gpo__sbuf_reset(&j->sample);
		if (gpo__sbuf_add(&j->sample, out, n)) {
			ret = fs_err(-ENOMEM, "out of memory");
		} else {
			j->samples++;
			job_event(j, uid, "ctl sample %llu (a prompt of %zu bytes, temperature %g)",
				  (unsigned long long)n, plen, temperature);
		}
		job_touch(j, JOB_T(JOB_T_SAMPLE));
		pthread_mutex_unlock(&j->lock);
	}
	fair_unlock(&j->opt_lock);
	waiter_leave(uid);
out_free:
	free(out);
	return ret;
}

int job_sample_copy(struct job *j, struct gpo__sbuf *sb)
{
	int ret;

	pthread_mutex_lock(&j->lock);
	ret = gpo__sbuf_resize(sb, j->sample.len);
	if (!ret && j->sample.len)
		memcpy(sb->buf, j->sample.buf, j->sample.len);
	pthread_mutex_unlock(&j->lock);
	return ret ? fs_err(-ENOMEM, "out of memory") : 0;
}

size_t job_sample_size(struct job *j)
{
	size_t n;

	pthread_mutex_lock(&j->lock);
	n = j->sample.len;
	pthread_mutex_unlock(&j->lock);
	return n;
}

static void job_save(struct job *j);

int job_ctl(struct job *j, const char *text, uid_t uid)
{
	char line[128], *verb, *arg, *extra, *more, *save = NULL;
	int ret;

	pthread_mutex_lock(&j->fs->lock);
	ret = j->removed ? fs_err(-ENOENT, "job '%s' is gone (rmdir)",
				  j->name) : 0;
	pthread_mutex_unlock(&j->fs->lock);
	if (ret)
		return ret;
	/* its prompt is text of its own: the line is not split in words */
	if (!strncmp(text, "sample", 6) && strchr(" \t\n", text[6])) {
		ret = ctl_sample(j, text, uid);
		if (ret) {
			pthread_mutex_lock(&j->lock);
			job_event(j, uid, "ctl sample: %s", fs_errmsg());
			pthread_mutex_unlock(&j->lock);
		}
		job_save(j);
		return ret;
	}
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
	job_save(j);
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
	/*
	 * Another rank count needs another mpiexec; a model of ranks is
	 * attached to its communicator for good: the next need starts anew
	 */
	if (j->w.pid && ((changed & CFG_RANKS) ||
			 (j->w.mpi && (changed & (CFG_OPTIMIZER | CFG_MODEL |
						  CFG_DEVICE | CFG_SCHED))))) {
		worker_stop(j);
		return 0;
	}
	if (!j->w.built)
		return 0;
	if (changed & (CFG_OPTIMIZER | CFG_MODEL | CFG_DEVICE | CFG_SCHED))
		return worker_build(j, cfg, !(changed & CFG_MODEL));
	if (!(changed & CFG_HP))
		return 0;
	return apply_hparams(j, cfg, 0, NULL);
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
	if ((changed & (CFG_OPTIMIZER | CFG_MODEL | CFG_DEVICE | CFG_SCHED |
			CFG_RANKS)) && started(j))
		ret = fs_err(-EBUSY,
			     "optimizer, schedule, model, device, ranks and their settings (shards, hosts, deterministic, zero, overlap, bucket_bytes, timeout) change only before the first step (the job is %s at step %llu; reset first)",
			     job_state_name(j->state),
			     (unsigned long long)j->step);
	pthread_mutex_unlock(&j->lock);
	if (!ret)
		ret = apply_config(j, &next, changed);
	if (!ret) {
		/* a new loss scale setting starts afresh (the library's too) */
		double ls = config_loss_scale(j->fs, &next);
		int ls_new = ls != config_loss_scale(j->fs, &j->cfg) ||
			     config_hp(j->fs, &next, "loss_scale") !=
			     config_hp(j->fs, &j->cfg, "loss_scale");

		pthread_mutex_lock(&j->lock);
		if (ls_new || !started(j))
			j->loss_scale = ls;
		config_free(&j->cfg);
		j->cfg = next;
		if (changed & CFG_MODEL) {
			j->model_gen++;
			/* another model's text */
			gpo__sbuf_reset(&j->sample);
			job_touch(j, JOB_T(JOB_T_SAMPLE));
		}
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
	job_save(j);
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

/* opt_lock held: move @bytes between @buf and the worker's slot */
static int worker_io(struct job *j, enum wp_cmd cmd, int tensor, void *buf,
		     size_t bytes)
{
	struct wp_req rq = { .cmd = cmd, .arg = tensor, .bytes = bytes };
	struct wp_rep rp;
	int ret;

	ret = shm_reserve(j, bytes);
	if (ret)
		return ret;
	if (cmd == WP_PARAM_WRITE || cmd == WP_GRAD_STEP)
		memcpy(shm_cmd(j), buf, bytes);
	ret = worker_call(j, &rq, &rp, 0);
	if (!ret && (cmd == WP_PARAM_READ || cmd == WP_GRAD_READ))
		memcpy(buf, shm_cmd(j), bytes);
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
	if (!ret)
		ret = worker_io(j, write ? WP_PARAM_WRITE : WP_PARAM_READ,
				tensor, buf, bytes);
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
	if (!ret)
		ret = worker_io(j, WP_GRAD_READ, 0, dst, bytes);
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

/*
 * opt_lock held: one step on the gradient @src, in the worker; @src NULL:
 * the one the grad write @id copied into shm in place.
 */
static int grad_step(struct job *j, const void *src, uint64_t id,
		     size_t bytes, double loss, struct wp_stat *st)
{
	struct wp_req rq = { .cmd = WP_GRAD_STEP, .bytes = bytes };
	struct wp_rep rp;
	int ret = 0;

	/* the loss written to the loss file goes with its gradient */
	if (!isnan(loss)) {
		rq.flags |= WP_F_LOSS;
		memcpy(&rq.arg, &loss, sizeof(loss));
	}
	if (src) {
		ret = shm_reserve(j, bytes);
		if (!ret)
			memcpy(shm_cmd(j), src, bytes);
	} else {
		rq.flags |= WP_F_STAGED;
		pthread_mutex_lock(&j->map_lock);
		if (j->w.stage_id != id || j->w.cmd_off < bytes)
			ret = fs_err(-ESTALE,
				     "the job's worker started over during a write in parts (nothing applied; write the whole value again)");
		pthread_mutex_unlock(&j->map_lock);
	}
	if (ret)
		return ret;
	ret = worker_call(j, &rq, &rp, 0);
	*st = rp.st;
	return ret;
}

static int grad_step_job(struct job *j, const void *src, uint64_t id,
			 size_t bytes)
{
	struct step_result r;
	double loss;
	int ret;

	memset(&r, 0, sizeof(r));
	r.st.loss = NAN;
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	ret = grad_allowed(j, bytes);
	loss = j->ext_loss;
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
	if (!r.ret)
		r.ret = grad_step(j, src, id, bytes, loss, &r.st);
	r.t1 = gpo__now_ns();
	if (!r.ret)
		ckpt_auto(j, &r.st);
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

int job_grad_step(struct job *j, const void *src, size_t bytes)
{
	return grad_step_job(j, src, 0, bytes);
}

/*
 * A gradient written in parts goes straight into [0, cmd_off) of the
 * worker's shared memory as its parts arrive: the one copy it takes on
 * its way. One such write owns that space at a time, named by an id
 * never given twice; the worker starting over (a rebuild, a failure)
 * takes it away. Another write meanwhile stages on its own.
 */
int job_grad_claim(struct job *j, uint64_t gen, size_t bytes, uint64_t *id)
{
	long page = sysconf(_SC_PAGESIZE);
	uint64_t area = (bytes + page - 1) / page * page;
	int ret = 0;

	*id = 0;
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (gen != j->model_gen || bytes != j->cfg.model.numel * sizeof(float))
		ret = -ESTALE;
	pthread_mutex_unlock(&j->lock);
	pthread_mutex_lock(&j->map_lock);
	if (!ret && (!j->w.pid || j->w.stage_id))
		ret = -EAGAIN;
	pthread_mutex_unlock(&j->map_lock);
	if (ret)
		goto out_unlock;
	/* no command is under way: moving their start is safe */
	if (area > j->w.cmd_off)
		j->w.cmd_off = area;
	ret = shm_reserve(j, 0);
	if (ret)
		goto out_unlock;
	pthread_mutex_lock(&j->map_lock);
	j->w.stage_id = *id = ++j->w.stage_next;
	pthread_mutex_unlock(&j->map_lock);
out_unlock:
	fair_unlock(&j->opt_lock);
	return ret;
}

int job_grad_put(struct job *j, uint64_t id, uint64_t off, const void *src,
		 size_t size)
{
	int ret = 0;

	pthread_mutex_lock(&j->map_lock);
	if (j->w.stage_id != id)
		ret = fs_err(-ESTALE,
			     "the job's worker started over during a write in parts (nothing applied; write the whole value again)");
	else if (off > j->w.cmd_off || size > j->w.cmd_off - off)
		ret = fs_err(-EINVAL, "too long: %llu bytes (nothing applied)",
			     (unsigned long long)(off + size));
	else
		memcpy((char *)j->w.map + off, src, size);
	pthread_mutex_unlock(&j->map_lock);
	return ret;
}

int job_grad_step_staged(struct job *j, uint64_t id, size_t bytes)
{
	return grad_step_job(j, NULL, id, bytes);
}

void job_grad_unstage(struct job *j, uint64_t id)
{
	pthread_mutex_lock(&j->map_lock);
	if (j->w.stage_id == id)
		j->w.stage_id = 0;
	pthread_mutex_unlock(&j->map_lock);
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

void job_snapshot(struct job *j, struct job_snapshot *s)
{
	double el;
	int i;

	memset(s, 0, sizeof(*s));
	pthread_mutex_lock(&j->lock);
	snprintf(s->name, sizeof(s->name), "%s", j->name);
	s->uid = j->uid;
	s->state = j->state;
	s->step = j->step;
	s->max_steps = step_limit(j);
	s->skipped = j->skipped;
	s->loss = j->loss;
	s->lr = j->lr;
	s->grad_norm = j->grad_norm;
	s->grad_scale = j->grad_scale;
	s->loss_scale = j->loss_scale;
	s->param_dtype = j->cfg.param_dtype;
	s->state_dtype = j->cfg.state_dtype;
	s->master_weights = config_hp(j->fs, &j->cfg, "master_weights") != 0;
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
	snprintf(s->rank_devices, sizeof(s->rank_devices), "%s",
		 j->rank_devs[0] ? j->rank_devs : "-");
	snprintf(s->optimizer, sizeof(s->optimizer), "%s",
		 gpo_optim_kind_name(j->cfg.optimizer));
	snprintf(s->model, sizeof(s->model), "%s",
		 model_kind_name(j->cfg.model.kind));
	s->params = j->cfg.model.numel;
	s->param_bytes = j->cfg.model.numel * sizeof(float);
	s->restarts = j->restarts;
	s->worker_pid = __atomic_load_n(&j->w.pid, __ATOMIC_RELAXED);
	s->ranks = j->cfg.ranks;
	s->shards = j->cfg.shards ? j->cfg.shards : j->cfg.ranks;
	s->deterministic = j->cfg.deterministic;
	s->zero = j->cfg.zero;
	s->overlap = j->cfg.overlap;
	s->bucket_bytes = j->cfg.bucket_bytes;
	/* what the ranks get (config_comm_text()) */
	s->comm_timeout = j->cfg.comm_timeout &&
			  j->cfg.comm_timeout < job_comm_timeout_max() ?
			  (unsigned int)j->cfg.comm_timeout :
			  job_comm_timeout_max();
	s->nextra = j->nextra;
	for (i = 0; i < (int)j->nextra && i < (int)ARRAY_SIZE(s->extra); i++) {
		snprintf(s->extra[i].name, sizeof(s->extra[i].name), "%.23s",
			 j->extra[i].name);
		s->extra[i].value = j->extra[i].value;
	}
	pthread_mutex_unlock(&j->lock);
}

/* ---- records ---------------------------------------------------------------
 *
 * Each job has a record, STATE_DIR/<uid>/<name>/job, beside its checkpoints:
 * its owner, config, state, numbers, error, events and history, so that
 * jobs outlive the daemon. A record is written whole to job.tmp, synced,
 * renamed over the old one and the directory synced: a crash leaves the
 * old record or the new one, never half of one. mkdir, ctl and config
 * writes and the shutdown save it before they return; what steps change
 * (history rows, a job ending) the flusher saves within a second. Every
 * directory under the state directory is opened one at a time with
 * O_NOFOLLOW, so a symlink planted there leads nowhere.
 *
 * The format is text: "gpuoptfs-job 1", then "key value" lines, then the
 * config, events, history and error as "key LENGTH" lines each followed
 * by that many bytes and a newline, then "end HASH", the FNV-1a hash of
 * everything before it.
 */

#define REC_FILE "job"
#define REC_TMP "job.tmp"
#define REC_MAGIC "gpuoptfs-job 1\n"
#define REC_MAX (2ull * JOB_LOG_MAX + (4ull << 20))
#define FLUSH_MS 1000

static uint64_t fnv1a(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (n--) {
		h ^= (unsigned char)*p++;
		h *= 0x100000001b3ull;
	}
	return h;
}

/* @name in directory @dfd, made first when @make: an fd, or -errno */
static int subdir_open(int dfd, const char *name, int make)
{
	int fd;

	if (make) {
		if (!mkdirat(dfd, name, 0700))
			fsync(dfd);	/* the new entry outlives a crash */
		else if (errno != EEXIST)
			return -errno;
	}
	fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* an fd of STATE_DIR/<uid>, made when @make; -errno */
static int uid_dir_open(struct fsd *fs, uid_t uid, int make)
{
	char uname[16];
	int top, fd;

	top = open(fs->state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (top < 0)
		return -errno;
	snprintf(uname, sizeof(uname), "%u", (unsigned int)uid);
	fd = subdir_open(top, uname, make);
	close(top);
	return fd;
}

/* an fd of STATE_DIR/<uid>/<name>, made when @make; -errno */
static int rec_dir_open(struct fsd *fs, uid_t uid, const char *name,
			int make)
{
	int mid, fd;

	mid = uid_dir_open(fs, uid, make);
	if (mid < 0)
		return mid;
	fd = subdir_open(mid, name, make);
	close(mid);
	return fd;
}

static void rec_blob(struct gpo__sbuf *sb, const char *key, const char *p,
		     size_t n)
{
	gpo__sbuf_printf(sb, "%s %zu\n", key, n);
	if (n)
		gpo__sbuf_add(sb, p, n);
	gpo__sbuf_add(sb, "\n", 1);
}

/* j->lock held: the record, its config left for later (@cfg, a copy) */
static int rec_snapshot(struct job *j, struct gpo__sbuf *head,
			struct gpo__sbuf *logs, struct job_config *cfg)
{
	enum job_state s = j->was_running ? JOB_RUNNING : j->state;

	gpo__sbuf_printf(head, REC_MAGIC "name %s\nuid %u\ngid %u\nstate %s\n"
			 "step %llu\nskipped %llu\nrestarts %llu\n"
			 "active_ns %llu\nhistory_step %llu\nhistory_full %d\n"
			 "ckpt %s %llu\n",
			 j->name, (unsigned int)j->uid, (unsigned int)j->gid,
			 job_state_name(s), (unsigned long long)j->step,
			 (unsigned long long)j->skipped,
			 (unsigned long long)j->restarts,
			 (unsigned long long)active_ns(j),
			 (unsigned long long)j->history_step, j->history_full,
			 j->last_ckpt[0] ? j->last_ckpt : "-",
			 (unsigned long long)j->last_ckpt_step);
	rec_blob(logs, "events", j->events.buf, j->events.len);
	rec_blob(logs, "history", j->history.buf, j->history.len);
	rec_blob(logs, "error", j->error, strlen(j->error));
	j->dirty = 0;
	if (head->err || logs->err)
		return fs_err(-ENOMEM, "out of memory");
	return config_copy(cfg, &j->cfg);
}

static int write_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n) {
		w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= w;
	}
	return 0;
}

/* the record @rec (all of it) into the job's directory, atomically */
static int rec_put(struct job *j, const struct gpo__sbuf *rec)
{
	int dfd, fd, ret;

	dfd = rec_dir_open(j->fs, j->uid, j->name, 1);
	if (dfd < 0)
		return dfd;
	unlinkat(dfd, REC_TMP, 0);	/* a crash's leftover, or a planted link */
	fd = openat(dfd, REC_TMP, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	if (fd < 0) {
		ret = -errno;
		goto out_dir;
	}
	ret = write_all(fd, rec->buf, rec->len);
	if (!ret && fsync(fd))
		ret = -errno;
	close(fd);
	if (!ret && renameat(dfd, REC_TMP, dfd, REC_FILE))
		ret = -errno;
	if (!ret && fsync(dfd))
		ret = -errno;
	if (ret)
		unlinkat(dfd, REC_TMP, 0);
out_dir:
	close(dfd);
	return ret;
}

/* save_lock held: write the job's record now */
static int rec_write(struct job *j)
{
	struct gpo__sbuf head, logs, text;
	struct job_config cfg;
	char end[40];
	int ret;

	gpo__sbuf_init(&head);
	gpo__sbuf_init(&logs);
	gpo__sbuf_init(&text);
	pthread_mutex_lock(&j->lock);
	ret = rec_snapshot(j, &head, &logs, &cfg);
	pthread_mutex_unlock(&j->lock);
	if (ret)
		goto out_free;
	/* config's own words: what config shows, it reads back */
	ret = config_show(j->fs, &cfg, NULL, &text);
	config_free(&cfg);
	if (ret)
		goto out_free;
	rec_blob(&head, "config", text.buf, text.len);
	gpo__sbuf_add(&head, logs.buf, logs.len);
	snprintf(end, sizeof(end), "end %016llx\n",
		 (unsigned long long)fnv1a(head.buf, head.len));
	gpo__sbuf_printf(&head, "%s", end);
	ret = head.err ? -ENOMEM : rec_put(j, &head);
out_free:
	if (ret) {
		pthread_mutex_lock(&j->lock);
		j->dirty = 1;	/* the flusher tries again */
		pthread_mutex_unlock(&j->lock);
	}
	gpo__sbuf_free(&head);
	gpo__sbuf_free(&logs);
	gpo__sbuf_free(&text);
	return ret;
}

/* Save the job's record, unless rmdir removed it; a failure is logged. */
static void job_save(struct job *j)
{
	char msg[256];
	int ret = 0;

	pthread_mutex_lock(&j->save_lock);
	if (!j->purged)
		ret = rec_write(j);
	pthread_mutex_unlock(&j->save_lock);
	if (ret) {
		snprintf(msg, sizeof(msg), "cannot save the job's record: %s",
			 strerror(-ret));
		fs_journal_job(j->fs, j->name, j->uid, LOG_ERR, "%s", msg);
	}
}

/* opt_lock held, the job out of the list: its record and directory go */
static void rec_remove(struct job *j)
{
	struct dirent *d;
	int dfd, fd;
	DIR *dp;

	pthread_mutex_lock(&j->save_lock);
	j->purged = 1;
	dfd = rec_dir_open(j->fs, j->uid, j->name, 0);
	if (dfd < 0)
		goto out_unlock;
	fd = openat(dfd, "checkpoints",
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	dp = fd >= 0 ? fdopendir(fd) : NULL;
	if (dp) {
		/* what else the worker left there: temporary files */
		while ((d = readdir(dp)))
			if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
				unlinkat(dirfd(dp), d->d_name, 0);
		closedir(dp);
	} else if (fd >= 0) {
		close(fd);
	}
	unlinkat(dfd, "checkpoints", AT_REMOVEDIR);
	unlinkat(dfd, REC_FILE, 0);
	unlinkat(dfd, REC_TMP, 0);
	close(dfd);
	dfd = uid_dir_open(j->fs, j->uid, 0);
	if (dfd >= 0) {
		unlinkat(dfd, j->name, AT_REMOVEDIR);
		fsync(dfd);
		close(dfd);
	}
out_unlock:
	pthread_mutex_unlock(&j->save_lock);
}

/* ---- the flusher: what steps changed, saved within FLUSH_MS ---- */

static pthread_mutex_t flush_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t flush_cond = PTHREAD_COND_INITIALIZER;
static int flush_quit;
static int has_flusher;
static pthread_t flusher;

static void flush_dirty(struct fsd *fs)
{
	struct job **list = NULL, *j;
	int n = 0, i, dirty;

	pthread_mutex_lock(&fs->lock);
	if (fs->njobs)
		list = malloc(fs->njobs * sizeof(*list));
	for (j = fs->jobs; list && j; j = j->next) {
		j->refs++;
		list[n++] = j;
	}
	pthread_mutex_unlock(&fs->lock);
	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&list[i]->lock);
		dirty = list[i]->dirty;
		pthread_mutex_unlock(&list[i]->lock);
		if (dirty)
			job_save(list[i]);
		job_put(list[i]);
	}
	free(list);
}

static void *flusher_main(void *arg)
{
	struct fsd *fs = arg;
	struct timespec ts;

	pthread_mutex_lock(&flush_lock);
	while (!flush_quit) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += FLUSH_MS / 1000;
		pthread_cond_timedwait(&flush_cond, &flush_lock, &ts);
		if (flush_quit)
			break;
		pthread_mutex_unlock(&flush_lock);
		flush_dirty(fs);
		pthread_mutex_lock(&flush_lock);
	}
	pthread_mutex_unlock(&flush_lock);
	return NULL;
}

static void flusher_stop(void)
{
	if (!has_flusher)
		return;
	pthread_mutex_lock(&flush_lock);
	flush_quit = 1;
	pthread_cond_broadcast(&flush_cond);
	pthread_mutex_unlock(&flush_lock);
	pthread_join(flusher, NULL);
	has_flusher = 0;
}

/* ---- loading the records at start ---- */

struct rec {
	char name[JOB_NAME_MAX + 1];
	uint64_t uid, gid, step, skipped, restarts, active_ns, history_step;
	uint64_t history_full, ckpt_step;
	int state;
	char ckpt[80];
	const char *blob[4];		/* config events history error */
	size_t blob_len[4];
};

static const char *const rec_blobs[4] = {
	"config", "events", "history", "error",
};

/* one "key value" line of @p (up to @end); its key and value, 0 or -1 */
static int rec_line(const char **p, const char *end, char *key, size_t klen,
		    char *val, size_t vlen)
{
	const char *nl = memchr(*p, '\n', end - *p), *sp;

	if (!nl)
		return -1;
	sp = memchr(*p, ' ', nl - *p);
	if (!sp || (size_t)(sp - *p) >= klen || (size_t)(nl - sp - 1) >= vlen)
		return -1;
	memcpy(key, *p, sp - *p);
	key[sp - *p] = '\0';
	memcpy(val, sp + 1, nl - sp - 1);
	val[nl - sp - 1] = '\0';
	*p = nl + 1;
	return 0;
}

/* parse record @buf of @len bytes; 0, or -1 with @why said */
static int rec_parse(const char *buf, size_t len, struct rec *r,
		     const char **why)
{
	const char *p = buf, *end = buf + len, *tail;
	char key[32], val[128];
	uint64_t *num, h;
	int i, st;

	memset(r, 0, sizeof(*r));
	r->state = -1;
	*why = "not a gpuoptfs job record";
	if (len < strlen(REC_MAGIC) || memcmp(buf, REC_MAGIC, strlen(REC_MAGIC)))
		return -1;
	*why = "truncated or corrupt: its checksum does not match";
	tail = len >= 21 ? end - 21 : NULL;	/* "end " 16 hex digits "\n" */
	if (!tail || memcmp(tail, "end ", 4) || end[-1] != '\n' ||
	    sscanf(tail + 4, "%16" SCNx64, &h) != 1 || h != fnv1a(buf, tail - buf))
		return -1;
	*why = "a bad line";
	p += strlen(REC_MAGIC);
	while (p < tail) {
		if (rec_line(&p, tail, key, sizeof(key), val, sizeof(val)))
			return -1;
		for (i = 0; i < 4; i++)
			if (!strcmp(key, rec_blobs[i]))
				break;
		if (i < 4) {
			uint64_t n;

			if (fs_parse_u64(val, &n) || n >= (uint64_t)(tail - p) ||
			    p[n] != '\n' ||
			    (i && n > JOB_LOG_MAX))
				return -1;
			r->blob[i] = p;
			r->blob_len[i] = n;
			p += n + 1;
			continue;
		}
		num = !strcmp(key, "uid") ? &r->uid :
		      !strcmp(key, "gid") ? &r->gid :
		      !strcmp(key, "step") ? &r->step :
		      !strcmp(key, "skipped") ? &r->skipped :
		      !strcmp(key, "restarts") ? &r->restarts :
		      !strcmp(key, "active_ns") ? &r->active_ns :
		      !strcmp(key, "history_step") ? &r->history_step :
		      !strcmp(key, "history_full") ? &r->history_full : NULL;
		if (num) {
			if (fs_parse_u64(val, num))
				return -1;
		} else if (!strcmp(key, "name")) {
			snprintf(r->name, sizeof(r->name), "%.63s", val);
		} else if (!strcmp(key, "state")) {
			for (st = 0; st < JOB_STATES; st++)
				if (!strcmp(val, state_names[st]))
					r->state = st;
		} else if (!strcmp(key, "ckpt")) {
			if (sscanf(val, "%79s %" SCNu64, r->ckpt,
				   &r->ckpt_step) != 2)
				return -1;
		}
		/* a key a newer daemon writes: left alone */
	}
	*why = "incomplete: no name, owner, state or config";
	if (!r->name[0] || r->state < 0 || !r->blob[0] || !r->blob[1] ||
	    !r->blob[2] || r->uid > UINT32_MAX - 1 || r->gid > UINT32_MAX - 1)
		return -1;
	return 0;
}

/* a record skipped at start: in error_log and the daemon's log */
static void rec_skip(struct fsd *fs, uid_t uid, const char *path,
		     const char *fmt, ...) FS_PRINTF(4, 5);

static void rec_skip(struct fsd *fs, uid_t uid, const char *path,
		     const char *fmt, ...)
{
	char msg[256], where[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(where, sizeof(where), "%s", path);
	fs_log_error(fs, uid, where, msg);
	fprintf(stderr, "gpuoptfs: %s: skipped: %s\n", path, msg);
	fs_debug(fs, "%s: skipped: %s", path, msg);
}

/* the automatic checkpoint with the highest step, and that step */
static int ckpt_newest_auto(struct job *j, char *out, size_t len,
			    uint64_t *step)
{
	struct dirent *d;
	uint64_t s, best = 0;
	int fd, found = 0;
	char digits[16];
	DIR *dp;

	fd = ckpt_dir_open_nofollow(j);
	if (fd < 0)
		return 0;
	dp = fdopendir(fd);
	if (!dp) {
		close(fd);
		return 0;
	}
	while ((d = readdir(dp))) {
		if (!is_auto_ckpt(d->d_name, NULL))
			continue;
		snprintf(digits, sizeof(digits), "%.10s",
			 d->d_name + strlen(CKPT_AUTO));
		if (fs_parse_u64(digits, &s) || (found && s <= best))
			continue;
		best = s;
		found = 1;
		snprintf(out, len, "%.79s", d->d_name);
	}
	closedir(dp);
	*step = best;
	return found;
}

/* is checkpoint file @file there, a regular file? */
static int ckpt_exists(struct job *j, const char *file)
{
	struct stat st;
	int fd, ret;

	if (!job_ckpt_valid(file))
		return 0;
	fd = ckpt_dir_open_nofollow(j);
	if (fd < 0)
		return 0;
	ret = !fstatat(fd, file, &st, AT_SYMLINK_NOFOLLOW) &&
	      S_ISREG(st.st_mode);
	close(fd);
	return ret;
}

/*
 * A job loaded as running or paused: its worker and the params in it are
 * gone, so it comes back paused at its newest checkpoint (restored when
 * it is next built), or at created without one; autostart=1 resumes a
 * job that was running.
 */
static void rec_revive(struct job *j, int was_running)
{
	char from[80] = "";
	uint64_t step = 0, astep;
	char aname[80];

	if (j->last_ckpt[0] && ckpt_exists(j, j->last_ckpt)) {
		snprintf(from, sizeof(from), "%s", j->last_ckpt);
		step = j->last_ckpt_step;
	}
	if (ckpt_newest_auto(j, aname, sizeof(aname), &astep) &&
	    (!from[0] || astep > step)) {
		snprintf(from, sizeof(from), "%s", aname);
		step = astep;
	}
	j->loss = NAN;
	j->grad_norm = NAN;
	j->lr = config_lr(j->fs, &j->cfg);
	if (from[0]) {
		snprintf(j->restore_from, sizeof(j->restore_from), "%s", from);
		j->step = step;
		j->state = JOB_PAUSED;
		job_event(j, -1, "the daemon restarted: paused at checkpoint %s, step %llu (it was %s)",
			  from, (unsigned long long)step,
			  was_running ? "running" : "paused");
	} else {
		j->step = 0;
		j->skipped = 0;
		j->state = JOB_CREATED;
		job_event(j, -1, "the daemon restarted: no checkpoint, so the job is created again at step 0 (it was %s)",
			  was_running ? "running" : "paused");
	}
	if (!was_running || !j->cfg.autostart)
		return;
	if (config_steps_itself(&j->cfg) && start_runner(j)) {
		job_event(j, -1, "autostart: %s", fs_errmsg());
		return;
	}
	job_event(j, -1, "autostart=1: resuming");
	set_state(j, JOB_RUNNING, -1);
}

static struct job *job_alloc(struct fsd *fs, const char *name, uid_t uid,
			     gid_t gid);
static struct job *find_locked(struct fsd *fs, const char *name);

/* one record, read from @fd (already checked: ours, regular) */
static int rec_load(struct fsd *fs, uid_t uid, const char *dname,
		    const char *path, const char *buf, size_t len)
{
	struct job_config next;
	unsigned int changed;
	const char *why;
	struct job *j;
	struct rec r;
	char *text;
	int ret;

	if (rec_parse(buf, len, &r, &why)) {
		rec_skip(fs, uid, path, "%s", why);
		return -EINVAL;
	}
	if (r.uid != uid || strcmp(r.name, dname) || !job_name_valid(r.name)) {
		rec_skip(fs, uid, path,
			 "foreign: it names job '%.64s' of uid %llu, not '%s' of uid %u",
			 r.name, (unsigned long long)r.uid, dname,
			 (unsigned int)uid);
		return -EINVAL;
	}
	j = job_alloc(fs, r.name, r.uid, r.gid);
	text = strndup(r.blob[0], r.blob_len[0]);
	if (!j || !text) {
		free(text);
		if (j)
			job_put(j);
		rec_skip(fs, uid, path, "out of memory");
		return -ENOMEM;
	}
	ret = config_parse(fs, &j->cfg, text, &next, &changed);
	free(text);
	if (ret) {
		rec_skip(fs, uid, path, "its config: %s", fs_errmsg());
		job_put(j);
		return ret;
	}
	config_free(&j->cfg);
	j->cfg = next;
	j->grad_scale = config_hp(fs, &j->cfg, "grad_scale");
	j->loss_scale = config_loss_scale(fs, &j->cfg);
	gpo__sbuf_reset(&j->events);
	gpo__sbuf_add(&j->events, r.blob[1], r.blob_len[1]);
	gpo__sbuf_reset(&j->history);
	gpo__sbuf_add(&j->history, r.blob[2], r.blob_len[2]);
	if (r.blob[3])
		snprintf(j->error, sizeof(j->error), "%.*s",
			 (int)r.blob_len[3], r.blob[3]);
	j->state = r.state;
	j->step = r.step;
	j->skipped = r.skipped;
	j->restarts = r.restarts;
	j->active_ns = r.active_ns;
	j->history_step = r.history_step;
	j->history_full = !!r.history_full;
	j->lr = config_lr(fs, &j->cfg);
	if (strcmp(r.ckpt, "-")) {
		snprintf(j->last_ckpt, sizeof(j->last_ckpt), "%s", r.ckpt);
		j->last_ckpt_step = r.ckpt_step;
	}

	pthread_mutex_lock(&fs->lock);
	ret = find_locked(fs, r.name) ? -EEXIST : 0;
	if (!ret) {
		j->next = fs->jobs;
		fs->jobs = j;
		fs->njobs++;
		clock_gettime(CLOCK_REALTIME, &fs->jobs_mtime);
	}
	pthread_mutex_unlock(&fs->lock);
	if (ret) {
		rec_skip(fs, uid, path, "a job named '%s' is loaded already",
			 r.name);
		job_put(j);
		return ret;
	}
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->state == JOB_PAUSED)
		rec_revive(j, j->state == JOB_RUNNING);
	else
		job_event(j, -1, "the daemon restarted: the job is %s at step %llu",
			  job_state_name(j->state),
			  (unsigned long long)j->step);
	job_touch(j, ~0u);
	pthread_mutex_unlock(&j->lock);
	job_save(j);
	fs_debug(fs, "job %s of uid %u loaded: %s at step %llu", j->name,
		 (unsigned int)j->uid, job_state_name(j->state),
		 (unsigned long long)j->step);
	return 0;
}

/* the record in directory @dfd, checked before it is believed */
static void rec_read(struct fsd *fs, uid_t uid, int dfd, const char *dname,
		     const char *path)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	fd = openat(dfd, REC_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			fs_debug(fs, "%s: no record (checkpoints only)", path);
		else
			rec_skip(fs, uid, path, "%s", strerror(errno));
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (uint64_t)st.st_size > REC_MAX) {
		rec_skip(fs, uid, path,
			 "foreign: not a regular file of the daemon's user under %llu bytes",
			 (unsigned long long)REC_MAX);
		close(fd);
		return;
	}
	buf = malloc(st.st_size + 1);
	while (buf && got < (size_t)st.st_size) {
		n = read(fd, buf + got, st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	if (!buf)
		rec_skip(fs, uid, path, "out of memory");
	else
		rec_load(fs, uid, dname, path, buf, got);
	free(buf);
}

static int all_digits(const char *s)
{
	if (!*s || strlen(s) > 10)
		return 0;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return 0;
	return 1;
}

/* the jobs of uid @uid's directory @ufd */
static void load_uid(struct fsd *fs, uid_t uid, int ufd, const char *upath)
{
	char path[PATH_MAX + 80];
	struct dirent *d;
	DIR *dp;
	int dfd;

	dp = fdopendir(ufd);
	if (!dp) {
		close(ufd);
		return;
	}
	while ((d = readdir(dp))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%.4000s/%.63s/" REC_FILE, upath,
			 d->d_name);
		if (!job_name_valid(d->d_name)) {
			rec_skip(fs, uid, path, "foreign: not a job's name");
			continue;
		}
		dfd = subdir_open(dirfd(dp), d->d_name, 0);
		if (dfd < 0) {
			rec_skip(fs, uid, path, "%s", strerror(-dfd));
			continue;
		}
		rec_read(fs, uid, dfd, d->d_name, path);
		close(dfd);
	}
	closedir(dp);
}

void job_load_all(struct fsd *fs)
{
	char upath[PATH_MAX + 16];
	struct dirent *d;
	uint64_t uid;
	DIR *dp;
	int ufd, ret;

	dp = opendir(fs->state_dir);
	while (dp && (d = readdir(dp))) {
		if (!all_digits(d->d_name) || fs_parse_u64(d->d_name, &uid) ||
		    uid >= UINT32_MAX)
			continue;
		snprintf(upath, sizeof(upath), "%s/%s", fs->state_dir,
			 d->d_name);
		ufd = subdir_open(dirfd(dp), d->d_name, 0);
		if (ufd < 0) {
			rec_skip(fs, uid, upath, "%s", strerror(-ufd));
			continue;
		}
		load_uid(fs, uid, ufd, upath);
	}
	if (dp)
		closedir(dp);
	ret = pthread_create(&flusher, NULL, flusher_main, fs);
	if (ret)
		fprintf(stderr, "gpuoptfs: no record flusher: %s\n",
			strerror(ret));
	else
		has_flusher = 1;
}

/* opt_lock held: the checkpoint a loaded job was paused at, now restored */
static int restore_pending(struct job *j)
{
	char file[80];
	struct wp_stat st;
	int ret;

	snprintf(file, sizeof(file), "%s", j->restore_from);
	j->restore_from[0] = '\0';
	ret = restore_file(j, file, 0, &st);
	pthread_mutex_lock(&j->lock);
	if (!ret) {
		j->step = st.step;
		j->lr = st.lr;
		j->loss = NAN;
		j->grad_norm = NAN;
		if (isfinite(st.loss_scale))
			j->loss_scale = st.loss_scale;
		job_event(j, -1, "restored %s at step %llu", file,
			  (unsigned long long)st.step);
	} else if (j->w.pid) {
		/* built afresh: the job starts over */
		job_event(j, -1, "cannot restore %s: %s", file, fs_errmsg());
		set_error(j, fs_errmsg());
		j->step = 0;
		if (j->state == JOB_PAUSED)
			set_state(j, JOB_CREATED, -1);
	}
	job_touch(j, JOB_T(JOB_T_STAT) | JOB_T(JOB_T_PARAMS));
	pthread_mutex_unlock(&j->lock);
	return ret;
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
	pthread_mutex_lock(&j->lock);
	j->quit = 1;
	pthread_cond_broadcast(&j->cond);
	pthread_mutex_unlock(&j->lock);
	if (j->has_runner)
		pthread_join(j->runner, NULL);
	worker_stop(j);
	while (j->npollers)
		fuse_pollhandle_destroy(j->pollers[--j->npollers]);
	config_free(&j->cfg);
	gpo__sbuf_free(&j->events);
	gpo__sbuf_free(&j->history);
	gpo__sbuf_free(&j->sample);
	fair_destroy(&j->opt_lock);
	pthread_mutex_destroy(&j->save_lock);
	pthread_cond_destroy(&j->cond);
	pthread_mutex_destroy(&j->lock);
	pthread_mutex_destroy(&j->map_lock);
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
	pthread_mutex_init(&j->map_lock, NULL);
	pthread_cond_init(&j->cond, NULL);
	pthread_mutex_init(&j->save_lock, NULL);
	fair_init(&j->opt_lock);
	config_init(fs, &j->cfg);
	j->loss = NAN;
	j->grad_norm = NAN;
	j->ext_loss = NAN;
	j->dev_index = -1;
	j->w.sock = j->w.shm = j->w.err = -1;
	gpo__sbuf_init(&j->events);
	gpo__sbuf_init(&j->history);
	gpo__sbuf_init(&j->sample);
	gpo__sbuf_printf(&j->history, HISTORY_HEADER);
	job_touch(j, ~0u);
	j->lr = config_lr(fs, &j->cfg);
	j->grad_scale = config_hp(fs, &j->cfg, "grad_scale");
	j->loss_scale = config_loss_scale(fs, &j->cfg);
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
	job_save(j);
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
	int ret = 0, n;

	if (uid != 0 && uid != j->uid && uid != fs->admin_uid)
		return fs_err(-EPERM, "job '%s' belongs to uid %u", j->name,
			      (unsigned int)j->uid);
	/* checkpoints are written under opt_lock: none comes while we look */
	fair_lock(&j->opt_lock);
	pthread_mutex_lock(&j->lock);
	if (j->state == JOB_RUNNING || j->in_step)
		ret = fs_err(-EBUSY, "job '%s' is running: stop it first",
			     j->name);
	pthread_mutex_unlock(&j->lock);
	if (!ret) {
		n = ckpt_files(j, 0);
		if (n > 0)
			ret = fs_err(-ENOTEMPTY,
				     "job '%s' has %d checkpoints: write purge to its ctl first",
				     j->name, n);
		else if (n < 0)
			ret = fs_err(n, "job '%s': its checkpoints: %s",
				     j->name, strerror(-n));
	}
	if (!ret) {
		pthread_mutex_lock(&j->lock);
		if (j->state == JOB_RUNNING || j->in_step)
			ret = fs_err(-EBUSY,
				     "job '%s' is running: stop it first",
				     j->name);
		else
			j->quit = 1;	/* no new step may start */
		pthread_mutex_unlock(&j->lock);
	}
	if (!ret) {
		pthread_mutex_lock(&fs->lock);
		if (j->removed)
			ret = fs_err(-ENOENT, "job '%s' is gone", j->name);
		else
			unlink_locked(fs, j);
		j->gone = 1;
		pthread_mutex_unlock(&fs->lock);
	}
	if (ret) {
		fair_unlock(&j->opt_lock);
		return ret;
	}
	worker_stop(j);
	rec_remove(j);
	fair_unlock(&j->opt_lock);
	job_put(j);	/* the list's reference */
	return 0;
}

/* at shutdown, a job that checkpoints is checkpointed once more */
static void ckpt_final(struct job *j)
{
	char name[32];

	fair_lock(&j->opt_lock);
	if (j->w.built) {
		auto_name(job_step(j), name, sizeof(name));
		if (!ckpt_save(j, name, -1))
			ckpt_prune(j, j->cfg.keep_checkpoints);
	}
	fair_unlock(&j->opt_lock);
}

/*
 * At shutdown each job's record is saved as it stands: a running job is
 * paused (recorded as running, so that autostart=1 resumes it) after one
 * last checkpoint when it checkpoints at all.
 */
void job_stop_all(struct fsd *fs)
{
	struct job *j;
	int save;

	flusher_stop();
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
		j->steps_left = 0;
		if (j->state == JOB_RUNNING) {
			job_event(j, -1, "the daemon is stopping");
			set_state(j, JOB_PAUSED, -1);
			j->was_running = 1;
		}
		wait_idle(j);
		pthread_mutex_unlock(&j->lock);
		if (save)
			ckpt_final(j);
		job_save(j);
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

int job_pool_sum(struct fsd *fs, int index, struct gpo_pool_stats *sum)
{
	struct job **list = NULL;
	struct job *j;
	int n = 0, i, found = 0;

	memset(sum, 0, sizeof(*sum));
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
	for (i = 0; i < n; i++) {
		j = list[i];
		pthread_mutex_lock(&j->lock);
		if (j->has_pool && j->dev_index == index) {
			sum->capacity_bytes += j->pool.capacity_bytes;
			sum->used_bytes += j->pool.used_bytes;
			sum->cached_bytes += j->pool.cached_bytes;
			sum->peak_bytes += j->pool.peak_bytes;
			sum->allocs += j->pool.allocs;
			sum->frees += j->pool.frees;
			sum->failures += j->pool.failures;
			found++;
		}
		pthread_mutex_unlock(&j->lock);
		job_put(j);
	}
	free(list);
	return found;
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
