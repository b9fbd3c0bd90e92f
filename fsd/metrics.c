// SPDX-License-Identifier: MIT
/*
 * metrics.c - metrics.prom: the Prometheus text exposition format (0.0.4)
 *
 * Every family gets its HELP and TYPE lines once, then one sample per
 * device, pool or job, labelled device="cpu:0", or gpuopt_job="name" with
 * the job's uid and device. The job's label is not "job": Prometheus puts
 * job= on every scraped sample and would rename ours to exported_job.
 * Shares of time are ratios 0-1, as Prometheus' base units want.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs_i.h"
#include "job_i.h"

struct dev_sample {
	struct gpo_device_info info;
	struct gpo_pool_stats pool;
	int have_pool;
	double busy;
	uint64_t steps;
	uint64_t busy_ns;
};

struct metrics {
	struct fsd *fs;
	struct gpo__sbuf *sb;
	struct dev_sample *devs;
	int ndevs;
	struct job_snapshot *jobs;
	int njobs;
};

/* label values escape \ " and newline */
static void put_label(struct gpo__sbuf *sb, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			gpo__sbuf_printf(sb, "\\%c", *s);
		else if (*s == '\n')
			gpo__sbuf_printf(sb, "\\n");
		else
			gpo__sbuf_add(sb, s, 1);
	}
}

static void put_value(struct gpo__sbuf *sb, double v)
{
	char num[40];

	if (isnan(v))
		snprintf(num, sizeof(num), "NaN");
	else if (isinf(v))
		snprintf(num, sizeof(num), v > 0 ? "+Inf" : "-Inf");
	else if (v == floor(v) && fabs(v) < 0x1p53)
		gpo__snprintf(num, sizeof(num), "%.0f", v);
	else
		gpo__fmt_double(num, sizeof(num), v);
	gpo__sbuf_printf(sb, " %s\n", num);
}

static void family(struct gpo__sbuf *sb, const char *name, const char *type,
		   const char *help)
{
	gpo__sbuf_printf(sb, "# HELP gpuopt_%s %s\n# TYPE gpuopt_%s %s\n", name,
		    help, name, type);
}

static void dev_sample(struct gpo__sbuf *sb, const char *name,
		       const struct dev_sample *d, double v)
{
	gpo__sbuf_printf(sb, "gpuopt_%s{device=\"", name);
	put_label(sb, d->info.id);
	gpo__sbuf_printf(sb, "\"}");
	put_value(sb, v);
}

/* name{gpuopt_job="...",uid="...",device="..." without the closing brace */
static void job_labels(struct gpo__sbuf *sb, const char *name,
		       const struct job_snapshot *j)
{
	gpo__sbuf_printf(sb, "gpuopt_%s{gpuopt_job=\"", name);
	put_label(sb, j->name);
	gpo__sbuf_printf(sb, "\",uid=\"%u\",device=\"", (unsigned int)j->uid);
	put_label(sb, j->device);
	gpo__sbuf_printf(sb, "\"");
}

static void job_sample(struct gpo__sbuf *sb, const char *name,
		       const struct job_snapshot *j, double v)
{
	job_labels(sb, name, j);
	gpo__sbuf_printf(sb, "}");
	put_value(sb, v);
}

static void daemon_metrics(struct metrics *m)
{
	struct fsd *fs = m->fs;
	struct gpo__sbuf *sb = m->sb;
	unsigned int count[JOB_STATES] = { 0 };
	uint64_t errors;
	int i;

	for (i = 0; i < m->njobs; i++)
		count[m->jobs[i].state]++;
	pthread_mutex_lock(&fs->lock);
	errors = fs->errors_total;
	pthread_mutex_unlock(&fs->lock);
	family(sb, "uptime_seconds", "gauge",
	       "Seconds since gpuoptfs started.");
	gpo__sbuf_printf(sb, "gpuopt_uptime_seconds");
	put_value(sb, (gpo__now_ns() - fs->start_ns) / 1e9);
	family(sb, "jobs", "gauge", "Jobs by state.");
	for (i = 0; i < JOB_STATES; i++)
		gpo__sbuf_printf(sb, "gpuopt_jobs{state=\"%s\"} %u\n",
			    job_state_name(i), count[i]);
	family(sb, "steps_total", "counter",
	       "Optimizer steps run by all jobs since start.");
	gpo__sbuf_printf(sb, "gpuopt_steps_total %llu\n", (unsigned long long)
		    __atomic_load_n(&fs->steps_total, __ATOMIC_RELAXED));
	family(sb, "errors_total", "counter", "Failed writes since start.");
	gpo__sbuf_printf(sb, "gpuopt_errors_total %llu\n",
		    (unsigned long long)errors);
}

static void device_metrics(struct metrics *m)
{
	struct gpo__sbuf *sb = m->sb;
	const struct dev_sample *d;
	int i;

	family(sb, "device_info", "gauge",
	       "Devices the library found, with their names (value 1).");
	for (i = 0; i < m->ndevs; i++) {
		d = &m->devs[i];
		gpo__sbuf_printf(sb, "gpuopt_device_info{device=\"");
		put_label(sb, d->info.id);
		gpo__sbuf_printf(sb, "\",index=\"%d\",name=\"", i);
		put_label(sb, d->info.name);
		gpo__sbuf_printf(sb, "\",backend=\"%s\",type=\"%s\",vendor=\"",
			    d->info.backend,
			    gpo_device_type_name(d->info.type));
		put_label(sb, d->info.vendor);
		gpo__sbuf_printf(sb, "\"} 1\n");
	}
#define DEV_FAMILY(name, type, help, expr)			\
	do {							\
		family(sb, name, type, help);			\
		for (i = 0; i < m->ndevs; i++) {		\
			d = &m->devs[i];			\
			dev_sample(sb, name, d, (expr));	\
		}						\
	} while (0)
	DEV_FAMILY("device_enabled", "gauge",
		   "1 if new jobs may use the device.", d->info.enabled);
	DEV_FAMILY("device_mem_total_bytes", "gauge", "Device memory.",
		   d->info.mem_total_bytes);
	DEV_FAMILY("device_mem_used_bytes", "gauge",
		   "Device memory held by the pools of the daemon and its jobs.",
		   d->info.mem_used_bytes);
	DEV_FAMILY("device_busy_ratio", "gauge",
		   "Share of the last second spent in job steps (0-1).",
		   d->busy);
	DEV_FAMILY("device_steps_total", "counter",
		   "Job steps run on the device.", d->steps);
	DEV_FAMILY("device_busy_seconds_total", "counter",
		   "Time spent in job steps.", d->busy_ns / 1e9);
#undef DEV_FAMILY
}

static void pool_metrics(struct metrics *m)
{
	struct gpo__sbuf *sb = m->sb;
	const struct dev_sample *d;
	int i;

#define POOL_FAMILY(name, type, help, expr)			\
	do {							\
		family(sb, name, type, help);			\
		for (i = 0; i < m->ndevs; i++) {		\
			d = &m->devs[i];			\
			if (d->have_pool)			\
				dev_sample(sb, name, d, (expr));\
		}						\
	} while (0)
	POOL_FAMILY("pool_capacity_bytes", "gauge",
		    "Bytes the pool took from the device.",
		    d->pool.capacity_bytes);
	POOL_FAMILY("pool_used_bytes", "gauge", "Bytes handed out.",
		    d->pool.used_bytes);
	POOL_FAMILY("pool_cached_bytes", "gauge", "Bytes cached, unused.",
		    d->pool.cached_bytes);
	POOL_FAMILY("pool_peak_bytes", "gauge", "Highest used bytes.",
		    d->pool.peak_bytes);
	POOL_FAMILY("pool_limit_bytes", "gauge",
		    "The pool's byte limit (+Inf: none).",
		    d->pool.limit_bytes == UINT64_MAX ? INFINITY :
		    (double)d->pool.limit_bytes);
	POOL_FAMILY("pool_allocs_total", "counter", "Allocations.",
		    d->pool.allocs);
	POOL_FAMILY("pool_frees_total", "counter", "Frees.", d->pool.frees);
	POOL_FAMILY("pool_failures_total", "counter", "Failed allocations.",
		    d->pool.failures);
#undef POOL_FAMILY
}

static void job_metrics(struct metrics *m)
{
	struct gpo__sbuf *sb = m->sb;
	const struct job_snapshot *j;
	int i, s;

	family(sb, "job_state", "gauge", "1 for the state the job is in.");
	for (i = 0; i < m->njobs; i++) {
		for (s = 0; s < JOB_STATES; s++) {
			job_labels(sb, "job_state", &m->jobs[i]);
			gpo__sbuf_printf(sb, ",state=\"%s\"} %d\n",
				    job_state_name(s),
				    (int)m->jobs[i].state == s);
		}
	}
#define JOB_FAMILY(name, type, help, expr)			\
	do {							\
		family(sb, name, type, help);			\
		for (i = 0; i < m->njobs; i++) {		\
			j = &m->jobs[i];			\
			job_sample(sb, name, j, (expr));	\
		}						\
	} while (0)
	JOB_FAMILY("job_step", "gauge", "Steps applied.", j->step);
	JOB_FAMILY("job_max_steps", "gauge", "Steps to run (+Inf: no limit).",
		   j->max_steps == MAX_STEPS_UNLIMITED ? INFINITY :
		   (double)j->max_steps);
	JOB_FAMILY("job_loss", "gauge", "Loss at the last step.", j->loss);
	JOB_FAMILY("job_lr", "gauge", "Learning rate of the last step.", j->lr);
	JOB_FAMILY("job_grad_norm", "gauge",
		   "Gradient 2-norm of the last step (NaN: not computed).",
		   j->grad_norm);
	JOB_FAMILY("job_grad_scale", "gauge",
		   "Loss scale the gradients are divided by (1: none).",
		   j->grad_scale);
	JOB_FAMILY("job_loss_scale", "gauge",
		   "The loss scale after the last step (1: off).",
		   j->loss_scale);
	JOB_FAMILY("job_skipped_total", "counter",
		   "Steps skipped for non-finite gradients.", j->skipped);
	JOB_FAMILY("job_steps_per_second", "gauge",
		   "Steps per second while running.", j->steps_per_sec);
	JOB_FAMILY("job_elapsed_seconds", "gauge",
		   "Time spent running or stepping.", j->elapsed_s);
	JOB_FAMILY("job_param_bytes", "gauge", "Bytes of parameters.",
		   j->param_bytes);
#undef JOB_FAMILY
}

static int collect_devices(struct metrics *m)
{
	struct fsd *fs = m->fs;
	struct dev_slot *s;
	int i;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	m->ndevs = fs->ndevs;
	m->devs = calloc(m->ndevs ? m->ndevs : 1, sizeof(*m->devs));
	for (i = 0; m->devs && i < m->ndevs; i++) {
		struct dev_sample *d = &m->devs[i];

		gpo_device_info(fs->ctx, i, &d->info);
		d->busy = fs_busy_ratio(fs, i);
		s = &fs->devs[i];
		pthread_mutex_lock(&s->lock);
		d->steps = s->steps;
		d->busy_ns = s->busy_total_ns;
		/* a pool is shown once its device is open */
		d->have_pool = s->dev && !gpo_pool_stats(s->dev, &d->pool);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (!m->devs)
		return fs_err(-ENOMEM, "out of memory");
	/* the workers' pools too, as pools/<i>/stat and mem_used_bytes */
	for (i = 0; i < m->ndevs; i++) {
		struct dev_sample *d = &m->devs[i];

		if (d->have_pool && fs_pool_add_jobs(fs, i, &d->pool))
			d->have_pool = 0;
		if (d->have_pool)
			d->info.mem_used_bytes = d->pool.capacity_bytes;
	}
	return 0;
}

int metrics_show(struct fsd *fs, struct gpo__sbuf *sb)
{
	struct metrics m = { .fs = fs, .sb = sb };
	int ret;

	ret = collect_devices(&m);
	if (ret)
		return ret;
	m.njobs = job_snapshots(fs, &m.jobs);
	if (m.njobs < 0) {
		free(m.devs);
		return m.njobs;
	}
	daemon_metrics(&m);
	device_metrics(&m);
	pool_metrics(&m);
	job_metrics(&m);
	free(m.devs);
	free(m.jobs);
	return sb->err;
}
