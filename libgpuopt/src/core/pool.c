// SPDX-License-Identifier: MIT
/*
 * pool.c - per-device memory pools
 *
 * A pool takes large blocks from the backend and hands out aligned ranges
 * of them, best fit. Freed ranges stay cached in their block until
 * gpo_pool_trim() (or pressure from the limit) gives empty blocks back.
 */
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"

#define POOL_BLOCK_MIN	(64ull << 20)

struct pool_seg {
	struct pool_seg *next;		/* sorted by offset */
	uint64_t off;
	uint64_t size;
};

struct pool_block {
	struct pool_block *next;
	struct dev_mem *mem;
	uint64_t size;
	struct pool_seg *segs;
};

void gpo__pool_init(struct pool *pool)
{
	memset(pool, 0, sizeof(*pool));
	pthread_mutex_init(&pool->lock, NULL);
	pool->limit = UINT64_MAX;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* Best fit: the smallest gap of any block that holds @size. */
static struct pool_block *find_gap(struct pool *pool, uint64_t size,
				   uint64_t align, uint64_t *off_out)
{
	struct pool_block *blk, *best = NULL;
	uint64_t best_gap = UINT64_MAX, best_off = 0;

	for (blk = pool->blocks; blk; blk = blk->next) {
		uint64_t start = 0, end;
		struct pool_seg *seg = blk->segs;

		for (;;) {
			end = seg ? seg->off : blk->size;
			start = align_up(start, align);
			if (end >= start && end - start >= size &&
			    end - start < best_gap) {
				best = blk;
				best_gap = end - start;
				best_off = start;
			}
			if (!seg)
				break;
			start = seg->off + seg->size;
			seg = seg->next;
		}
	}
	*off_out = best_off;
	return best;
}

static int seg_insert(struct pool_block *blk, uint64_t off, uint64_t size)
{
	struct pool_seg *seg, **pp = &blk->segs;

	seg = malloc(sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	seg->off = off;
	seg->size = size;
	while (*pp && (*pp)->off < off)
		pp = &(*pp)->next;
	seg->next = *pp;
	*pp = seg;
	return 0;
}

/* Give every empty block back to the device; pool lock held. */
static void trim_locked(struct gpo_device *dev)
{
	struct pool *pool = &dev->pool;
	struct pool_block **pp = &pool->blocks, *blk;

	while ((blk = *pp)) {
		if (blk->segs) {
			pp = &blk->next;
			continue;
		}
		*pp = blk->next;
		dev->ops->free(dev, blk->mem);
		pool->capacity -= blk->size;
		free(blk);
	}
}

static int grow_locked(struct gpo_device *dev, uint64_t need)
{
	struct pool *pool = &dev->pool;
	struct pool_block *blk;
	uint64_t size = need;
	int ret;

	if (size < POOL_BLOCK_MIN)
		size = POOL_BLOCK_MIN;
	if (dev->max_alloc && size > dev->max_alloc)
		size = need;
	if (pool->limit - pool->capacity < size)
		size = need;
	if (pool->limit < pool->capacity || pool->limit - pool->capacity < size)
		trim_locked(dev);
	if (pool->limit < pool->capacity || pool->limit - pool->capacity < size)
		return gpo__err(-ENOMEM,
			       "%s: pool limit %llu bytes reached (%llu in use, %llu more needed)",
			       dev->info.id, (unsigned long long)pool->limit,
			       (unsigned long long)pool->used,
			       (unsigned long long)need);
	if (dev->max_alloc && need > dev->max_alloc)
		return gpo__err(-ENOMEM,
			       "%s: %llu bytes exceed the largest allocation the device allows (%llu)",
			       dev->info.id, (unsigned long long)need,
			       (unsigned long long)dev->max_alloc);

	blk = calloc(1, sizeof(*blk));
	if (!blk)
		return gpo__err(-ENOMEM, "out of host memory");
	ret = dev->ops->alloc(dev, size, &blk->mem);
	if (ret && size > need) {
		size = need;
		ret = dev->ops->alloc(dev, size, &blk->mem);
	}
	if (ret) {
		/* the cache may be what fills the device */
		trim_locked(dev);
		ret = dev->ops->alloc(dev, size, &blk->mem);
	}
	if (ret)
		goto out_free_blk;
	blk->size = size;
	blk->next = pool->blocks;
	pool->blocks = blk;
	pool->capacity += size;
	return 0;

out_free_blk:
	free(blk);
	if (ret == -ENOMEM)
		return gpo__err(-ENOMEM, "%s: device out of memory for %llu bytes",
			       dev->info.id, (unsigned long long)need);
	return ret;
}

int gpo__pool_alloc(struct gpo_device *dev, uint64_t bytes, struct dev_buf *out)
{
	struct pool *pool = &dev->pool;
	uint64_t align = dev->mem_align ? dev->mem_align : 256;
	struct pool_block *blk;
	uint64_t off, size;
	int ret;

	if (!bytes)
		return gpo__err(-EINVAL, "zero-byte allocation");
	size = align_up(bytes, align);
	pthread_mutex_lock(&pool->lock);
	blk = find_gap(pool, size, align, &off);
	if (!blk) {
		ret = grow_locked(dev, size);
		if (ret)
			goto out_fail;
		blk = find_gap(pool, size, align, &off);
	}
	ret = seg_insert(blk, off, size);
	if (ret) {
		gpo__err(ret, "out of host memory");
		goto out_fail;
	}
	pool->used += size;
	if (pool->used > pool->peak)
		pool->peak = pool->used;
	pool->allocs++;
	pthread_mutex_unlock(&pool->lock);
	out->mem = blk->mem;
	out->off = off;
	out->size = bytes;
	return 0;

out_fail:
	pool->failures++;
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

void gpo__pool_free(struct gpo_device *dev, struct dev_buf *buf)
{
	struct pool *pool = &dev->pool;
	struct pool_block *blk;
	struct pool_seg **pp, *seg;

	if (!buf->mem)
		return;
	pthread_mutex_lock(&pool->lock);
	for (blk = pool->blocks; blk; blk = blk->next) {
		if (blk->mem != buf->mem)
			continue;
		for (pp = &blk->segs; (seg = *pp); pp = &seg->next) {
			if (seg->off != buf->off)
				continue;
			*pp = seg->next;
			pool->used -= seg->size;
			pool->frees++;
			free(seg);
			break;
		}
		break;
	}
	pthread_mutex_unlock(&pool->lock);
	memset(buf, 0, sizeof(*buf));
}

void gpo__pool_destroy(struct gpo_device *dev)
{
	struct pool *pool = &dev->pool;
	struct pool_block *blk;
	struct pool_seg *seg;

	pthread_mutex_lock(&pool->lock);
	while ((blk = pool->blocks)) {
		pool->blocks = blk->next;
		while ((seg = blk->segs)) {
			blk->segs = seg->next;
			free(seg);
		}
		dev->ops->free(dev, blk->mem);
		free(blk);
	}
	pool->capacity = 0;
	pool->used = 0;
	pthread_mutex_unlock(&pool->lock);
}

int gpo_pool_stats(struct gpo_device *dev, struct gpo_pool_stats *st)
{
	struct pool *pool;

	if (!dev || !st)
		return gpo__err(-EINVAL, "NULL argument");
	pool = &dev->pool;
	pthread_mutex_lock(&pool->lock);
	st->capacity_bytes = pool->capacity;
	st->used_bytes = pool->used;
	st->cached_bytes = pool->capacity - pool->used;
	st->peak_bytes = pool->peak;
	st->limit_bytes = pool->limit;
	st->allocs = pool->allocs;
	st->frees = pool->frees;
	st->failures = pool->failures;
	pthread_mutex_unlock(&pool->lock);
	return 0;
}

int gpo_pool_set_limit(struct gpo_device *dev, uint64_t limit)
{
	struct pool *pool;
	int ret = 0;

	if (!dev)
		return gpo__err(-EINVAL, "NULL device");
	pool = &dev->pool;
	pthread_mutex_lock(&pool->lock);
	if (pool->used > limit) {
		ret = gpo__err(-EBUSY, "%s: %llu bytes in use exceed the limit %llu",
			      dev->info.id, (unsigned long long)pool->used,
			      (unsigned long long)limit);
		goto out_unlock;
	}
	if (pool->capacity > limit)
		trim_locked(dev);
	pool->limit = limit;
out_unlock:
	pthread_mutex_unlock(&pool->lock);
	return ret;
}

int gpo_pool_trim(struct gpo_device *dev)
{
	if (!dev)
		return gpo__err(-EINVAL, "NULL device");
	pthread_mutex_lock(&dev->pool.lock);
	trim_locked(dev);
	pthread_mutex_unlock(&dev->pool.lock);
	return 0;
}
