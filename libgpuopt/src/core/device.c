// SPDX-License-Identifier: MIT
/*
 * device.c - the context, the device registry and device selection
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"

/* Probe order; the cpu backend first so that cpu:0 is always index 0. */
static const struct backend_ops *const backend_list[] = {
	&gpo__cpu_backend_ops,
#ifdef GPO_HAVE_VULKAN
	&gpo__vulkan_backend_ops,
#endif
#ifdef GPO_HAVE_OPENCL
	&gpo__opencl_backend_ops,
#endif
};

void gpo__ctx_log(struct gpo_ctx *ctx, const char *fmt, ...)
{
	size_t used = strlen(ctx->probe_log);
	va_list ap;

	if (used + 2 >= sizeof(ctx->probe_log))
		return;
	va_start(ap, fmt);
	vsnprintf(ctx->probe_log + used, sizeof(ctx->probe_log) - used - 1,
		  fmt, ap);
	va_end(ap);
	strcat(ctx->probe_log, "\n");
}

int gpo__ctx_add_device(struct gpo_ctx *ctx, const struct backend_ops *ops,
		   const struct gpo_device_info *info, void *priv)
{
	struct gpo_device *dev, **devs;
	int i, nth = 0;

	for (i = 0; i < ctx->ndevs; i++)
		if (ctx->devs[i]->ops == ops)
			nth++;
	devs = realloc(ctx->devs, (ctx->ndevs + 1) * sizeof(*devs));
	if (!devs)
		return -ENOMEM;
	ctx->devs = devs;
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return -ENOMEM;
	dev->ctx = ctx;
	dev->ops = ops;
	dev->info = *info;
	dev->info.index = ctx->ndevs;
	dev->info.enabled = 1;
	dev->info.present = 1;
	/* backends without cooperative matrices leave it empty */
	if (!dev->info.coopmat[0])
		snprintf(dev->info.coopmat, sizeof(dev->info.coopmat), "none");
	snprintf(dev->info.id, sizeof(dev->info.id), "%s:%d", ops->name, nth);
	snprintf(dev->info.backend, sizeof(dev->info.backend), "%s",
		 ops->name);
	dev->priv = priv;
	pthread_mutex_init(&dev->lock, NULL);
	gpo__pool_init(&dev->pool);
	gpo__host_init(&dev->host);
	ctx->devs[ctx->ndevs++] = dev;
	return 0;
}

int gpo__ctx_adopt_device(struct gpo_ctx *ctx, const struct backend_ops *ops,
			  const struct gpo_device_info *info, void *priv,
			  struct gpo_device **out)
{
	struct gpo_device *dev;
	int ret;

	pthread_mutex_lock(&ctx->lock);
	ret = gpo__ctx_add_device(ctx, ops, info, priv);
	if (ret) {
		pthread_mutex_unlock(&ctx->lock);
		return gpo__err(ret, "out of memory");
	}
	dev = ctx->devs[ctx->ndevs - 1];
	dev->adopted = 1;
	ret = ops->open(dev);
	if (ret) {
		/* as if never added: @priv goes back to the backend */
		ctx->ndevs--;
		pthread_mutex_destroy(&dev->lock);
		pthread_mutex_destroy(&dev->pool.lock);
		free(dev);
	} else {
		dev->opened = 1;
		*out = dev;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int gpo_device_adopt_opencl(struct gpo_ctx *ctx,
			    const struct gpo_opencl_handles *h,
			    struct gpo_device **out)
{
	if (!ctx || !h || !out)
		return gpo__err(-EINVAL, "NULL argument");
#ifdef GPO_HAVE_OPENCL
	return gpo__opencl_adopt(ctx, h, out);
#else
	return gpo__err(-ENOSYS, "libgpuopt was built without OpenCL");
#endif
}

int gpo_device_adopt_vulkan(struct gpo_ctx *ctx,
			    const struct gpo_vulkan_handles *h,
			    struct gpo_device **out)
{
	if (!ctx || !h || !out)
		return gpo__err(-EINVAL, "NULL argument");
#ifdef GPO_HAVE_VULKAN
	return gpo__vulkan_adopt(ctx, h, out);
#else
	return gpo__err(-ENOSYS, "libgpuopt was built without Vulkan");
#endif
}

/* Probe every backend into @ctx; @failed[i] says backend i's probe failed. */
static void ctx_probe(struct gpo_ctx *ctx, int *failed)
{
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(backend_list); i++) {
		ret = backend_list[i]->probe(ctx);
		if (ret)
			gpo__ctx_log(ctx, "%s: probe failed: %s", backend_list[i]->name,
				gpo_errmsg());
		if (failed)
			failed[i] = ret != 0;
	}
}

static void device_destroy(struct gpo_device *dev)
{
	gpo__pool_destroy(dev);
	gpo__host_destroy(dev);
	/* close also frees what probe left in dev->priv */
	dev->ops->close(dev);
	pthread_mutex_destroy(&dev->lock);
	pthread_mutex_destroy(&dev->pool.lock);
	free(dev);
}

int gpo_ctx_new(struct gpo_ctx **out, unsigned int flags)
{
	struct gpo_ctx *ctx;

	if (!out || flags)
		return gpo__err(-EINVAL, "gpo_ctx_new: bad arguments");
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return gpo__err(-ENOMEM, "out of memory");
	pthread_mutex_init(&ctx->lock, NULL);
	ctx_probe(ctx, NULL);
	if (!ctx->ndevs) {
		gpo_ctx_free(ctx);
		return gpo__err(-ENODEV, "no device found, not even the cpu");
	}
	gpo__err_clear();
	*out = ctx;
	return 0;
}

void gpo_ctx_free(struct gpo_ctx *ctx)
{
	int i;

	if (!ctx)
		return;
	for (i = 0; i < ctx->ndevs; i++)
		device_destroy(ctx->devs[i]);
	free(ctx->devs);
	pthread_mutex_destroy(&ctx->lock);
	free(ctx);
}

/* ---- rescan -------------------------------------------------------------- */

/* The same device: same backend, and the same uuid, or without one the
 * same name, vendor and driver. */
static int same_device(const struct gpo_device *a, const struct gpo_device *b)
{
	if (a->ops != b->ops)
		return 0;
	if (a->info.uuid[0] || b->info.uuid[0])
		return !strcmp(a->info.uuid, b->info.uuid);
	return !strcmp(a->info.name, b->info.name) &&
	       !strcmp(a->info.vendor, b->info.vendor) &&
	       !strcmp(a->info.driver, b->info.driver);
}

static int backend_slot(const struct backend_ops *ops)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(backend_list); i++)
		if (backend_list[i] == ops)
			return i;
	return -1;
}

/* Move @dev, probed into a scratch context, to the end of @ctx. */
static void device_adopt(struct gpo_ctx *ctx, struct gpo_device *dev)
{
	int i, nth = 0;

	for (i = 0; i < ctx->ndevs; i++)
		if (ctx->devs[i]->ops == dev->ops)
			nth++;
	dev->ctx = ctx;
	dev->info.index = ctx->ndevs;
	snprintf(dev->info.id, sizeof(dev->info.id), "%s:%d", dev->ops->name,
		 nth);
	ctx->devs[ctx->ndevs++] = dev;
}

int gpo_ctx_rescan(struct gpo_ctx *ctx)
{
	int failed[ARRAY_SIZE(backend_list)];
	struct gpo_device **devs, *dev;
	struct gpo_ctx *scratch;
	unsigned char *found;
	int i, k, nold, slot;

	if (!ctx)
		return gpo__err(-EINVAL, "NULL context");
	scratch = calloc(1, sizeof(*scratch));
	if (!scratch)
		return gpo__err(-ENOMEM, "out of memory");
	pthread_mutex_init(&scratch->lock, NULL);
	ctx_probe(scratch, failed);

	/* everything that can fail comes before the first change */
	nold = ctx->ndevs;
	found = calloc(nold, 1);
	devs = realloc(ctx->devs, (nold + scratch->ndevs) * sizeof(*devs));
	if (devs)
		ctx->devs = devs;
	if (!found || !devs) {
		free(found);
		gpo_ctx_free(scratch);
		return gpo__err(-ENOMEM, "out of memory");
	}

	pthread_mutex_lock(&ctx->lock);
	for (k = 0; k < scratch->ndevs; k++) {
		dev = scratch->devs[k];
		for (i = 0; i < nold; i++)
			if (!found[i] && !ctx->devs[i]->gone &&
			    !ctx->devs[i]->adopted &&
			    same_device(ctx->devs[i], dev))
				break;
		if (i < nold) {
			found[i] = 1;
			device_destroy(dev);
			continue;
		}
		device_adopt(ctx, dev);
		gpo__ctx_log(scratch, "%s: new device (%s)", dev->info.id,
			dev->info.name);
	}
	for (i = 0; i < nold; i++) {
		dev = ctx->devs[i];
		if (found[i] || dev->gone || dev->adopted)
			continue;
		/* a backend that failed to probe loses no device */
		slot = backend_slot(dev->ops);
		if (slot >= 0 && failed[slot])
			continue;
		dev->gone = 1;
		dev->info.present = 0;
		dev->info.enabled = 0;
		gpo__ctx_log(scratch, "%s: gone (%s)", dev->info.id, dev->info.name);
	}
	memcpy(ctx->probe_log, scratch->probe_log, sizeof(ctx->probe_log));
	pthread_mutex_unlock(&ctx->lock);

	/* every scratch device was destroyed or adopted */
	free(scratch->devs);
	pthread_mutex_destroy(&scratch->lock);
	free(scratch);
	free(found);
	gpo__err_clear();
	return 0;
}

const char *gpo_ctx_probe_log(struct gpo_ctx *ctx)
{
	return ctx ? ctx->probe_log : "";
}

int gpo_device_count(struct gpo_ctx *ctx)
{
	if (!ctx)
		return gpo__err(-EINVAL, "NULL context");
	return ctx->ndevs;
}

const char *gpo_device_type_name(enum gpo_device_type type)
{
	static const char *const names[] = {
		[GPO_DEVICE_DISCRETE_GPU] = "discrete",
		[GPO_DEVICE_INTEGRATED_GPU] = "integrated",
		[GPO_DEVICE_VIRTUAL_GPU] = "virtual",
		[GPO_DEVICE_CPU_IMPL] = "cpu-impl",
		[GPO_DEVICE_CPU] = "cpu",
		[GPO_DEVICE_OTHER] = "other",
	};

	if ((unsigned int)type >= ARRAY_SIZE(names))
		return "other";
	return names[type];
}

int gpo_device_info(struct gpo_ctx *ctx, int index,
		    struct gpo_device_info *info)
{
	struct gpo_device *dev;

	if (!ctx || !info)
		return gpo__err(-EINVAL, "NULL argument");
	if (index < 0 || index >= ctx->ndevs)
		return gpo__err(-ENODEV, "no device %d (there are %d)", index,
			       ctx->ndevs);
	dev = ctx->devs[index];
	*info = dev->info;
	pthread_mutex_lock(&dev->pool.lock);
	info->mem_used_bytes = dev->pool.capacity;
	pthread_mutex_unlock(&dev->pool.lock);
	return 0;
}

int gpo__device_open(struct gpo_device *dev)
{
	struct gpo_ctx *ctx = dev->ctx;
	int ret = 0;

	pthread_mutex_lock(&ctx->lock);
	if (!dev->opened) {
		ret = dev->ops->open(dev);
		if (ret)
			gpo__ctx_log(ctx, "%s: open failed: %s", dev->info.id,
				gpo_errmsg());
		else
			dev->opened = 1;
	}
	pthread_mutex_unlock(&ctx->lock);
	return ret;
}

int gpo_device_get(struct gpo_ctx *ctx, int index, struct gpo_device **out)
{
	struct gpo_device *dev;
	int ret;

	if (!ctx || !out)
		return gpo__err(-EINVAL, "NULL argument");
	if (index < 0 || index >= ctx->ndevs)
		return gpo__err(-ENODEV, "no device %d (there are %d)", index,
			       ctx->ndevs);
	dev = ctx->devs[index];
	if (dev->gone)
		return gpo__err(-ENODEV, "device %s is gone (a rescan no longer finds it)",
			       dev->info.id);
	if (!dev->info.enabled)
		return gpo__err(-ENODEV, "device %s is disabled", dev->info.id);
	ret = gpo__device_open(dev);
	if (ret)
		return ret;
	*out = dev;
	return 0;
}

/* Lower is better: the order "best" tries devices in. */
static int device_rank(const struct gpo_device *dev)
{
	int rank;

	switch (dev->info.type) {
	case GPO_DEVICE_DISCRETE_GPU:
		rank = 0;
		break;
	case GPO_DEVICE_INTEGRATED_GPU:
	case GPO_DEVICE_VIRTUAL_GPU:
	case GPO_DEVICE_OTHER:
		rank = 1;
		break;
	case GPO_DEVICE_CPU_IMPL:
		/*
		 * OpenCL or Vulkan run on the CPU (PoCL, lavapipe): after the
		 * cpu backend, which does the same work several times faster
		 */
		rank = 3;
		break;
	default:
		rank = 2;
		break;
	}
	/* Vulkan before OpenCL within a kind */
	return rank * 4 + (strcmp(dev->info.backend, "vulkan") ? 1 : 0);
}

/* can "best" pick @dev at all? */
static int best_candidate(const struct gpo_device *dev)
{
	return dev->info.enabled && !dev->gone && !dev->adopted;
}

int gpo_device_best_rank(struct gpo_ctx *ctx, int index, char *why,
			 size_t len)
{
	static const char *const kind[] = {
		[GPO_DEVICE_DISCRETE_GPU] = "a discrete GPU: first",
		[GPO_DEVICE_INTEGRATED_GPU] = "an integrated GPU: after discrete ones",
		[GPO_DEVICE_VIRTUAL_GPU] = "a virtual GPU: after discrete ones",
		[GPO_DEVICE_CPU_IMPL] = "OpenCL or Vulkan on the CPU: after the cpu backend, which runs the same work several times faster",
		[GPO_DEVICE_CPU] = "libgpuopt's cpu backend: after every GPU, before OpenCL or Vulkan on a CPU",
		[GPO_DEVICE_OTHER] = "an accelerator of another kind: after discrete GPUs",
	};
	const struct gpo_device *dev;
	int i, place = 1, r;

	if (!ctx || (!why && len))
		return gpo__err(-EINVAL, "NULL argument");
	if (index < 0 || index >= ctx->ndevs)
		return gpo__err(-ENODEV, "no device %d (there are %d)", index,
			       ctx->ndevs);
	dev = ctx->devs[index];
	if (!best_candidate(dev)) {
		if (len)
			snprintf(why, len, "never: %s",
				 dev->gone ? "gone" : dev->adopted ?
				 "adopted, the caller's own objects" :
				 "disabled");
		return 0;
	}
	r = device_rank(dev);
	for (i = 0; i < ctx->ndevs; i++) {
		const struct gpo_device *o = ctx->devs[i];

		if (best_candidate(o) &&
		    (device_rank(o) < r || (device_rank(o) == r && i < index)))
			place++;
	}
	if (len)
		snprintf(why, len, "%s%s",
			 (unsigned int)dev->info.type < ARRAY_SIZE(kind) &&
			 kind[dev->info.type] ? kind[dev->info.type] :
			 "of unknown kind",
			 strcmp(dev->info.backend, "vulkan") ? "" :
			 "; Vulkan before OpenCL");
	return place;
}

static int select_best(struct gpo_ctx *ctx, const char *backend,
		       struct gpo_device **out)
{
	int tried = 0, rank, i, best;
	char used[64] = { 0 };

	/* try devices in rank order, skipping those that fail to open */
	for (;;) {
		best = -1;
		for (i = 0; i < ctx->ndevs && i < (int)sizeof(used); i++) {
			struct gpo_device *dev = ctx->devs[i];

			if (used[i] || !best_candidate(dev))
				continue;
			if (backend && strcmp(dev->info.backend, backend))
				continue;
			rank = device_rank(dev);
			if (best < 0 || rank < device_rank(ctx->devs[best]))
				best = i;
		}
		if (best < 0)
			break;
		used[best] = 1;
		tried++;
		if (!gpo__device_open(ctx->devs[best])) {
			gpo__err_clear();
			*out = ctx->devs[best];
			return 0;
		}
	}
	if (backend)
		return gpo__err(-ENODEV, "no usable %s device (%d tried)",
			       backend, tried);
	return gpo__err(-ENODEV, "no usable device (%d tried)", tried);
}

int gpo_device_select(struct gpo_ctx *ctx, const char *spec,
		      struct gpo_device **out)
{
	int i;

	if (!ctx || !out)
		return gpo__err(-EINVAL, "NULL argument");
	if (!spec || !*spec)
		spec = getenv("GPUOPT_DEVICE");
	if (!spec || !*spec || !strcmp(spec, "best"))
		return select_best(ctx, NULL, out);
	if (!strchr(spec, ':')) {
		for (i = 0; i < (int)ARRAY_SIZE(backend_list); i++)
			if (!strcmp(spec, backend_list[i]->name))
				return select_best(ctx, spec, out);
		if (strcmp(spec, "opencl") && strcmp(spec, "vulkan"))
			return gpo__err(-EINVAL,
				       "bad device '%s': use best, a backend (cpu, opencl, vulkan) or an id like vulkan:0",
				       spec);
		return gpo__err(-ENODEV, "no %s device: libgpuopt was built without %s",
			       spec, spec);
	}
	for (i = 0; i < ctx->ndevs; i++)
		if (!strcmp(ctx->devs[i]->info.id, spec))
			return gpo_device_get(ctx, i, out);
	return gpo__err(-ENODEV, "no device '%s'", spec);
}

int gpo_device_enable(struct gpo_ctx *ctx, int index, int enabled)
{
	if (!ctx || (enabled != 0 && enabled != 1))
		return gpo__err(-EINVAL, "bad arguments");
	if (index < 0 || index >= ctx->ndevs)
		return gpo__err(-ENODEV, "no device %d", index);
	if (enabled && ctx->devs[index]->gone)
		return gpo__err(-ENODEV, "device %s is gone",
			       ctx->devs[index]->info.id);
	ctx->devs[index]->info.enabled = enabled;
	return 0;
}

int gpo_device_index(const struct gpo_device *dev)
{
	if (!dev)
		return gpo__err(-EINVAL, "NULL device");
	return dev->info.index;
}
