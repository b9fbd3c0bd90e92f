/* SPDX-License-Identifier: MIT */
/*
 * optim_i.h - the optimizer object, for the library files that work on
 * its buffers directly (optim.c, checkpoints)
 */
#ifndef GPUOPT_OPTIM_I_H
#define GPUOPT_OPTIM_I_H

#include "core/gpuopt_i.h"

#define GROUP_ALIGN	64		/* elements: 256 bytes */
#define MAX_DIMS	8
#define NAME_MAX_LEN	63

struct optim_group {
	struct hparams hp;
	uint64_t start;			/* first element, GROUP_ALIGN aligned */
	uint64_t numel;
	uint32_t first_block;		/* LAMB */
	uint32_t nblocks;
	int momentum_started;		/* sgd: buffer holds a value */
};

struct optim_tensor {
	char name[NAME_MAX_LEN + 1];
	int group;
	int ndim;
	uint64_t shape[MAX_DIMS];
	uint64_t numel;
	uint64_t offset;
};

/* The state slots each kind may keep, in torch's state-dict names. */
enum slot_id {
	SL_MOMENTUM, SL_EXP_AVG, SL_EXP_AVG_SQ, SL_MAX_EXP_AVG_SQ,
	SL_SQUARE_AVG, SL_GRAD_AVG, SL_SUM, SL_COUNT
};

struct gpo_optim {
	struct gpo_device *dev;
	enum gpo_optim_kind kind;
	const struct optim_family *fam;	/* its slots, keys and launch */
	struct optim_group *groups;
	int ngroups;
	struct optim_tensor *tensors;
	int ntensors;
	int tcap;			/* tensors allocated */
	/* names -> tensor + 1 (0: empty), open addressing, 2x the tensors */
	uint32_t *name_idx;
	uint32_t name_cap;
	uint64_t numel;			/* parameters, padding excluded */
	uint64_t total;			/* elements in each flat buffer */
	int allocated;

	struct dev_buf param;
	struct dev_buf grad;
	/* the caller's buffers bound as param [0] and grad [1] (gpo_optim_bind) */
	struct dev_mem *ext[2];
	uint64_t ext_off[2];
	struct dev_buf slot[SL_COUNT];	/* allocated when first needed */
	/*
	 * u8 state: each u8 slot's f32 absmax per block of GPO_QBLOCK; blocks
	 * never span groups (group g's are [optim_u8_first(g), + its
	 * div_up(numel, 256)), element 256 k of the group starts block k)
	 */
	struct dev_buf absmax[SL_COUNT];
	/* element types, fixed at allocation (0 = GPO_F32) */
	enum gpo_dtype param_dtype, grad_dtype, slot_dtype[SL_COUNT];
	/*
	 * Half-precision parameters (gpo_optim_set_param_dtype()): @master,
	 * the f32 master copy when param_dtype is f16/bf16 and @master_on;
	 * bf16 without it rounds stochastically, keyed by @sr_seed.
	 * @master_dtype is always f32 (what gpo_optim_dtype("master") says).
	 */
	struct dev_buf master;
	int master_on;
	uint64_t sr_seed;
	enum gpo_dtype master_dtype;
	struct dev_buf scal;		/* GPO_SCAL_SIZE floats: abi/abi.h */
	/* the loss scale's device state must be (re)written before use */
	int ls_reset;
	/* as gpo__optim_loss_state() last read it (a save's metadata) */
	double ls_saved;
	uint64_t ls_saved_good;
	struct dev_buf partials;	/* 2 floats per norm group */
	uint32_t norm_groups, norm_chunk;

	/* LAMB */
	struct dev_buf blocks, tensor_blocks, lamb_partials, trust;
	uint32_t nblocks;

	uint64_t step;
	uint64_t skipped;
	struct gpo_sched *sched;
	double metric;

	/*
	 * Asynchronous steps (gpo_optim_step_async()), under dev->lock:
	 * @queued steps were submitted since the last wait; @unsettled: the
	 * last one may have been skipped (a finite check), so the counters,
	 * the schedule and momentum_started wait for its scalars, to be
	 * applied with @unsettled_metric; @last_norm: it ran the norm pass;
	 * @last: what the last step did, as far as the host knows.
	 */
	int queued;
	int unsettled;
	/*
	 * the step's launches recorded once and replayed (backends with
	 * graph_begin); @scal_host: the last replayed step's scalars, read
	 * back in its submission, valid after a wait, NULL: read scal
	 */
	struct dev_graph *graph;
	const void *scal_host;
	int last_norm;
	double unsettled_metric;
	struct gpo_step_info last;
	/*
	 * ZeRO-1 (gpo__optim_state_elsewhere()): 1: no slots here, 2: slots
	 * filled for a save; the ranks own the state either way
	 */
	int state_elsewhere;
};

/*
 * u8 state (optim.c): the absmax blocks of every group, and the first of
 * group @g's
 */
uint64_t gpo__optim_u8_blocks(const struct gpo_optim *opt);
/*
 * the most workgroups a u8 update launches (4096: enough to fill a GPU,
 * each loading the maps once); results never depend on it, which tests
 * check by making it small
 */
extern unsigned int gpo__optim_u8_groups;
uint64_t gpo__optim_u8_first(const struct gpo_optim *opt, int g);

/* torch's state-dict names of the slots, indexed by enum slot_id */
extern const char *const gpo__optim_slot_names[SL_COUNT];

/*
 * gpo__optim_ensure_allocated - allocate and initialise every buffer the
 * configuration needs (on first use: all of them; later: slots that became
 * needed). Called with opt->dev->lock held. Returns 0 or -errno.
 */
int gpo__optim_ensure_allocated(struct gpo_optim *opt);

/* gpo__optim_slot_possible - can an optimizer of @kind ever keep slot @s? */
int gpo__optim_slot_possible(enum gpo_optim_kind kind, int s);

/* gpo__optim_slot_needed - does a group configured as @hp use slot @s? */
int gpo__optim_slot_needed(enum gpo_optim_kind kind, const struct hparams *hp,
		      int s);

/*
 * gpo__optim_loss_state - the loss scale and its good-step counter as
 * the device holds them now (waits for queued steps); _set_ writes them
 * (a restore: the next step goes on from there). Device lock held.
 */
int gpo__optim_loss_state(struct gpo_optim *opt, double *scale,
			  uint64_t *good);
int gpo__optim_set_loss_state(struct gpo_optim *opt, double scale,
			      uint64_t good);

/*
 * gpo__optim_wants_master - does @opt's configuration keep an f32 master
 * copy: f16/bf16 parameters with gradients of that dtype (the mode of
 * gpo_optim_set_param_dtype()) and master_weights=1?
 */
static inline int gpo__optim_wants_master(const struct gpo_optim *opt)
{
	return (opt->param_dtype == GPO_F16 || opt->param_dtype == GPO_BF16) &&
	       opt->grad_dtype == opt->param_dtype && opt->ngroups &&
	       opt->groups[0].hp.master_weights;
}

/*
 * gpo__optim_param_call - point @call (an update op of @grp at step @t,
 * its parameter struct @args filled) at the master copy and the half
 * parameters, with the mode's flags and fields (abi.h GPO_PARAM_FIELDS);
 * nothing for f32 parameters
 */
void gpo__optim_param_call(const struct gpo_optim *opt,
			   const struct optim_group *grp, uint64_t t,
			   struct op_call *call, void *args);

/* gpo__optim_drop_tensors - back to no tensors and no buffers (a failed model) */
void gpo__optim_drop_tensors(struct gpo_optim *opt);

/*
 * gpo__optim_step - gpo_optim_step(), which is this with @sync 1. With
 * @sync 0 a step that needs no norm pass (no clipping, no loss scale, no
 * finite check: it cannot be skipped) is only queued, behind the launches
 * before it, and info->device_ns is 0; one with the norm pass still reads
 * its scalars (whether it was skipped) and so waits. With @sync
 * GPO__STEP_ASYNC: gpo_optim_step_async() (@info unused).
 */
#define GPO__STEP_ASYNC	2
int gpo__optim_step(struct gpo_optim *opt, struct gpo_step_info *info,
		    int sync);

/*
 * A step in three parts, for a caller that puts its launches among its
 * own (the tensor engine's recorded training step), all under dev->lock:
 * prepare (may read and wait: before any recording starts), launch (only
 * launches), and finish once the step ran and, where @ps->use_norm, its
 * GPO_SCAL_SIZE scalars (opt->scal) were read back. gpo__optim_step() is
 * the three in a row.
 */
struct optim_pending {
	int use_norm;		/* the norm pass runs: read opt->scal */
	double lr;
};

int gpo__optim_check(struct gpo_optim *opt);
int gpo__optim_prepare_locked(struct gpo_optim *opt,
			      struct optim_pending *ps);
int gpo__optim_launch_locked(struct gpo_optim *opt,
			     const struct optim_pending *ps);
void gpo__optim_finish_locked(struct gpo_optim *opt,
			      const struct optim_pending *ps,
			      const float *scal, uint64_t ns,
			      struct gpo_step_info *info);

/*
 * gpo__optim_settle - bring the step counters up to date with an
 * asynchronous step that may have been skipped: reads its scalars, so it
 * waits for it. Device lock held. Returns 0 or -errno.
 */
int gpo__optim_settle(struct gpo_optim *opt);

/*
 * gpo__optim_state_elsewhere - @elsewhere 1: free the state slots and
 * allocate none until called with 0, which allocates the configuration's
 * slots again with their initial contents, for a save (ZeRO-1 in comm/,
 * whose shard optimizers keep the state: a save is refused while the
 * slots are gone, a restore always). Takes the device lock. Returns 0 or
 * -errno.
 */
int gpo__optim_state_elsewhere(struct gpo_optim *opt, int elsewhere);

#endif /* GPUOPT_OPTIM_I_H */
