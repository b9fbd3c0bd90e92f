// SPDX-License-Identifier: MIT
/*
 * tree_devices.c - devices/<i>/: what the library says of each device,
 * how busy the daemon's jobs keep it, and whether new jobs may use it
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fs_i.h"
#include "job_i.h"

enum dev_field {
	DF_ID, DF_NAME, DF_BACKEND, DF_VENDOR, DF_TYPE, DF_UUID, DF_DRIVER,
	DF_COMPUTE_UNITS, DF_MEM_TOTAL, DF_MEM_USED, DF_BUSY, DF_ENABLED,
	DF_PRESENT, DF_COOPMAT,
};

static int field_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct fsd *fs = n->fs;
	struct gpo_device_info d;
	struct gpo_pool_stats ps;
	unsigned int busy = 0;
	int ret;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_info(fs->ctx, n->index, &d);
	if (!ret && n->file->arg == DF_BUSY)
		busy = fs_busy_percent(fs, n->index);
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (ret)
		return fs_lib_err(ret);
	switch (n->file->arg) {
	case DF_ID:
		return gpo__sbuf_printf(sb, "%s\n", d.id);
	case DF_NAME:
		return gpo__sbuf_printf(sb, "%s\n", d.name);
	case DF_BACKEND:
		return gpo__sbuf_printf(sb, "%s\n", d.backend);
	case DF_VENDOR:
		return gpo__sbuf_printf(sb, "%s\n", d.vendor);
	case DF_TYPE:
		return gpo__sbuf_printf(sb, "%s\n", gpo_device_type_name(d.type));
	case DF_UUID:
		return gpo__sbuf_printf(sb, "%s\n", d.uuid);
	case DF_DRIVER:
		return gpo__sbuf_printf(sb, "%s\n", d.driver);
	case DF_COMPUTE_UNITS:
		return gpo__sbuf_printf(sb, "%u\n", d.compute_units);
	case DF_MEM_TOTAL:
		return gpo__sbuf_printf(sb, "%llu\n",
				   (unsigned long long)d.mem_total_bytes);
	case DF_MEM_USED:
		/* the daemon's pool and its job workers' */
		memset(&ps, 0, sizeof(ps));
		ret = fs_pool_add_jobs(fs, n->index, &ps);
		if (ret)
			return ret;
		return gpo__sbuf_printf(sb, "%llu\n", (unsigned long long)
				   (d.mem_used_bytes + ps.capacity_bytes));
	case DF_BUSY:
		return gpo__sbuf_printf(sb, "%u\n", busy);
	case DF_ENABLED:
		return gpo__sbuf_printf(sb, "%d\n", d.enabled);
	case DF_PRESENT:
		return gpo__sbuf_printf(sb, "%d\n", d.present);
	case DF_COOPMAT:
		return gpo__sbuf_printf(sb, "%s\n", d.coopmat);
	}
	return -EINVAL;
}

static int stat_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct fsd *fs = n->fs;
	struct gpo_device_info d;
	struct job_snapshot *s;
	uint64_t steps, busy_ns;
	int i, njobs, jobs = 0, running = 0, ret;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_info(fs->ctx, n->index, &d);
	if (!ret) {
		pthread_mutex_lock(&fs->devs[n->index].lock);
		steps = fs->devs[n->index].steps;
		busy_ns = fs->devs[n->index].busy_total_ns;
		pthread_mutex_unlock(&fs->devs[n->index].lock);
	}
	pthread_rwlock_unlock(&fs->ctx_lock);
	if (ret)
		return fs_lib_err(ret);
	njobs = job_snapshots(fs, &s);
	if (njobs < 0)
		return njobs;
	for (i = 0; i < njobs; i++) {
		if (strcmp(s[i].device, d.id))
			continue;
		jobs++;
		running += s[i].state == JOB_RUNNING;
	}
	free(s);
	return gpo__sbuf_printf(sb,
			   "jobs %d\njobs_running %d\nsteps %llu\nbusy_ns %llu\n",
			   jobs, running, (unsigned long long)steps,
			   (unsigned long long)busy_ns);
}

static int enabled_store(struct fs_node *n, const char *text, uid_t uid)
{
	struct fsd *fs = n->fs;
	uint64_t v;
	int ret;

	if (fs_parse_u64(text, &v) || v > 1)
		return fs_err(-EINVAL, "enabled: write 0 or 1");
	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = gpo_device_enable(fs->ctx, n->index, (int)v);
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret ? fs_lib_err(ret) : 0;
}

#define FIELD(n, f) { .name = n, .mode = 0444, .arg = f, .show = field_show }

const struct fs_file device_files[] = {
	FIELD("id", DF_ID),
	FIELD("name", DF_NAME),
	FIELD("backend", DF_BACKEND),
	FIELD("vendor", DF_VENDOR),
	FIELD("type", DF_TYPE),
	FIELD("uuid", DF_UUID),
	FIELD("driver", DF_DRIVER),
	FIELD("compute_units", DF_COMPUTE_UNITS),
	/* tensor cores: "none" or "khr:f16*f16+f32:16x16x16,..." (or "nv:") */
	FIELD("coopmat", DF_COOPMAT),
	FIELD("mem_total_bytes", DF_MEM_TOTAL),
	FIELD("mem_used_bytes", DF_MEM_USED),
	FIELD("busy_percent", DF_BUSY),
	/* 0 once a rescan no longer finds the device */
	FIELD("present", DF_PRESENT),
	{ .name = "stat", .mode = 0444, .show = stat_show },
	{ .name = "enabled", .mode = 0644, .flags = F_ADMIN, .arg = DF_ENABLED,
	  .show = field_show, .store = enabled_store },
	{ .name = NULL },
};
