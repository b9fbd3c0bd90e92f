/* SPDX-License-Identifier: MIT */
/*
 * gpuopt.h - the public interface of libgpuopt
 *
 * libgpuopt runs fused optimizer steps (SGD, Adam, AdamW, RMSprop, Adagrad,
 * LAMB, Lion) over flat device memory, with torch.optim's semantics, on
 * OpenCL, Vulkan or CPU devices.
 *
 * Every function that can fail returns 0 (or a non-negative count) on
 * success and a negative errno on failure; gpo_errmsg() then describes the
 * failure in words. A failed call changes nothing.
 *
 * Objects are opaque. A context owns its devices; an optimizer belongs to
 * one device and must be freed before the context. Calls on one optimizer
 * must not run concurrently; different optimizers may be used from
 * different threads, also on one device.
 */
#ifndef GPUOPT_H
#define GPUOPT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the one place the version is written: the Makefile reads it from here */
#define GPUOPT_VERSION_MAJOR 0
#define GPUOPT_VERSION_MINOR 1
#define GPUOPT_VERSION_PATCH 0

struct gpo_ctx;
struct gpo_device;
struct gpo_optim;
struct gpo_sched;

/*
 * gpo_version - the library's version as "major.minor.patch"
 */
const char *gpo_version(void);

/*
 * gpo_errmsg - describe the last failure of this thread
 *
 * Returns the message set by the last libgpuopt call of the calling thread
 * that failed. Read it right after the failure: a later call may replace
 * it, and a successful call may clear it to "". The text stays valid
 * until the next libgpuopt call on this thread.
 */
const char *gpo_errmsg(void);

/* ---- element types ------------------------------------------------------ */

/*
 * The element type of a buffer: every buffer and optimizer slot has one
 * (f32 unless set otherwise). Data is little-endian; f16 is IEEE 754
 * binary16, bf16 the top half of a float32, u8 the bytes of 8-bit
 * quantized state, i32/i64 two's complement (labels).
 */
enum gpo_dtype {
	GPO_F32 = 0,
	GPO_F16,
	GPO_BF16,
	GPO_U8,
	GPO_I32,
	GPO_I64,
	GPO_DTYPES
};

/* gpo_dtype_size - bytes per element of @dt: 4, 2, 2, 1, 4, 8; 0 if invalid */
size_t gpo_dtype_size(enum gpo_dtype dt);

/*
 * gpo_dtype_name - "f32", "f16", "bf16", "u8", "i32" or "i64"; "unknown"
 * for an invalid @dt (never NULL, so it can go straight into a message)
 */
const char *gpo_dtype_name(enum gpo_dtype dt);

/*
 * gpo_dtype_parse - the dtype named @name, one of gpo_dtype_name()'s
 * names in lower case, or -EINVAL
 */
int gpo_dtype_parse(const char *name);

/* ---- contexts and devices ---------------------------------------------- */

/*
 * gpo_ctx_new - create a context and probe every backend for devices
 * @out:   receives the context
 * @flags: 0 (reserved)
 *
 * Probes the cpu backend and, where compiled in and present, OpenCL and
 * Vulkan. A backend or device that fails to probe is skipped and noted in
 * gpo_ctx_probe_log(); it never fails the context.
 * Returns 0, -EINVAL for a NULL @out or unknown @flags, -ENOMEM.
 */
int gpo_ctx_new(struct gpo_ctx **out, unsigned int flags);

/*
 * gpo_ctx_free - close every device and free the context
 *
 * Optimizers created on the context's devices must be freed first.
 * NULL is allowed.
 */
void gpo_ctx_free(struct gpo_ctx *ctx);

/*
 * gpo_ctx_probe_log - what probing skipped and why
 *
 * Returns a text of one line per device or backend that failed to probe or
 * open, "" when all went well. Valid until the context is freed.
 */
const char *gpo_ctx_probe_log(struct gpo_ctx *ctx);

/*
 * gpo_ctx_rescan - probe every backend again and bring the context up to date
 *
 * Devices found again keep their index, id and state; a device seen for
 * the first time is added with the next free index and the next free id of
 * its backend (a device unplugged and plugged back is a new device); a
 * device no longer found is marked gone: gpo_device_info() reports
 * present = 0 and enabled = 0, and gpo_device_get() and
 * gpo_device_select() refuse it. A gone device is not freed: optimizers
 * on it stay valid until freed, and their work fails with the backend's
 * -ENODEV or -EIO once the hardware is really gone. A device is the same
 * device when its backend matches and its uuid, or where it has none, its
 * name, vendor and driver. A backend whose probe fails loses no device.
 * Must not run concurrently with other calls on @ctx (calls on optimizers
 * and opened devices may go on). gpo_ctx_probe_log() then describes this
 * probe. Returns 0, -EINVAL for a NULL @ctx, -ENOMEM (nothing changed).
 */
int gpo_ctx_rescan(struct gpo_ctx *ctx);

/*
 * gpo_device_count - the number of devices the context found (>= 1: the
 * cpu device always exists), or -EINVAL for a NULL @ctx.
 */
int gpo_device_count(struct gpo_ctx *ctx);

enum gpo_device_type {
	GPO_DEVICE_DISCRETE_GPU = 0,
	GPO_DEVICE_INTEGRATED_GPU,
	GPO_DEVICE_VIRTUAL_GPU,
	GPO_DEVICE_CPU_IMPL,	/* an OpenCL or Vulkan implementation on a CPU */
	GPO_DEVICE_CPU,		/* libgpuopt's own cpu backend */
	GPO_DEVICE_OTHER,
};

struct gpo_device_info {
	int index;			/* stable index in the context */
	char id[32];			/* "vulkan:0", "opencl:1", "cpu:0" */
	char backend[16];		/* "cpu", "opencl", "vulkan" */
	char name[128];
	char vendor[64];
	char driver[64];		/* driver version */
	char uuid[40];			/* 32 hex digits, "" if unknown */
	enum gpo_device_type type;
	unsigned int compute_units;	/* 0 when the driver does not say */
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes;	/* held by this context's pool */
	int enabled;			/* 0 after gpo_device_enable(.., 0) */
	int present;			/* 0 once a rescan lost it */
	/*
	 * tensor-core matrix products: "nv:f16*f16+f32:16x16x16,16x8x16"
	 * (VK_NV_cooperative_matrix's f16 x f16 + f32 sizes, M x N x K), or
	 * "none"; matmuls with f16 operands use them where 16x16x16 is one
	 */
	char coopmat[96];
};

/*
 * gpo_device_type_name - "discrete", "integrated", "virtual", "cpu-impl",
 * "cpu" or "other".
 */
const char *gpo_device_type_name(enum gpo_device_type type);

/*
 * gpo_device_info - describe device @index of @ctx
 * Also gone devices (present = 0). Returns 0, -EINVAL for a NULL argument,
 * -ENODEV for an index out of range.
 */
int gpo_device_info(struct gpo_ctx *ctx, int index,
		    struct gpo_device_info *info);

/*
 * gpo_device_get - the device at @index, opened for use
 * Returns 0, -EINVAL, -ENODEV for an index out of range, a disabled or a
 * gone device, or the backend's error if it fails to open.
 */
int gpo_device_get(struct gpo_ctx *ctx, int index, struct gpo_device **out);

/*
 * gpo_device_select - pick and open a device by name
 * @spec: "best", a backend name ("vulkan", "opencl", "cpu": its best
 *        device), or an id ("vulkan:0"); NULL or "" means the environment
 *        variable GPUOPT_DEVICE, and "best" when that is unset.
 *
 * "best" prefers a discrete GPU, then an integrated or virtual one, then the
 * cpu backend, then an OpenCL or Vulkan implementation on the CPU (PoCL,
 * lavapipe: several times slower than the cpu backend); within a kind
 * Vulkan before OpenCL. A device that fails to open is skipped by
 * "best" (and noted in the probe log) but is an error when named.
 * Returns 0, -EINVAL for a malformed @spec, -ENODEV when no device matches.
 */
int gpo_device_select(struct gpo_ctx *ctx, const char *spec,
		      struct gpo_device **out);

/*
 * gpo_device_best_rank - where device @index stands in "best"'s order
 * @why: receives, in up to @len bytes (NUL included), the reason in words
 *       ("a discrete GPU: first", ...); NULL with @len 0 for none
 *
 * Returns the device's place among the devices "best" may pick, 1 for the
 * one it tries first (which it takes unless that fails to open), or 0 when
 * "best" never picks it (disabled, gone or adopted; @why says which);
 * -EINVAL for a NULL @ctx, -ENODEV for an index out of range.
 */
int gpo_device_best_rank(struct gpo_ctx *ctx, int index, char *why,
			 size_t len);

/*
 * gpo_device_enable - allow (1) or refuse (0) new use of a device
 * Existing optimizers go on. Returns 0, -EINVAL, -ENODEV (no such device,
 * or enabling a gone one).
 */
int gpo_device_enable(struct gpo_ctx *ctx, int index, int enabled);

/* gpo_device_index - the index of an opened device */
int gpo_device_index(const struct gpo_device *dev);

/* ---- the caller's own devices and buffers (interop) ----------------------
 *
 * A program that runs its own OpenCL or Vulkan kernels hands gpuopt its
 * device objects; gpuopt then runs on them (an adopted device) and steps
 * the program's own buffers, bound as an optimizer's parameters or
 * gradients, with no copy through the host. Handles are passed as void *
 * (cl_context, VkDevice, ...), so this header needs neither API's headers.
 */

/*
 * The caller's OpenCL objects. gpuopt retains them (clRetain*) for as long
 * as the adopted device lives and enqueues all its work on @queue, which
 * must be an in-order queue of @context on @device: work the caller
 * enqueued before a gpuopt call is done before gpuopt's, and gpuopt's
 * before what the caller enqueues after it returns.
 */
struct gpo_opencl_handles {
	void *context;		/* cl_context */
	void *device;		/* cl_device_id */
	void *queue;		/* cl_command_queue, in order */
};

/*
 * The caller's Vulkan objects, from the same loader gpuopt links
 * (libvulkan.so.1). @device must have been created with a queue of
 * @queue_family (compute capable) and API version 1.1 or later. gpuopt
 * submits its work to @queue, behind a barrier that waits for everything
 * submitted to it before, and ends it with one that orders what the caller
 * submits after; each call's work is submitted before it returns. The
 * caller must not use @queue from another thread during a gpuopt call
 * (Vulkan's external synchronisation). gpuopt relies on no extension of
 * @device and creates its own command pool, fence, query pool, pipelines
 * and buffers on it, destroyed by gpo_ctx_free(); it destroys none of the
 * caller's objects: the caller destroys them after gpo_ctx_free().
 */
struct gpo_vulkan_handles {
	void *instance;		/* VkInstance */
	void *physical_device;	/* VkPhysicalDevice */
	void *device;		/* VkDevice */
	void *queue;		/* VkQueue */
	uint32_t queue_family;
};

/*
 * gpo_device_adopt_opencl / gpo_device_adopt_vulkan - add a device that
 * runs on the caller's objects
 * @ctx: the context it joins (as "opencl:N" or "vulkan:N", N the next free
 *       index of its backend, with "adopted" in gpo_device_info()'s driver
 *       field); "best" never picks it
 * @out: receives the device, opened
 *
 * Must not run concurrently with other calls on @ctx (as
 * gpo_ctx_rescan()). Returns 0; -EINVAL for a NULL or invalid handle, a
 * queue of another context or family, or a device too old; -ENOSYS when
 * libgpuopt was built without that API; the driver's error otherwise. On
 * failure nothing is added and nothing of the caller's is changed.
 */
int gpo_device_adopt_opencl(struct gpo_ctx *ctx,
			    const struct gpo_opencl_handles *h,
			    struct gpo_device **out);
int gpo_device_adopt_vulkan(struct gpo_ctx *ctx,
			    const struct gpo_vulkan_handles *h,
			    struct gpo_device **out);

enum gpo_extbuf_kind {
	GPO_EXTBUF_CL_MEM = 1,	/* a cl_mem of the adopted device's context */
	GPO_EXTBUF_VK_BUFFER,	/* a VkBuffer of the adopted VkDevice */
	GPO_EXTBUF_VK_FD,	/* an opaque fd of memory exported by another
				 * VkDevice (VK_KHR_external_memory_fd) */
};

/*
 * A buffer of the caller's. The optimizer's flat buffer lies at @offset
 * in it; the buffer must hold gpo_optim_buffer_bytes() bytes from there.
 * A VkBuffer needs STORAGE_BUFFER usage (and TRANSFER_SRC/DST for reads
 * and writes through gpuopt); @offset a multiple of 256 bytes. An fd goes
 * to gpuopt's own Vulkan device of the exporter's physical device (the
 * same uuid in gpo_device_info()), which enables VK_KHR_external_memory_fd
 * where the driver has it; an adopted device takes VkBuffers only.
 */
struct gpo_extbuf {
	enum gpo_extbuf_kind kind;
	void *handle;		/* cl_mem or VkBuffer; unused for an fd */
	int fd;			/* GPO_EXTBUF_VK_FD: gpuopt owns it on success */
	uint64_t size;		/* bytes of the buffer (or the fd's memory) */
	uint64_t offset;	/* bytes from its start to the flat buffer */
	enum gpo_dtype dtype;	/* of its elements: the slot's dtype */
	/*
	 * GPO_EXTBUF_VK_FD: the memoryTypeIndex the memory was allocated
	 * with (@size its allocationSize), which an import of an opaque fd
	 * must repeat
	 */
	uint32_t vk_memory_type;
};

/*
 * gpo_optim_buffer_bytes - the bytes of buffer @slot ("param", "grad" or a
 * state slot) at its dtype, padding included; 0 for a NULL @opt or an
 * unknown slot. Fixed once the tensors are added.
 */
uint64_t gpo_optim_buffer_bytes(struct gpo_optim *opt, const char *slot);

/*
 * gpo_optim_bind - use the caller's buffer as an optimizer's "param" or
 * "grad" buffer
 * @slot: "param" or "grad"
 * @buf:  the caller's buffer, of the optimizer's device (adopted from the
 *        same context, or the same VkDevice; for an fd, gpuopt's own
 *        Vulkan device of the same physical device)
 *
 * Only after every tensor is added and before the buffers are allocated
 * (the first read, write, step, save or restore). Tensor i lies at
 * gpo_optim_tensor_info()'s offset in elements of the buffer's dtype;
 * gpuopt zeroes the padding between groups once, at allocation, and never
 * writes the rest except as steps do (parameters) or as gpo_optim_write()
 * asks. From then on the step reads and writes the caller's memory in
 * place, ordered by the caller's queue. A cl_mem is retained while bound;
 * a VkBuffer must outlive the optimizer; an fd's memory is imported and
 * lives as long as the optimizer.
 *
 * Returns 0; -EINVAL for a NULL pointer, another slot, a dtype other than
 * the slot's (gpo_optim_set_dtype() first), a buffer too small for
 * offset + gpo_optim_buffer_bytes(), a misaligned offset, a handle of
 * another context or device, a kind the device's backend cannot take, a
 * cl_mem already released or not a read-write buffer the host can read
 * and write (no CL_MEM_READ_ONLY, WRITE_ONLY or HOST_* flags); -EBUSY
 * once the buffers are allocated or when @slot is already bound; -ENOSYS where the backend cannot import
 * (an fd without VK_KHR_external_memory_fd, or on an adopted device). On
 * failure nothing changes (an fd stays the caller's, open).
 */
int gpo_optim_bind(struct gpo_optim *opt, const char *slot,
		   const struct gpo_extbuf *buf);

/* ---- memory pools (one per device) --------------------------------------- */

struct gpo_pool_stats {
	uint64_t capacity_bytes;	/* allocated from the device */
	uint64_t used_bytes;		/* handed out */
	uint64_t cached_bytes;		/* capacity - used */
	uint64_t peak_bytes;		/* highest used_bytes */
	uint64_t limit_bytes;		/* UINT64_MAX: unlimited */
	uint64_t allocs;
	uint64_t frees;
	uint64_t failures;
};

/* gpo_pool_stats - read a device pool's statistics. Returns 0 or -EINVAL. */
int gpo_pool_stats(struct gpo_device *dev, struct gpo_pool_stats *st);

/*
 * gpo_pool_set_limit - cap the bytes the pool may take from the device
 * @limit: UINT64_MAX for no limit. A limit below the capacity in use
 *         first trims the cache; it fails with -EBUSY if used bytes
 *         already exceed it. Blocks that are partly in use cannot be
 *         trimmed, so capacity may stay above the limit until they are
 *         freed; no new block is taken meanwhile.
 */
int gpo_pool_set_limit(struct gpo_device *dev, uint64_t limit);

/* gpo_pool_trim - give every unused cached block back to the device. */
int gpo_pool_trim(struct gpo_device *dev);

/* ---- pinned host memory -------------------------------------------------- */

/*
 * gpo_host_alloc - host memory the device copies by DMA
 * @dev:   an opened device
 * @bytes: > 0
 * @out:   gets the memory, aligned to 64 bytes at least, its contents
 *         undefined
 *
 * Page-locked memory mapped for @dev (Vulkan: a host-visible, host-cached
 * allocation; OpenCL: a CL_MEM_ALLOC_HOST_PTR buffer, mapped; the cpu
 * backend: plain aligned memory). A transfer of @dev (gpo_optim_write(),
 * gpo_optim_read(), gpo_tensor_write(), gpo_tensor_read(), checkpoints)
 * whose host range lies wholly in such memory copies straight from or to
 * it; any other host range goes through the device's staging buffers.
 * Thread-safe. Returns 0; -EINVAL for a NULL argument or 0 bytes; -ENOMEM
 * when the memory cannot be had (more than the machine has, or the
 * driver's refusal), with gpo_errmsg() saying which.
 */
int gpo_host_alloc(struct gpo_device *dev, size_t bytes, void **out);

/*
 * gpo_host_free - give back memory from gpo_host_alloc() on @dev
 *
 * Waits for copies still queued from or to it. NULL @p does nothing.
 * Returns 0, or -EINVAL (and frees nothing) for a NULL @dev or a pointer
 * that is not the start of memory gpo_host_alloc() gave on @dev.
 * Memory not freed is freed with the context.
 */
int gpo_host_free(struct gpo_device *dev, void *p);

/* ---- optimizers ----------------------------------------------------------
 *
 * An optimizer holds one flat device buffer for the parameters, one for the
 * gradients and one per state slot. Tensors are named views into them.
 * Tensors of one parameter group are laid out together, groups in order of
 * creation and tensors in order of addition within a group; with one group,
 * the flat order is the order of gpo_optim_add_tensor() calls.
 *
 * Buffers are allocated on the first read, write or step; after that no
 * tensor can be added and no dtype changed. Each buffer holds elements of
 * its dtype (gpo_optim_set_dtype(), float32 by default), little-endian.
 */

enum gpo_optim_kind {
	GPO_SGD = 0,
	GPO_ADAM,
	GPO_ADAMW,
	GPO_RMSPROP,
	GPO_ADAGRAD,
	GPO_LAMB,
	GPO_LION,
	GPO_OPTIM_KINDS
};

/*
 * gpo_optim_kind_parse - the kind named @name ("sgd", "adam", "adamw",
 * "rmsprop", "adagrad", "lamb", "lion"), or -EINVAL.
 */
int gpo_optim_kind_parse(const char *name);
const char *gpo_optim_kind_name(enum gpo_optim_kind kind);

/*
 * gpo_optim_new - create an optimizer of @kind on @dev
 *
 * It starts with parameter group 0 holding torch's defaults for @kind.
 * Returns 0, -EINVAL, -ENOMEM.
 */
int gpo_optim_new(struct gpo_device *dev, enum gpo_optim_kind kind,
		  struct gpo_optim **out);

/* gpo_optim_free - free the optimizer and its device memory; NULL is ok. */
void gpo_optim_free(struct gpo_optim *opt);

/*
 * gpo_optim_add_group - add a parameter group
 *
 * The new group copies group 0's hyperparameters. Returns the new group's
 * index, -EBUSY once buffers are allocated.
 */
int gpo_optim_add_group(struct gpo_optim *opt);

/*
 * gpo_optim_add_tensor - add a named parameter tensor to @group
 * @name:  1..63 characters of [A-Za-z0-9_.:-], unique in the optimizer
 * @ndim:  1..8
 * @shape: @ndim sizes, each >= 1
 *
 * Returns the tensor's index; -EINVAL for a bad name, shape or group,
 * -EEXIST for a duplicate name, -EOVERFLOW when the flat buffers would hold
 * 2^32 elements or more, -EBUSY once buffers are allocated.
 */
int gpo_optim_add_tensor(struct gpo_optim *opt, const char *name, int ndim,
			 const uint64_t *shape, int group);

struct gpo_tensor_info {
	char name[64];
	int group;
	int ndim;
	uint64_t shape[8];
	uint64_t numel;
	uint64_t offset;		/* in elements, in the flat buffers */
	enum gpo_dtype dtype;		/* of the parameters ("param") */
};

/* gpo_optim_tensor_count - the number of tensors, or -EINVAL */
int gpo_optim_tensor_count(struct gpo_optim *opt);

/*
 * gpo_optim_numel - the total number of parameters
 * Cannot fail: returns 0 for NULL, as for an optimizer without tensors.
 * (So do gpo_optim_steps_done(), gpo_optim_steps_skipped() and
 * gpo_sched_last_epoch(), whose counts start at 0.)
 */
uint64_t gpo_optim_numel(struct gpo_optim *opt);

/*
 * gpo_optim_tensor_info - describe tensor @index
 * Returns 0, -EINVAL, -ENOENT for an index out of range.
 */
int gpo_optim_tensor_info(struct gpo_optim *opt, int index,
			  struct gpo_tensor_info *info);

/* gpo_optim_find_tensor - the index of tensor @name, or -ENOENT */
int gpo_optim_find_tensor(struct gpo_optim *opt, const char *name);

/*
 * Hyperparameters use torch's argument names:
 *   all:      lr weight_decay maximize
 *   sgd:      momentum dampening nesterov
 *   adam(w):  beta1 beta2 (or betas "b1,b2") eps amsgrad
 *   rmsprop:  alpha eps momentum centered
 *   adagrad:  lr_decay eps initial_accumulator_value
 *   lamb:     beta1 beta2 eps
 *   lion:     beta1 beta2
 * and, for the whole optimizer (any group):
 *   clip_norm     global 2-norm limit, 0 = no clipping (torch's
 *                 clip_grad_norm_ with max_norm, norm_type 2)
 *   grad_scale    gradients are divided by it before use (GradScaler's
 *                 unscale), 1 = none; any value != 1 also checks for
 *                 non-finite gradients
 *   check_finite  1: skip a step whose gradients hold inf or NaN
 * Booleans are 0 or 1.
 */

/*
 * gpo_optim_set - set hyperparameter @key of @group to @value
 * @group: a group index, or -1 for every group
 *
 * Takes effect from the next step. Returns 0; -EINVAL for an unknown key,
 * a key the optimizer does not have, a value out of range, or a
 * combination torch refuses (nesterov needs momentum > 0 and dampening 0);
 * -ENOENT for an unknown group. On failure nothing changes.
 */
int gpo_optim_set(struct gpo_optim *opt, int group, const char *key,
		  double value);

/*
 * gpo_optim_get - read hyperparameter @key of @group
 * @group: a group index, or -1 for the value every group holds (what
 *         gpo_optim_set() with -1 wrote; optimizer-wide keys always agree)
 *
 * Returns 0; -EINVAL for a NULL pointer, an unknown key, or group -1 when
 * the groups hold different values ("groups differ; name one"); -ENOENT
 * for an unknown group.
 */
int gpo_optim_get(struct gpo_optim *opt, int group, const char *key,
		  double *value);

/*
 * gpo_optim_configure - apply "key=value" settings, all or nothing
 * @text: settings separated by newlines, spaces or ';'; values are numbers,
 *        0/1/true/false for booleans, "b1,b2" for betas. Empty is fine.
 *
 * Every setting is parsed and the resulting configuration validated as a
 * whole before anything changes, so "momentum=0.9 nesterov=1" works in
 * one call. Returns 0 or -EINVAL (gpo_errmsg() names the bad setting).
 */
int gpo_optim_configure(struct gpo_optim *opt, int group, const char *text);

/*
 * gpo_optim_describe - write every hyperparameter of @group as "key=value\n"
 * lines into @buf (NUL-terminated)
 * @group: a group index, or -1 for the settings every group shares: the
 *         lines of group 0 that each other group has alike (all of them
 *         with one group; optimizer-wide keys always)
 *
 * Returns the length it needed (like snprintf), or -EINVAL/-ENOENT.
 */
int gpo_optim_describe(struct gpo_optim *opt, int group, char *buf,
		       size_t len);

/*
 * Slots name the flat buffers: "param", "grad", and the state slots of
 * torch's state dicts: "momentum_buffer" (sgd with momentum, rmsprop with
 * momentum), "exp_avg", "exp_avg_sq", "max_exp_avg_sq" (adam(w) with
 * amsgrad, and lamb's first two), "square_avg", "grad_avg" (rmsprop,
 * centered), "sum" (adagrad), "exp_avg" (lion).
 */

/*
 * gpo_optim_slot_count / gpo_optim_slot_name - the state slots this
 * optimizer keeps (not counting param and grad), by index.
 */
int gpo_optim_slot_count(struct gpo_optim *opt);
const char *gpo_optim_slot_name(struct gpo_optim *opt, int index);

/*
 * gpo_optim_set_dtype - choose the element type of a buffer
 * @buffer: "param", "grad", or a state slot this kind can keep (whether or
 *          not its configuration uses it now)
 * @dt:     the dtype
 *
 * Only before the buffers are allocated (the first read, write, step,
 * save or restore). The step kernels are float32, except that Adam,
 * AdamW, Lion, RMSprop and Adagrad also take their state slots in bf16
 * (every slot the step uses; read exactly, stored rounded to nearest
 * even, the same bytes on every device); otherwise
 * gpo_optim_step() and gpo_optim_objective() refuse with -ENOSYS while a
 * buffer they use is of another dtype; reads, writes, checkpoints and
 * gpo_optim_reset() work with every dtype. A slot other than f32 starts
 * as zero bytes; adagrad's sum in f16 or bf16 starts at
 * initial_accumulator_value rounded to that dtype, in u8, i32 or i64
 * only at 0 (else its allocation fails with
 * -ENOSYS). Returns 0; -EINVAL for a NULL pointer or an invalid @dt;
 * -ENOENT for a buffer the kind has not; -EBUSY once the buffers are
 * allocated. On failure nothing changes.
 */
int gpo_optim_set_dtype(struct gpo_optim *opt, const char *buffer,
			enum gpo_dtype dt);

/*
 * gpo_optim_set_state_dtype - every state slot @opt's kind can keep in
 * @dt: the state mode of its steps (f32, or bf16 for Adam, AdamW, Lion,
 * RMSprop and Adagrad, or u8 for them: blockwise 8-bit, bitsandbytes'
 * dynamic maps, an f32 absmax per block of 256, gpo_optim_read_absmax();
 * a step with amsgrad, or RMSprop's momentum or centered, in u8 is
 * -ENOSYS). Before the first use. Returns 0; -EINVAL for a
 * NULL pointer, an invalid @dt or one the kind's steps cannot keep state
 * in (SGD and LAMB: f32 only); -EBUSY
 * once the buffers are allocated. On failure nothing changes.
 */
int gpo_optim_set_state_dtype(struct gpo_optim *opt, enum gpo_dtype dt);

/*
 * gpo_optim_set_param_dtype - the parameters' precision mode
 * @dt:             GPO_F32 (the default), GPO_F16 or GPO_BF16; the
 *                  gradients ("grad") take the same dtype
 * @master_weights: with f16/bf16: 1 keeps an f32 master copy (the buffer
 *                  "master") that each step reads and writes, and stores
 *                  the half parameters as the new master rounded to
 *                  nearest even in the same pass; 0 (bf16 only) keeps no
 *                  master: the update is computed in f32 from the bf16
 *                  parameters and stored with stochastic rounding
 * @seed:           the key of stochastic rounding's bits: element i of
 *                  the flat buffers (gpo_optim_tensor_info()'s offset) at
 *                  step t rounds with bits that depend only on (seed, t,
 *                  i), so every device gives the same bytes
 *
 * SGD, Adam, AdamW, Lion, RMSprop and Adagrad; state dtypes are set
 * apart (gpo_optim_set_state_dtype()). Before the first use and before
 * gpo_optim_bind(). "param" then holds the half parameters; with a master
 * copy, gpo_optim_write() of "param" also sets "master" to their exact
 * value, and one of "master" also sets "param" to it rounded to nearest
 * even; gpo_optim_read() reads either; checkpoints keep both. The norm
 * pass (clip_norm, grad_scale, check_finite, loss_scale) reads the half
 * gradients, widened exactly, and sums them in one order on every
 * backend: the same bytes on every device. Returns 0; -EINVAL for a NULL pointer, a @dt other than those
 * three, @master_weights not 0 or 1, f16 without a master, or LAMB with
 * half parameters; -EBUSY after the first use or once a buffer is bound.
 * On failure nothing changes.
 */
int gpo_optim_set_param_dtype(struct gpo_optim *opt, enum gpo_dtype dt,
			      int master_weights, uint64_t seed);

/*
 * gpo_optim_dtype - the dtype of @buffer (names as gpo_optim_set_dtype()),
 * or -EINVAL for a NULL pointer, -ENOENT for a buffer the kind has not
 */
int gpo_optim_dtype(struct gpo_optim *opt, const char *buffer);

/*
 * gpo_optim_write - copy host data into a slot
 * @slot:   "param", "grad" or a state slot
 * @tensor: a tensor name, or NULL for the whole flat buffer
 * @src:    elements of the slot's dtype (gpo_optim_dtype())
 * @bytes:  exactly the tensor's (or the buffer's) element count times the
 *          dtype's size
 *
 * Returns 0; -EINVAL for a NULL pointer or wrong size; -ENOENT for an
 * unknown slot or tensor; -ENOMEM if buffers cannot be allocated; -EIO or
 * -ENODEV if the device fails.
 */
int gpo_optim_write(struct gpo_optim *opt, const char *slot,
		    const char *tensor, const void *src, size_t bytes);

/* gpo_optim_read - copy a slot to host memory; errors as gpo_optim_write */
int gpo_optim_read(struct gpo_optim *opt, const char *slot,
		   const char *tensor, void *dst, size_t bytes);

/*
 * gpo_optim_read_absmax - the f32 absmax of each block of 256 elements of
 * u8 state slot @slot (gpo_optim_read() gives its codes), blocks of group
 * 0 first, each group's from its first element (no block spans two
 * groups). @dst NULL: returns the number of blocks. Else @count must be
 * that number; returns 0. -EINVAL for a NULL pointer, a slot not in u8 or
 * a wrong @count; -ENOENT for a slot the kind has not or that is not in
 * use.
 */
int gpo_optim_read_absmax(struct gpo_optim *opt, const char *slot,
			  float *dst, size_t count);

struct gpo_step_info {
	uint64_t step;		/* steps applied so far, this one included */
	uint64_t skipped_total;	/* steps skipped for non-finite gradients */
	double lr;		/* lr of group 0 used by this step */
	double grad_norm;	/* global 2-norm of the (unscaled) gradients,
				 * NaN when no norm was computed */
	int skipped;		/* 1 if this step was skipped */
	uint64_t device_ns;	/* device time of the step's kernels, 0 when
				 * the device has no timestamps */
	double loss_scale;	/* the loss scale after this step (1 when
				 * off; NaN for a step not waited for) */
};

/*
 * gpo_optim_step - apply one optimizer step to every parameter
 * @info: filled with what the step did (may be NULL)
 *
 * Runs on the device: the optional unscale and non-finite check, the
 * optional global-norm clip, then the fused update of every tensor.
 * The gradients are read, never modified. If a schedule is attached, the
 * step uses the schedule's current lr, and the schedule advances after it.
 * Returns 0; -ENOSYS (nothing done) if param, grad or a slot the step
 * uses is not f32; -ENOMEM if buffers cannot be allocated; -EIO if a kernel
 * failed; -ENODEV if the device was lost. A step with non-finite gradients
 * (when checked) is skipped: it returns 0, sets info->skipped and leaves
 * parameters, state and the step count untouched.
 */
int gpo_optim_step(struct gpo_optim *opt, struct gpo_step_info *info);

/*
 * gpo_optim_step_async - queue one optimizer step and return without
 * waiting for it
 *
 * The step is submitted to the device, behind everything queued before
 * it, and runs while the caller goes on. Several queued steps give the
 * same bytes as the same synchronous steps: each uses the lr and the
 * step count the synchronous one would (schedule included). Calls that
 * touch the device are ordered after it: gpo_optim_write() (new
 * gradients) cannot change what a queued step reads, gpo_optim_read()
 * returns data with the step applied, checkpoints see it.
 * A step that may be skipped (check_finite, grad_scale) is decided on the
 * device; the host learns the outcome, and counts it, at the next step
 * or at gpo_optim_wait(), gpo_optim_steps_done() or a checkpoint, which
 * therefore wait for it. Errors of the kernels show at the wait.
 * Safe from several threads: calls on one device are serialised, each
 * step_async queues one whole step, and a wait waits for every step
 * queued before it returns.
 * Returns 0, or what gpo_optim_step() returns for a step it refuses
 * (nothing queued then); -EINVAL for NULL.
 */
int gpo_optim_step_async(struct gpo_optim *opt);

/*
 * gpo_optim_wait - wait for the steps gpo_optim_step_async() queued
 * @info: filled for the last step (may be NULL): step and skipped_total
 *        are the counts after it, lr, grad_norm and skipped are its own,
 *        device_ns the device time of everything waited for
 *
 * Returns at once when nothing is queued (@info then describes the last
 * step, with device_ns 0). Returns 0; -EINVAL for NULL @opt; -EIO or
 * -ENODEV if the device failed a queued step.
 */
int gpo_optim_wait(struct gpo_optim *opt, struct gpo_step_info *info);

/* gpo_optim_steps_done - the number of steps applied (0 for NULL) */
uint64_t gpo_optim_steps_done(struct gpo_optim *opt);

/* gpo_optim_steps_skipped - steps skipped for non-finite gradients (0 for
 * NULL) */
uint64_t gpo_optim_steps_skipped(struct gpo_optim *opt);

/*
 * gpo_optim_loss_scale - the loss scale now (loss_scale=dynamic: as the
 * steps so far moved it; fixed: that number; off: 1) and, when
 * @good_steps is not NULL, the good steps counted towards its next
 * growth. Waits for queued steps. Returns 0; -EINVAL for NULL @opt or
 * @scale; -ENOMEM, -EIO or -ENODEV from the device.
 */
int gpo_optim_loss_scale(struct gpo_optim *opt, double *scale,
			 uint64_t *good_steps);

/*
 * gpo_optim_set_step - set the applied-step count (for restoring state);
 * bias corrections use it. Returns 0; -EINVAL for NULL; -EOVERFLOW for
 * UINT64_MAX, which no step could follow (the next step is @step + 1).
 */
int gpo_optim_set_step(struct gpo_optim *opt, uint64_t step);

/*
 * gpo_optim_reset - zero every state slot (adagrad's sum goes back to
 * initial_accumulator_value), the step and the skipped counts. Parameters
 * stay. Returns 0 or a device error.
 */
int gpo_optim_reset(struct gpo_optim *opt);

/*
 * gpo_optim_objective - evaluate a built-in objective on the device
 * @name: "quadratic": sum_i 0.5 c_i (x_i - 1)^2 with c_i = 1 + (i mod 7);
 *        "rosenbrock": sum_i 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2
 *        where x is the whole flat parameter vector (i over all
 *        parameters in flat order). Minimum 0 at x = 1 for both.
 * @loss: receives the objective's value at the current parameters
 *
 * Writes the objective's gradient into the "grad" slot, so that a
 * following gpo_optim_step() descends it. Returns 0, -EINVAL for an
 * unknown name or an optimizer with several groups, -ENOSYS if param or
 * grad is not f32, or a device error.
 */
int gpo_optim_objective(struct gpo_optim *opt, const char *name,
			double *loss);

/* ---- learning-rate schedules ---------------------------------------------
 *
 * A schedule gives each group's lr from the step count and the group's
 * base (initial) lr, with torch.optim.lr_scheduler's formulas (torch
 * 1.13), computed in double in closed form: they match torch's recursive
 * forms to rounding. Kinds and keys (torch's names in lower case; a key
 * marked * has no default and must be set):
 *   constant        the base lr
 *   step            StepLR: step_size* gamma=0.1
 *   multistep       MultiStepLR: milestones* ("30,80": increasing, at
 *                   most 64) gamma=0.1
 *   exponential     ExponentialLR: gamma*
 *   cosine          CosineAnnealingLR: t_max* eta_min=0
 *   cosine_restarts CosineAnnealingWarmRestarts: t_0* t_mult=1 eta_min=0
 *   linear          LinearLR: start_factor=1/3 end_factor=1 total_iters=5
 *   polynomial      PolynomialLR: total_iters=5 power=1
 *   onecycle        OneCycleLR: max_lr* total_steps* pct_start=0.3
 *                   anneal_strategy=cos (cos or 0, linear or 1)
 *                   div_factor=25 final_div_factor=1e4 three_phase=0
 *   plateau         ReduceLROnPlateau: mode=min (min or 0, max or 1)
 *                   factor=0.1 patience=10 threshold=1e-4
 *                   threshold_mode=rel (rel or 0, abs or 1) cooldown=0
 *                   min_lr=0 eps=1e-8
 * and for every kind warmup_steps=0 and warmup_start_factor=0.001 (in
 * (0, 1]): for the first warmup_steps steps the lr ramps linearly from
 * warmup_start_factor * base to base, then the kind starts at its own
 * step 0; that is torch's SequentialLR([LinearLR(opt, warmup_start_factor,
 * 1.0, warmup_steps), kind], milestones=[warmup_steps]).
 *
 * Ranges: gamma, max_lr, div_factor, final_div_factor > 0; eta_min, power,
 * threshold, min_lr, eps >= 0; step_size, t_max, t_0, t_mult, total_iters,
 * total_steps >= 1; start_factor in (0, 1], end_factor in [0, 1],
 * pct_start in (0, 1), plateau's factor in [0, 1); step_size, t_max, t_0,
 * t_mult, total_iters, total_steps, patience, cooldown and warmup_steps
 * are whole numbers. onecycle refuses a pct_start that gives a phase no
 * length (torch would divide by zero).
 *
 * Where this differs from torch:
 * - onecycle ignores the base lr as torch does (every group runs from
 *   max_lr / div_factor), but does not cycle momentum or beta1: torch's
 *   cycle_momentum=False. At step total_steps torch extrapolates the
 *   last phase (a linear anneal goes below min_lr, even negative) and
 *   raises after it; here the lr holds the last phase's final value and
 *   gpo_sched_step() fails with -ERANGE.
 * - plateau's lrs are per group, as torch's: each group's lr is
 *   max(lr * factor, min_lr), applied only where that lowers it by more
 *   than eps. min_lr is one value for every group. SequentialLR cannot
 *   drive ReduceLROnPlateau, so plateau's warmup is the ramp, then
 *   ReduceLROnPlateau from the base lr; the warmup's metrics are ignored.
 */

/*
 * gpo_sched_new - create schedule @kind with torch's defaults
 * Returns 0, -EINVAL for a NULL pointer or an unknown kind, -ENOMEM.
 */
int gpo_sched_new(const char *kind, struct gpo_sched **out);

/* gpo_sched_free - free a schedule; NULL is ok */
void gpo_sched_free(struct gpo_sched *s);

/*
 * gpo_sched_configure - apply "key=value" settings, all or nothing, as
 * gpo_optim_configure. After the call every key marked * must have been
 * set (now or by an earlier call); until then the schedule is unusable.
 * Only before the first gpo_sched_step(). Returns 0; -EINVAL for a NULL
 * pointer, an unknown key, a key of another kind, a malformed value or
 * one out of range, a missing required key; -EBUSY once the schedule has
 * taken a step.
 */
int gpo_sched_configure(struct gpo_sched *s, const char *text);

/*
 * gpo_sched_lr - the lr for a group whose base (initial) lr is @base_lr
 * at the schedule's current step. NaN for a NULL or an unconfigured
 * schedule.
 */
double gpo_sched_lr(struct gpo_sched *s, double base_lr);

/*
 * gpo_sched_step - advance the schedule by one step
 * @metric: the value plateau watches after its warmup (others ignore it)
 * Returns 0; -EINVAL for a NULL or unconfigured schedule or a non-finite
 * metric for plateau; -ERANGE when onecycle has taken total_steps steps.
 * On failure the schedule does not move.
 */
int gpo_sched_step(struct gpo_sched *s, double metric);

/* gpo_sched_last_epoch - steps taken so far, warmup included (0 for NULL) */
uint64_t gpo_sched_last_epoch(struct gpo_sched *s);

/*
 * gpo_sched_save - write the schedule as one line of "key=value" words:
 * kind= first, then every setting of the kind, then its state (last_epoch;
 * t_cur t_i for cosine_restarts; best num_bad_epochs cooldown_counter
 * reductions for plateau). Doubles are written with %.17g, so they read
 * back exactly. Returns the length the line needs (as snprintf: @buf gets
 * at most @len - 1 characters and a NUL; @buf may be NULL when @len is 0),
 * or -EINVAL for a NULL pointer or an unconfigured schedule.
 *
 * gpo_sched_load - make @s the schedule of such a line, whatever its kind
 * was. kind= must come first, each key at most once, every piece of state
 * must be there (a setting left out takes its default), and the state
 * must agree with the settings. Returns 0, or -EINVAL and @s is unchanged.
 */
int gpo_sched_save(struct gpo_sched *s, char *buf, size_t len);
int gpo_sched_load(struct gpo_sched *s, const char *text);

/*
 * gpo_optim_attach_sched - let @s drive @opt's lr
 *
 * Each group's current lr becomes its base lr; each step uses
 * gpo_sched_lr(s, base) and then advances @s (with the metric of
 * gpo_optim_set_metric()). A skipped step does not advance @s. The
 * optimizer does not own @s; detach with NULL. Returns 0 or -EINVAL.
 */
int gpo_optim_attach_sched(struct gpo_optim *opt, struct gpo_sched *s);

/*
 * gpo_optim_set_metric - the loss value a plateau schedule sees at the
 * following steps. It starts as NaN, which plateau refuses: until a metric
 * is set, a plateau schedule stops at the end of its warmup.
 */
int gpo_optim_set_metric(struct gpo_optim *opt, double metric);

/* ---- checkpoints -----------------------------------------------------------
 *
 * A checkpoint is a safetensors file (readable by the safetensors package,
 * numpy and PyTorch): tensors "param/<name>" and "state/<name>/<slot>",
 * each in its buffer's dtype ("F32", "F16", "BF16", "U8", "I32", "I64"),
 * and in "__metadata__" the strings "format": "pt",
 * "gpuopt.version": "1", "gpuopt.optimizer" (the kind),
 * "gpuopt.groups" (JSON: each group's tensors and hyperparameters),
 * "gpuopt.step", "gpuopt.skipped", "gpuopt.schedule" (gpo_sched_save()'s
 * line, when a schedule is attached and can be saved) and "gpuopt.xxh64"
 * (JSON: the XXH64 of each tensor's bytes). Gradients are not saved.
 *
 * Errors of the reader, each for one kind of fault:
 *   -ENOENT    no such file; or a tensor the optimizer has is not in it
 *   -E2BIG     the header length is over 100 MiB
 *   -EBADMSG   the layout is corrupt: a header length beyond the file,
 *              data_offsets with a gap, an overlap or past the data, a
 *              shape whose size is not the byte span, a file longer or
 *              shorter than its tensors (truncated)
 *   -EPROTO    the header is not the format: not JSON, not an object,
 *              duplicate keys, an entry without dtype/shape/data_offsets
 *              or with other fields, an unknown dtype (and, without
 *              GPO_CKPT_FOREIGN, one gpuopt does not write: F64, BOOL,
 *              I8, ...), metadata that is not a string map, malformed
 *              gpuopt.* metadata
 *   -EOVERFLOW gpuopt.step is 2^64-1: no step could follow it
 *   -EPROTONOSUPPORT  a gpuopt.version this library does not know
 *   -ENODATA   gpuopt metadata or a tensor's checksum is missing (see
 *              GPO_CKPT_FOREIGN)
 *   -EBADE     a tensor's bytes do not match its checksum (ZFS's ECKSUM)
 *   -EINVAL    a well-formed file that does not fit the optimizer: another
 *              kind or number of groups, a tensor it lacks or in another
 *              group, another shape, a dtype other than the buffer's (no
 *              conversion is done; a safetensors dtype gpuopt has no
 *              gpo_dtype for, such as F64, never fits), a slot the kind
 *              does not have; and bad arguments
 * and the filesystem's own (-EACCES, -EISDIR, -EIO, -ENOSPC, -EDQUOT...).
 */

/* flags */
#define GPO_CKPT_BUFFERED	(1u << 0)	/* never use O_DIRECT */
#define GPO_CKPT_FOREIGN	(1u << 1)	/* read files of other writers */

/*
 * gpo_optim_save - write the optimizer's whole state to @path, durably
 * @opt:   the optimizer (its buffers are allocated if they were not)
 * @path:  the file; its directory must exist
 * @flags: 0 or GPO_CKPT_BUFFERED
 *
 * Parameters, every state slot in use, hyperparameters of every group,
 * step and skipped counts and the attached schedule's state. The data
 * comes down from the device in chunks while earlier chunks are written
 * through io_uring, with O_DIRECT where the filesystem allows it, into an
 * unnamed temporary file in @path's directory; then fsync, rename over
 * @path, fsync of the directory. A crash at any point leaves either the
 * old file or the new one, whole, at @path (at worst with a temporary
 * ".NAME.tmp.*" beside it, if it hits between link and rename on a
 * filesystem without O_TMPFILE). On any failure @path is untouched and
 * the temporary file removed.
 * Returns 0; -EINVAL for bad arguments or an optimizer without tensors;
 * -ENOSPC, -EDQUOT, -EIO, -EACCES, -ENOENT (no such directory) and the
 * like from the filesystem; -ENOMEM; a device error.
 */
int gpo_optim_save(struct gpo_optim *opt, const char *path,
		   unsigned int flags);

/*
 * gpo_optim_restore - load a checkpoint into @opt
 * @opt:   an optimizer with the same tensors (names, shapes, groups) as
 *         the one saved, and buffers of the same dtypes (set them with
 *         gpo_optim_set_dtype() before restoring); any device
 * @path:  a file written by gpo_optim_save() (or, with GPO_CKPT_FOREIGN,
 *         by any safetensors writer)
 * @flags: 0, GPO_CKPT_BUFFERED, GPO_CKPT_FOREIGN
 *
 * Validates the whole header (see the errors above) and matches it to
 * @opt before it reads any data; then reads the data through io_uring
 * into new device buffers, checking each tensor's checksum, and only when
 * everything checked out swaps them in and sets the hyperparameters,
 * step, skipped count and (if a schedule is attached and the file holds
 * one) the schedule state. On failure @opt is unchanged. Needs device
 * memory for a second copy of the restored buffers while it runs.
 * Slots in use that the file does not hold are dropped.
 *
 * GPO_CKPT_FOREIGN accepts files without gpuopt metadata and tensors
 * without checksums (loaded unverified); hyperparameters, step and
 * skipped count then stay as they are, and state slots the file lacks
 * start afresh (as after gpo_optim_reset()). Without it, both are errors.
 * Returns 0 or a reader error above; -ENOMEM; a device error.
 */
int gpo_optim_restore(struct gpo_optim *opt, const char *path,
		      unsigned int flags);

/* An opened checkpoint file, for inspection. */
struct gpo_ckpt;

struct gpo_ckpt_info {
	uint64_t file_bytes;
	uint64_t header_bytes;		/* the JSON header's length */
	uint64_t data_offset;		/* where the tensors start */
	int tensors;
	int metadata;			/* entries of __metadata__ */
	int gpuopt;			/* 1 if it holds gpuopt metadata */
};

struct gpo_ckpt_tensor {
	const char *name;		/* valid until gpo_ckpt_close() */
	const char *dtype;		/* "F32", "F16", "I64", ... */
	int ndim;
	const uint64_t *shape;
	uint64_t offset;		/* bytes from the start of the file */
	uint64_t bytes;
	uint64_t checksum;		/* XXH64, if has_checksum */
	int has_checksum;
	int verified;			/* after gpo_ckpt_verify(): 1 matches,
					 * -EBADE mismatch, 0 not checked */
};

/*
 * gpo_ckpt_open - open @path and validate its header
 * @flags: 0, GPO_CKPT_BUFFERED, GPO_CKPT_FOREIGN
 * Returns 0 with *@out set, or a reader error above.
 */
int gpo_ckpt_open(const char *path, unsigned int flags,
		  struct gpo_ckpt **out);

/* gpo_ckpt_close - close and free; NULL is ok */
void gpo_ckpt_close(struct gpo_ckpt *ck);

/* gpo_ckpt_info - sizes and counts of an opened checkpoint; 0 or -EINVAL */
int gpo_ckpt_info(struct gpo_ckpt *ck, struct gpo_ckpt_info *info);

/*
 * gpo_ckpt_tensor - describe tensor @index (in file order)
 * Returns 0, -EINVAL, -ENOENT for an index out of range.
 */
int gpo_ckpt_tensor(struct gpo_ckpt *ck, int index,
		    struct gpo_ckpt_tensor *info);

/*
 * gpo_ckpt_metadata - the @index-th "__metadata__" entry, in header order
 * Returns 0 with @key and @value set (valid until gpo_ckpt_close()),
 * -EINVAL, -ENOENT for an index out of range.
 */
int gpo_ckpt_metadata(struct gpo_ckpt *ck, int index, const char **key,
		      const char **value);

/*
 * gpo_ckpt_verify - read every tensor and check its checksum
 *
 * Reads through io_uring like gpo_optim_restore() and sets each tensor's
 * verified field. Returns 0 when every checksum matched; -EBADE when one
 * or more did not (gpo_errmsg() names the first and the count); -ENODATA
 * when a tensor has no checksum (unless opened with GPO_CKPT_FOREIGN);
 * -EBADMSG if the file shrank; -EIO.
 */
int gpo_ckpt_verify(struct gpo_ckpt *ck);

#ifdef __cplusplus
}
#endif

/* the sub-headers: one per part of the interface, all included from here */
#include <gpuopt/tensor.h>	/* tensors and autodiff */
#include <gpuopt/data.h>	/* datasets for training */
#include <gpuopt/train.h>	/* models and training */

#endif /* GPUOPT_H */
