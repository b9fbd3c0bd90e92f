// SPDX-License-Identifier: MIT
/*
 * hostmem.c - pinned host memory: gpo_host_alloc() and gpo_host_free(),
 * and the list of ranges each device handed out
 *
 * The backend makes the memory (a mapped host-visible allocation on
 * Vulkan, a mapped CL_MEM_ALLOC_HOST_PTR buffer on OpenCL); this file
 * keeps the ranges sorted by address, so that write() and read() can tell
 * in a binary search whether a pointer lies in one and copy by DMA.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/gpuopt_i.h"

#define HOST_ALIGN	4096
#define COPY_THREADS	4
/* below this a thread costs more than it saves */
#define COPY_SPLIT	(4ull << 20)

void gpo__host_init(struct host_ranges *hr)
{
	memset(hr, 0, sizeof(*hr));
	pthread_mutex_init(&hr->lock, NULL);
}

static uint64_t phys_bytes(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);

	return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size :
				       UINT64_MAX;
}

static int host_alloc_mem(struct gpo_device *dev, uint64_t bytes,
			  struct host_mem *out)
{
	void *p;
	int ret;

	memset(out, 0, sizeof(*out));
	out->size = bytes;
	if (dev->ops->host_alloc)
		return dev->ops->host_alloc(dev, out);
	/* the cpu backend: its device memory is host memory already */
	ret = posix_memalign(&p, HOST_ALIGN, bytes);
	if (ret)
		return gpo__err(-ENOMEM, "%s: out of memory for %llu bytes of host memory",
			       dev->info.id, (unsigned long long)bytes);
	out->ptr = p;
	return 0;
}

static void host_free_mem(struct gpo_device *dev, struct host_mem *hm)
{
	if (!hm->ptr)
		return;
	if (dev->ops->host_free)
		dev->ops->host_free(dev, hm);
	else
		free(hm->ptr);
	memset(hm, 0, sizeof(*hm));
}

/* The index of the first range that starts after @p. */
static int upper(const struct host_ranges *hr, const unsigned char *p)
{
	int lo = 0, hi = hr->n;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;

		if (hr->v[mid].ptr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int gpo__host_find(struct gpo_device *dev, const void *p, uint64_t bytes,
		   struct host_mem *out)
{
	struct host_ranges *hr = &dev->host;
	const unsigned char *c = p;
	int i, found = 0;

	pthread_mutex_lock(&hr->lock);
	i = hr->n ? upper(hr, c) - 1 : -1;
	if (i >= 0) {
		const struct host_mem *h = &hr->v[i];
		uint64_t off = (uint64_t)(c - h->ptr);

		if (off < h->size && bytes <= h->size - off) {
			*out = *h;
			found = 1;
		}
	}
	pthread_mutex_unlock(&hr->lock);
	return found;
}

int gpo_host_alloc(struct gpo_device *dev, size_t bytes, void **out)
{
	struct host_ranges *hr;
	struct host_mem hm, *v;
	int ret, i;

	if (!dev || !out)
		return gpo__err(-EINVAL, "gpo_host_alloc: NULL argument");
	if (!bytes)
		return gpo__err(-EINVAL, "gpo_host_alloc: 0 bytes");
	/* a size no machine could pin, before the driver tries */
	if ((uint64_t)bytes > phys_bytes())
		return gpo__err(-ENOMEM, "%s: %zu bytes of pinned memory: more than the machine's %llu",
			       dev->info.id, bytes,
			       (unsigned long long)phys_bytes());
	hr = &dev->host;
	ret = host_alloc_mem(dev, bytes, &hm);
	if (ret)
		return ret;

	pthread_mutex_lock(&hr->lock);
	if (hr->n == hr->cap) {
		int cap = hr->cap ? 2 * hr->cap : 8;

		v = realloc(hr->v, (size_t)cap * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&hr->lock);
			host_free_mem(dev, &hm);
			return gpo__err(-ENOMEM, "out of memory");
		}
		hr->v = v;
		hr->cap = cap;
	}
	i = upper(hr, hm.ptr);
	memmove(&hr->v[i + 1], &hr->v[i], (size_t)(hr->n - i) * sizeof(hm));
	hr->v[i] = hm;
	hr->n++;
	pthread_mutex_unlock(&hr->lock);
	*out = hm.ptr;
	return 0;
}

int gpo_host_free(struct gpo_device *dev, void *p)
{
	struct host_ranges *hr;
	struct host_mem hm;
	int i;

	if (!p)
		return 0;
	if (!dev)
		return gpo__err(-EINVAL, "gpo_host_free: NULL device");
	hr = &dev->host;
	pthread_mutex_lock(&hr->lock);
	i = hr->n ? upper(hr, p) - 1 : -1;
	if (i < 0 || hr->v[i].ptr != p) {
		pthread_mutex_unlock(&hr->lock);
		return gpo__err(-EINVAL, "gpo_host_free: %p is not memory gpo_host_alloc() gave on %s",
			       p, dev->info.id);
	}
	/*
	 * Out of the list first: a transfer that starts now copies through
	 * staging; one that found the range holds what host_free() waits on.
	 */
	hm = hr->v[i];
	memmove(&hr->v[i], &hr->v[i + 1], (size_t)(hr->n - i - 1) * sizeof(hm));
	hr->n--;
	pthread_mutex_unlock(&hr->lock);
	host_free_mem(dev, &hm);
	return 0;
}

/* ---- copies to and from staging ------------------------------------------ */

struct copy_part {
	unsigned char *dst;
	const unsigned char *src;
	uint64_t bytes;
};

static void *copy_part(void *arg)
{
	struct copy_part *p = arg;

	memcpy(p->dst, p->src, p->bytes);
	return NULL;
}

/* GPUOPT_COPY_THREADS, else COPY_THREADS where there are 4 cores a thread */
static int copy_threads(void)
{
	static int by_cpus;
	const char *env = getenv("GPUOPT_COPY_THREADS");
	long cpus;
	int n;

	if (env && atoi(env) > 0)
		return atoi(env) < 16 ? atoi(env) : 16;
	n = __atomic_load_n(&by_cpus, __ATOMIC_RELAXED);
	if (!n) {
		/* sysconf() reads /sys: once */
		cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus >= 4 * COPY_THREADS ? COPY_THREADS :
		    cpus >= 8 ? 2 : 1;
		__atomic_store_n(&by_cpus, n, __ATOMIC_RELAXED);
	}
	return n;
}

void gpo__host_copy(void *dst, const void *src, uint64_t bytes)
{
	struct copy_part part[16];
	pthread_t th[16];
	int n = copy_threads(), i, started;
	uint64_t each, pos = 0;

	if (n < 2 || bytes < COPY_SPLIT) {
		memcpy(dst, src, bytes);
		return;
	}
	/* parts of whole cache lines; the caller's thread takes the last */
	each = (bytes / n + 63) & ~63ull;
	for (i = 0; i < n; i++) {
		uint64_t len = bytes - pos < each ? bytes - pos : each;

		part[i] = (struct copy_part){ (unsigned char *)dst + pos,
					      (const unsigned char *)src + pos,
					      len };
		pos += len;
	}
	for (started = 0; started < n - 1; started++)
		if (pthread_create(&th[started], NULL, copy_part,
				   &part[started]))
			break;
	/* what no thread took (none could start: all of it) */
	for (i = started; i < n; i++)
		copy_part(&part[i]);
	for (i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

void gpo__host_destroy(struct gpo_device *dev)
{
	struct host_ranges *hr = &dev->host;
	int i;

	for (i = 0; i < hr->n; i++)
		host_free_mem(dev, &hr->v[i]);
	free(hr->v);
	hr->v = NULL;
	hr->n = hr->cap = 0;
	pthread_mutex_destroy(&hr->lock);
}
