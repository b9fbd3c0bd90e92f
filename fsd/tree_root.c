// SPDX-License-Identifier: MIT
/*
 * tree_root.c - the top of the tree: version stat metrics.prom error_log
 * ctl, and the daemon-wide state they show: the library context, the
 * devices' busy time and the error log
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs_i.h"
#include "job_i.h"

/* ---- the context --------------------------------------------------------- */

int fs_ctx_open(struct fsd *fs)
{
	int ret, i;

	ret = gpo_ctx_new(&fs->ctx, 0);
	if (ret)
		return fs_lib_err(ret);
	fs->ndevs = gpo_device_count(fs->ctx);
	fs->devs = calloc(fs->ndevs, sizeof(*fs->devs));
	if (!fs->devs) {
		ret = fs_err(-ENOMEM, "out of memory");
		goto out_free;
	}
	for (i = 0; i < fs->ndevs; i++)
		pthread_mutex_init(&fs->devs[i].lock, NULL);
	/* configs are validated on a throwaway optimizer on the cpu */
	ret = gpo_device_select(fs->ctx, "cpu", &fs->cpu);
	if (ret) {
		fs_lib_err(ret);
		goto out_free;
	}
	return 0;
out_free:
	fs_ctx_close(fs);
	return ret;
}

static void ctx_release(struct gpo_ctx *ctx, struct dev_slot *devs,
			int ndevs)
{
	int i;

	for (i = 0; devs && i < ndevs; i++)
		pthread_mutex_destroy(&devs[i].lock);
	free(devs);
	gpo_ctx_free(ctx);
}

void fs_ctx_close(struct fsd *fs)
{
	ctx_release(fs->ctx, fs->devs, fs->ndevs);
	fs->devs = NULL;
	fs->ndevs = 0;
	fs->cpu = NULL;
	fs->ctx = NULL;
}

int fs_device(struct fsd *fs, int index, struct gpo_device **out)
{
	struct dev_slot *s;
	int ret = 0;

	if (index < 0 || index >= fs->ndevs)
		return fs_err(-ENODEV, "no device %d", index);
	s = &fs->devs[index];
	pthread_mutex_lock(&s->lock);
	if (!s->dev) {
		ret = gpo_device_get(fs->ctx, index, &s->dev);
		if (ret) {
			s->dev = NULL;
			fs_lib_err(ret);
		}
	}
	*out = s->dev;
	pthread_mutex_unlock(&s->lock);
	return ret;
}

void fs_device_seen(struct fsd *fs, int index, struct gpo_device *dev)
{
	struct dev_slot *s;

	/* a device a failed rescan could not give a slot */
	if (index < 0 || index >= fs->ndevs)
		return;
	s = &fs->devs[index];
	pthread_mutex_lock(&s->lock);
	if (!s->dev)
		s->dev = dev;
	pthread_mutex_unlock(&s->lock);
}

/* ---- busy time ----------------------------------------------------------- */

void fs_busy_add(struct fsd *fs, int index, uint64_t t0, uint64_t t1)
{
	uint64_t e, first, last, lo, hi;
	struct dev_slot *s;
	int k;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	if (index < 0 || index >= fs->ndevs || t1 < t0)
		goto out_unlock;
	s = &fs->devs[index];
	first = t0 / BUSY_SLOT_NS;
	last = t1 / BUSY_SLOT_NS;
	if (last - first >= BUSY_SLOTS)
		first = last - BUSY_SLOTS + 1;
	pthread_mutex_lock(&s->lock);
	for (e = first; e <= last; e++) {
		k = e % BUSY_SLOTS;
		if (s->busy_epoch[k] != e) {
			s->busy_epoch[k] = e;
			s->busy_ns[k] = 0;
		}
		lo = t0 > e * BUSY_SLOT_NS ? t0 : e * BUSY_SLOT_NS;
		hi = t1 < (e + 1) * BUSY_SLOT_NS ? t1 : (e + 1) * BUSY_SLOT_NS;
		if (hi > lo)
			s->busy_ns[k] += hi - lo;
	}
	s->busy_total_ns += t1 - t0;
	s->steps++;
	pthread_mutex_unlock(&s->lock);
out_unlock:
	pthread_rwlock_unlock(&fs->ctx_lock);
}

/* the caller holds ctx_lock for reading */
double fs_busy_ratio(struct fsd *fs, int index)
{
	uint64_t now = gpo__now_ns(), e = now / BUSY_SLOT_NS, sum = 0, window;
	struct dev_slot *s = &fs->devs[index];
	int k;

	/* nine whole slots and the current part of one: about a second */
	window = (BUSY_SLOTS - 1) * BUSY_SLOT_NS + now % BUSY_SLOT_NS;
	pthread_mutex_lock(&s->lock);
	for (k = 0; k < BUSY_SLOTS; k++)
		if (s->busy_epoch[k] + BUSY_SLOTS > e && s->busy_epoch[k] <= e)
			sum += s->busy_ns[k];
	pthread_mutex_unlock(&s->lock);
	return sum >= window ? 1.0 : (double)sum / window;
}

unsigned int fs_busy_percent(struct fsd *fs, int index)
{
	return (unsigned int)(fs_busy_ratio(fs, index) * 100);
}

/* ---- the error log ------------------------------------------------------- */

static struct uid_mem *uid_mem_find(struct fsd *fs, uid_t uid)
{
	int i;

	for (i = 0; i < fs->n_uid_mem; i++)
		if (fs->uid_mem[i].uid == uid)
			return &fs->uid_mem[i];
	return NULL;
}

int fs_mem_reserve(struct fsd *fs, uid_t uid, uint64_t bytes)
{
	struct uid_mem *m, *grown;
	int ret = 0;

	if (bytes > fs->max_job_bytes)
		return fs_err(-EDQUOT,
			      "the job needs %llu bytes, more than the %llu a job may have",
			      (unsigned long long)bytes,
			      (unsigned long long)fs->max_job_bytes);
	pthread_mutex_lock(&fs->lock);
	m = uid_mem_find(fs, uid);
	if (!m) {
		grown = realloc(fs->uid_mem,
				(fs->n_uid_mem + 1) * sizeof(*grown));
		if (!grown) {
			ret = fs_err(-ENOMEM, "out of memory");
			goto out_unlock;
		}
		fs->uid_mem = grown;
		m = &fs->uid_mem[fs->n_uid_mem++];
		m->uid = uid;
		m->bytes = 0;
	}
	if (bytes > fs->max_uid_bytes - m->bytes)
		ret = fs_err(-EDQUOT,
			     "uid %u has %llu bytes in jobs; %llu more would pass its limit of %llu",
			     (unsigned int)uid, (unsigned long long)m->bytes,
			     (unsigned long long)bytes,
			     (unsigned long long)fs->max_uid_bytes);
	else
		m->bytes += bytes;
out_unlock:
	pthread_mutex_unlock(&fs->lock);
	return ret;
}

void fs_mem_release(struct fsd *fs, uid_t uid, uint64_t bytes)
{
	struct uid_mem *m;

	if (!bytes)
		return;
	pthread_mutex_lock(&fs->lock);
	m = uid_mem_find(fs, uid);
	if (m)
		m->bytes -= bytes < m->bytes ? bytes : m->bytes;
	pthread_mutex_unlock(&fs->lock);
}

void fs_log_error(struct fsd *fs, uid_t uid, const char *path,
		  const char *msg)
{
	struct errlog_entry *e;

	pthread_mutex_lock(&fs->lock);
	e = &fs->errlog[fs->errlog_next];
	fs->errlog_next = (fs->errlog_next + 1) % ERRLOG_MAX;
	if (fs->errlog_count < ERRLOG_MAX)
		fs->errlog_count++;
	fs->errors_total++;
	gpo__fmt_time(e->time, sizeof(e->time));
	e->uid = uid;
	/* one line per error, nothing a terminal would act on */
	fs_escape(e->path, sizeof(e->path), path);
	fs_escape(e->msg, sizeof(e->msg), msg);
	pthread_mutex_unlock(&fs->lock);
}

static int error_log_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct fsd *fs = n->fs;
	const struct errlog_entry *e;
	unsigned int i, first;

	pthread_mutex_lock(&fs->lock);
	first = (fs->errlog_next + ERRLOG_MAX - fs->errlog_count) % ERRLOG_MAX;
	for (i = 0; i < fs->errlog_count; i++) {
		e = &fs->errlog[(first + i) % ERRLOG_MAX];
		gpo__sbuf_printf(sb, "%s %u %s %s\n", e->time, (unsigned int)e->uid,
			    e->path, e->msg);
	}
	pthread_mutex_unlock(&fs->lock);
	return sb->err;
}

/* ---- files --------------------------------------------------------------- */

static int version_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return gpo__sbuf_printf(sb, "gpuoptfs %s\nlibgpuopt %s\n", FSD_VERSION,
			   gpo_version());
}

static int stat_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct fsd *fs = n->fs;
	struct job_snapshot *s;
	unsigned int count[JOB_STATES] = { 0 };
	uint64_t errors, uptime, steps;
	int i, njobs, ndevs;

	njobs = job_snapshots(fs, &s);
	if (njobs < 0)
		return njobs;
	for (i = 0; i < njobs; i++)
		count[s[i].state]++;
	free(s);
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ndevs = fs->ndevs;
	pthread_rwlock_unlock(&fs->ctx_lock);
	pthread_mutex_lock(&fs->lock);
	errors = fs->errors_total;
	pthread_mutex_unlock(&fs->lock);
	uptime = (gpo__now_ns() - fs->start_ns) / 1000000000ull;
	steps = __atomic_load_n(&fs->steps_total, __ATOMIC_RELAXED);
	gpo__sbuf_printf(sb, "uptime_s %llu\ndevices %d\njobs %d\n",
		    (unsigned long long)uptime, ndevs, njobs);
	for (i = 0; i < JOB_STATES; i++)
		gpo__sbuf_printf(sb, "jobs_%s %u\n", job_state_name(i), count[i]);
	return gpo__sbuf_printf(sb, "steps %llu\nerrors %llu\n",
			   (unsigned long long)steps,
			   (unsigned long long)errors);
}

static int metrics_file_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return metrics_show(n->fs, sb);
}

static int ctl_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	return gpo__sbuf_printf(sb, "rescan\n");
}

/*
 * Devices found again keep their index and their slot; new ones get the
 * next indexes; lost ones stay, shown as enabled 0, and the jobs on them
 * fail with ENODEV at their next step. Every slot lock is taken under
 * ctx_lock for reading, so none is held while the slots move.
 */
static int rescan(struct fsd *fs)
{
	struct dev_slot *devs;
	const char *log;
	size_t len;
	int ret, i, n;

	pthread_rwlock_wrlock(&fs->ctx_lock);
	ret = gpo_ctx_rescan(fs->ctx);
	if (ret) {
		fs_lib_err(ret);
		goto out_unlock;
	}
	n = gpo_device_count(fs->ctx);
	if (n > fs->ndevs) {
		devs = calloc(n, sizeof(*devs));
		if (!devs) {
			/* the new devices stay hidden until the next rescan */
			ret = fs_err(-ENOMEM, "rescan: out of memory");
			goto out_unlock;
		}
		for (i = 0; i < n; i++) {
			if (i < fs->ndevs) {
				devs[i] = fs->devs[i];
				pthread_mutex_destroy(&fs->devs[i].lock);
			}
			pthread_mutex_init(&devs[i].lock, NULL);
		}
		free(fs->devs);
		fs->devs = devs;
		fs->ndevs = n;
	}
	log = gpo_ctx_probe_log(fs->ctx);
	len = strlen(log);
	if (len && log[len - 1] == '\n')
		len--;
	fs_debug(fs, "rescan: %d devices%s%.*s", fs->ndevs, len ? "; " : "",
		 (int)len, log);
out_unlock:
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret;
}

static int ctl_store(struct fs_node *n, const char *text, uid_t uid)
{
	if (!strcmp(text, "rescan") || !strcmp(text, "rescan\n"))
		return rescan(n->fs);
	return fs_err(-EINVAL, "unknown verb '%.32s' (rescan)", text);
}

const struct fs_file root_files[] = {
	{ .name = "version", .mode = 0444, .show = version_show },
	{ .name = "stat", .mode = 0444, .show = stat_show },
	{ .name = "metrics.prom", .mode = 0444, .show = metrics_file_show },
	{ .name = "error_log", .mode = 0444, .show = error_log_show },
	{ .name = "ctl", .mode = 0644, .flags = F_ADMIN, .show = ctl_show,
	  .store = ctl_store },
	{ .name = NULL },
};
