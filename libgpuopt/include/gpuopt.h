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
 * that failed, or "" if none failed. The text stays valid until the next
 * libgpuopt call on this thread.
 */
const char *gpo_errmsg(void);

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
	unsigned int compute_units;
	uint64_t mem_total_bytes;
	uint64_t mem_used_bytes;	/* held by this context's pool */
	int enabled;			/* 0 after gpo_device_enable(.., 0) */
};

/*
 * gpo_device_type_name - "discrete", "integrated", "virtual", "cpu-impl",
 * "cpu" or "other".
 */
const char *gpo_device_type_name(enum gpo_device_type type);

/*
 * gpo_device_info - describe device @index of @ctx
 * Returns 0, -EINVAL for a NULL argument, -ENODEV for an index out of range.
 */
int gpo_device_info(struct gpo_ctx *ctx, int index,
		    struct gpo_device_info *info);

/*
 * gpo_device_get - the device at @index, opened for use
 * Returns 0, -EINVAL, -ENODEV for an index out of range or a disabled
 * device, or the backend's error if it fails to open.
 */
int gpo_device_get(struct gpo_ctx *ctx, int index, struct gpo_device **out);

/*
 * gpo_device_select - pick and open a device by name
 * @spec: "best", a backend name ("vulkan", "opencl", "cpu": its best
 *        device), or an id ("vulkan:0"); NULL or "" means the environment
 *        variable GPUOPT_DEVICE, and "best" when that is unset.
 *
 * "best" prefers a discrete GPU, then an integrated or virtual one, then an
 * OpenCL or Vulkan implementation on the CPU, then the cpu backend; within a
 * kind Vulkan before OpenCL. A device that fails to open is skipped by
 * "best" (and noted in the probe log) but is an error when named.
 * Returns 0, -EINVAL for a malformed @spec, -ENODEV when no device matches.
 */
int gpo_device_select(struct gpo_ctx *ctx, const char *spec,
		      struct gpo_device **out);

/*
 * gpo_device_enable - allow (1) or refuse (0) new use of a device
 * Existing optimizers go on. Returns 0, -EINVAL, -ENODEV.
 */
int gpo_device_enable(struct gpo_ctx *ctx, int index, int enabled);

/* gpo_device_index - the index of an opened device */
int gpo_device_index(const struct gpo_device *dev);

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
 *         already exceed it.
 */
int gpo_pool_set_limit(struct gpo_device *dev, uint64_t limit);

/* gpo_pool_trim - give every unused cached block back to the device. */
int gpo_pool_trim(struct gpo_device *dev);

/* ---- optimizers ----------------------------------------------------------
 *
 * An optimizer holds one flat device buffer for the parameters, one for the
 * gradients and one per state slot. Tensors are named views into them.
 * Tensors of one parameter group are laid out together, groups in order of
 * creation and tensors in order of addition within a group; with one group,
 * the flat order is the order of gpo_optim_add_tensor() calls.
 *
 * Buffers are allocated on the first read, write or step; after that no
 * tensor can be added. All data is float32, little-endian.
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
};

/* gpo_optim_tensor_count - the number of tensors, or -EINVAL */
int gpo_optim_tensor_count(struct gpo_optim *opt);

/* gpo_optim_numel - the total number of parameters (0 for NULL) */
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
 * gpo_optim_get - read hyperparameter @key of @group (-1 means group 0)
 * Returns 0, -EINVAL, -ENOENT.
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
 * lines into @buf (NUL-terminated). Returns the length it needed (like
 * snprintf), or -EINVAL/-ENOENT.
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
 * gpo_optim_write - copy host data into a slot
 * @slot:   "param", "grad" or a state slot
 * @tensor: a tensor name, or NULL for the whole flat buffer
 * @src:    float32 data
 * @bytes:  exactly 4 * the tensor's (or the buffer's) element count
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

struct gpo_step_info {
	uint64_t step;		/* steps applied so far, this one included */
	uint64_t skipped_total;	/* steps skipped for non-finite gradients */
	double lr;		/* lr of group 0 used by this step */
	double grad_norm;	/* global 2-norm of the (unscaled) gradients,
				 * NaN when no norm was computed */
	int skipped;		/* 1 if this step was skipped */
	uint64_t device_ns;	/* device time of the step's kernels, 0 when
				 * the device has no timestamps */
};

/*
 * gpo_optim_step - apply one optimizer step to every parameter
 * @info: filled with what the step did (may be NULL)
 *
 * Runs on the device: the optional unscale and non-finite check, the
 * optional global-norm clip, then the fused update of every tensor.
 * The gradients are read, never modified. If a schedule is attached, the
 * step uses the schedule's current lr, and the schedule advances after it.
 * Returns 0; -ENOMEM if buffers cannot be allocated; -EIO if a kernel
 * failed; -ENODEV if the device was lost. A step with non-finite gradients
 * (when checked) is skipped: it returns 0, sets info->skipped and leaves
 * parameters, state and the step count untouched.
 */
int gpo_optim_step(struct gpo_optim *opt, struct gpo_step_info *info);

/* gpo_optim_steps_done - the number of steps applied (0 for NULL) */
uint64_t gpo_optim_steps_done(struct gpo_optim *opt);

/*
 * gpo_optim_set_step - set the applied-step count (for restoring state);
 * bias corrections use it. Returns 0 or -EINVAL.
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
 * unknown name or an optimizer with several groups, or a device error.
 */
int gpo_optim_objective(struct gpo_optim *opt, const char *name,
			double *loss);

/* ---- learning-rate schedules ---------------------------------------------
 *
 * A schedule maps the step count to a multiplier of each group's base lr,
 * with torch.optim.lr_scheduler's formulas. Keys (torch's names):
 *   constant
 *   step          step_size gamma
 *   multistep     milestones "30,80" gamma
 *   exponential   gamma
 *   cosine        t_max eta_min
 *   cosine_restarts t_0 t_mult eta_min
 *   linear        start_factor end_factor total_iters
 *   polynomial    total_iters power
 *   onecycle      max_lr total_steps pct_start anneal_strategy (0 cos,
 *                 1 linear) div_factor final_div_factor three_phase
 *   plateau       mode (0 min, 1 max) factor patience threshold
 *                 threshold_mode (0 rel, 1 abs) cooldown min_lr eps
 * and for all: warmup_steps, warmup_start_factor: a linear warmup from
 * warmup_start_factor to 1 over warmup_steps steps, after which the
 * schedule starts at its own step 0.
 */

/*
 * gpo_sched_new - create schedule @kind with torch's defaults
 * Returns 0, -EINVAL for an unknown kind, -ENOMEM.
 */
int gpo_sched_new(const char *kind, struct gpo_sched **out);
void gpo_sched_free(struct gpo_sched *s);

/*
 * gpo_sched_configure - apply "key=value" settings, all or nothing, as
 * gpo_optim_configure. Only before the first gpo_sched_step(); later it
 * fails with -EBUSY. Returns 0, -EINVAL, -EBUSY.
 */
int gpo_sched_configure(struct gpo_sched *s, const char *text);

/*
 * gpo_sched_lr - the lr for a group whose base (initial) lr is @base_lr
 * at the schedule's current step
 */
double gpo_sched_lr(struct gpo_sched *s, double base_lr);

/*
 * gpo_sched_step - advance the schedule by one step
 * @metric: the value ReduceLROnPlateau watches (ignored by the others)
 * Returns 0, -EINVAL for a non-finite metric on plateau.
 */
int gpo_sched_step(struct gpo_sched *s, double metric);

/* gpo_sched_last_epoch - steps taken so far */
uint64_t gpo_sched_last_epoch(struct gpo_sched *s);

/*
 * gpo_sched_save - write the schedule's kind, settings and state as one
 * line of "key=value" words; returns the length needed (as snprintf).
 * gpo_sched_load - restore a schedule from such a line.
 * Returns 0 or -EINVAL (and nothing changes).
 */
int gpo_sched_save(struct gpo_sched *s, char *buf, size_t len);
int gpo_sched_load(struct gpo_sched *s, const char *text);

/*
 * gpo_optim_attach_sched - let @s drive @opt's lr
 *
 * Each group's current lr becomes its base lr; each step uses
 * gpo_sched_lr(s, base) and then advances @s (with the metric of
 * gpo_optim_set_metric()). The optimizer does not own @s; detach with
 * NULL. Returns 0 or -EINVAL.
 */
int gpo_optim_attach_sched(struct gpo_optim *opt, struct gpo_sched *s);

/* gpo_optim_set_metric - the loss value a plateau schedule sees next */
int gpo_optim_set_metric(struct gpo_optim *opt, double metric);

#ifdef __cplusplus
}
#endif

#endif /* GPUOPT_H */
