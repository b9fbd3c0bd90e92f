// SPDX-License-Identifier: MIT
/*
 * tree_pools.c - pools/<i>/: the memory pool of device <i>: its counters,
 * its byte limit and trimming its cache
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "fs_i.h"
#include "job_i.h"

/* Run @fn on the pool of the node's device, opening the device if new. */
static int with_pool(struct fs_node *n,
		     int (*fn)(struct gpo_device *dev, void *arg), void *arg)
{
	struct fsd *fs = n->fs;
	struct gpo_device *dev;
	int ret;

	pthread_rwlock_rdlock(&fs->ctx_lock);
	ret = fs_device(fs, n->index, &dev);
	if (!ret) {
		ret = fn(dev, arg);
		if (ret)
			fs_lib_err(ret);
	}
	pthread_rwlock_unlock(&fs->ctx_lock);
	return ret;
}

static int get_stats(struct gpo_device *dev, void *arg)
{
	return gpo_pool_stats(dev, arg);
}

/*
 * Add to @st (device @index's pool in the daemon) the job workers' pools
 * on it: each worker has its own library context, so its own pool. All
 * add up, the peaks too; the daemon's limit caps each worker's pool.
 */
int fs_pool_add_jobs(struct fsd *fs, int index, struct gpo_pool_stats *st)
{
	struct gpo_pool_stats w;
	int ret;

	ret = job_pool_sum(fs, index, &w);
	if (ret < 0)
		return ret;
	st->capacity_bytes += w.capacity_bytes;
	st->used_bytes += w.used_bytes;
	st->cached_bytes += w.cached_bytes;
	st->peak_bytes += w.peak_bytes;
	st->allocs += w.allocs;
	st->frees += w.frees;
	st->failures += w.failures;
	return 0;
}

static int stat_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct gpo_pool_stats st;
	char limit[24];
	int ret;

	ret = with_pool(n, get_stats, &st);
	if (!ret)
		ret = fs_pool_add_jobs(n->fs, n->index, &st);
	if (ret)
		return ret;
	if (st.limit_bytes == UINT64_MAX)
		snprintf(limit, sizeof(limit), "max");
	else
		snprintf(limit, sizeof(limit), "%llu",
			 (unsigned long long)st.limit_bytes);
	return gpo__sbuf_printf(sb,
			   "capacity_bytes %llu\nused_bytes %llu\n"
			   "cached_bytes %llu\npeak_bytes %llu\n"
			   "limit_bytes %s\nallocs %llu\nfrees %llu\n"
			   "failures %llu\n",
			   (unsigned long long)st.capacity_bytes,
			   (unsigned long long)st.used_bytes,
			   (unsigned long long)st.cached_bytes,
			   (unsigned long long)st.peak_bytes, limit,
			   (unsigned long long)st.allocs,
			   (unsigned long long)st.frees,
			   (unsigned long long)st.failures);
}

static int max_show(struct fs_node *n, struct gpo__sbuf *sb)
{
	struct gpo_pool_stats st;
	int ret;

	ret = with_pool(n, get_stats, &st);
	if (ret)
		return ret;
	if (st.limit_bytes == UINT64_MAX)
		return gpo__sbuf_printf(sb, "max\n");
	return gpo__sbuf_printf(sb, "%llu\n", (unsigned long long)st.limit_bytes);
}

static int set_limit(struct gpo_device *dev, void *arg)
{
	return gpo_pool_set_limit(dev, *(uint64_t *)arg);
}

static int max_store(struct fs_node *n, const char *text, uid_t uid)
{
	uint64_t limit;

	if (!strcmp(text, "max") || !strcmp(text, "max\n"))
		limit = UINT64_MAX;
	else if (fs_parse_u64(text, &limit) || limit == UINT64_MAX)
		return fs_err(-EINVAL, "max: write a number of bytes or 'max'");
	return with_pool(n, set_limit, &limit);
}

static int trim(struct gpo_device *dev, void *arg)
{
	return gpo_pool_trim(dev);
}

static int trim_store(struct fs_node *n, const char *text, uid_t uid)
{
	if (strcmp(text, "1") && strcmp(text, "1\n"))
		return fs_err(-EINVAL, "trim: write 1");
	return with_pool(n, trim, NULL);
}

const struct fs_file pool_files[] = {
	{ .name = "stat", .mode = 0444, .show = stat_show },
	{ .name = "max", .mode = 0644, .flags = F_ADMIN, .show = max_show,
	  .store = max_store },
	{ .name = "trim", .mode = 0200, .flags = F_ADMIN, .store = trim_store },
	{ .name = NULL },
};
