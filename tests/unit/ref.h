/* SPDX-License-Identifier: MIT */
/*
 * ref.h - a float64 reference of every optimizer, and the harness that runs
 * a libgpuopt optimizer beside it.
 *
 * The reference is written from torch 1.13's published formulas (the
 * single-tensor paths of torch/optim/{sgd,adam,adamw,rmsprop,adagrad}.py,
 * torch.nn.utils.clip_grad_norm_ and GradScaler's unscale) and, for LAMB
 * and Lion, which torch 1.13 lacks, from the formulas in gpuopt.h and
 * README.md. It shares no code with the library: it takes the same float32
 * inputs and computes in double.
 */
#ifndef GPUOPT_TEST_REF_H
#define GPUOPT_TEST_REF_H

#include <stddef.h>
#include <stdint.h>
#include <gpuopt.h>

#define REF_MAX_GROUPS	8
#define REF_MAX_TENSORS	32

/* torch's state-dict names */
enum ref_slot {
	REF_MOMENTUM_BUFFER,
	REF_EXP_AVG,
	REF_EXP_AVG_SQ,
	REF_MAX_EXP_AVG_SQ,
	REF_SQUARE_AVG,
	REF_GRAD_AVG,
	REF_SUM,
	REF_NSLOTS
};

struct ref_hparams {
	double lr;
	double weight_decay;
	double momentum;
	double dampening;
	double beta1;
	double beta2;
	double eps;
	double alpha;
	double lr_decay;
	double initial_accumulator_value;
	int nesterov;
	int amsgrad;
	int maximize;
	int centered;
};

struct ref_tensor {
	size_t n;
	int group;
	double *p;
	/* NULL while torch's state dict has no such entry */
	double *slot[REF_NSLOTS];
	/*
	 * The magnitude companions of p and of each slot: the same recurrence
	 * over the absolute values of every term (see ref.c), the scale that
	 * float32 rounding errors are relative to where terms cancel.
	 */
	double *pmag;
	double *mag[REF_NSLOTS];
	/*
	 * Lion: elements whose update direction sign(c) was decided by a c
	 * within float32 rounding of 0; their parameter may rightly differ
	 * by 2 lr from a float32 implementation's.
	 */
	unsigned char *unsure;
	size_t nunsure;
	double gmax;			/* largest |g| seen */
};

struct ref_optim {
	enum gpo_optim_kind kind;
	int ngroups;
	struct ref_hparams hp[REF_MAX_GROUPS];
	int ntensors;
	struct ref_tensor t[REF_MAX_TENSORS];
	/* optimizer-wide */
	double clip_norm;
	double grad_scale;
	int check_finite;
	uint64_t step;
	uint64_t skipped;
	double last_norm;	/* 2-norm of the unscaled gradients */
};

/* ref_init - an optimizer of @kind with torch's defaults in group 0 */
void ref_init(struct ref_optim *r, enum gpo_optim_kind kind);
void ref_free(struct ref_optim *r);

/* ref_add_group - a group with group 0's hyperparameters; its index */
int ref_add_group(struct ref_optim *r);

/* ref_add_tensor - a tensor of @n elements in @group; its index */
int ref_add_tensor(struct ref_optim *r, size_t n, int group);

/*
 * ref_configure - "key=value" words (gpuopt's key names) for @group, or
 * every group with -1. Returns 0, or -1 for a key or value it does not know.
 */
int ref_configure(struct ref_optim *r, int group, const char *text);

/* ref_get - the value of per-group @key in @group; 0, or -1 if unknown */
int ref_get(const struct ref_optim *r, int group, const char *key,
	    double *v);

/* ref_set_params - tensor @t's parameters from float32 */
void ref_set_params(struct ref_optim *r, int t, const float *src);

/*
 * ref_set_slot - tensor @t's state slot @name from float32 (creating the
 * slot, as restoring a state dict would)
 */
void ref_set_slot(struct ref_optim *r, int t, const char *name,
		  const float *src);

/*
 * ref_step - one step with the float32 gradients @grads (one array per
 * tensor, in tensor order). Returns 1 if the step was skipped for
 * non-finite gradients, else 0.
 */
int ref_step(struct ref_optim *r, const float *const *grads);

/* ref_reset - drop every state, as a new torch optimizer; params stay */
void ref_reset(struct ref_optim *r);

/*
 * ref_data - tensor @t's "param" or state slot @name, NULL when the
 * reference holds no such state
 */
const double *ref_data(const struct ref_optim *r, int t, const char *name);

/* ref_mag - the magnitude companion of ref_data(@r, @t, @name) */
const double *ref_mag(const struct ref_optim *r, int t, const char *name);

const char *ref_slot_name(enum ref_slot s);

/* ---- the harness: a library optimizer beside the reference --------------- */

/*
 * One run: a libgpuopt optimizer on @dev and the reference, configured
 * alike, fed the same parameters and gradients.
 */
struct ref_run {
	struct gpo_device *dev;
	const char *dev_id;
	struct gpo_optim *opt;
	struct ref_optim ref;
	char names[REF_MAX_TENSORS][16];
	float *grads[REF_MAX_TENSORS];
	uint64_t *rng;
	double worst;		/* largest error rr_check saw */
	char worst_what[96];
};

void rr_init(struct ref_run *rr, struct gpo_device *dev,
	     enum gpo_optim_kind kind, uint64_t *rng);
void rr_free(struct ref_run *rr);

/* rr_add_group - a group in both; asserts the indices agree */
int rr_add_group(struct ref_run *rr);

/* rr_add_tensor - tensor "t<index>" of @shape in @group, in both */
int rr_add_tensor(struct ref_run *rr, int ndim, const uint64_t *shape,
		  int group);

/* rr_configure - apply @text to @group of both; asserts success */
void rr_configure(struct ref_run *rr, int group, const char *text);

/*
 * rr_random_params - fresh random parameters in [lo, hi) (away from 0
 * unless lo < 0 < hi), written to both
 */
void rr_random_params(struct ref_run *rr, double lo, double hi);

/* rr_write_params - tensor @t's parameters, to both */
void rr_write_params(struct ref_run *rr, int t, const float *x);

/* rr_random_grads - fresh gradients in [lo, hi) for the next step */
void rr_random_grads(struct ref_run *rr, double lo, double hi);

/*
 * rr_step - write rr->grads to the library (per tensor), step both, and
 * assert that skipped, step and skipped_total agree. @info may be NULL.
 */
void rr_step(struct ref_run *rr, struct gpo_step_info *info);

/*
 * rr_check - read "param" and every state slot of every tensor from the
 * library into poisoned buffers and compare with the reference; assert
 * that the library keeps exactly the slots torch's state dict would hold
 * and that the error is below REF_TOL. Returns the worst error.
 */
double rr_check(struct ref_run *rr);

/* the bound of the issue: max relative error < 1e-5 */
#define REF_TOL 1e-5

/*
 * ref_compare - max over i of |got - want| / max(|want|, REF_FLOOR * mag)
 * (see ref.c for why), skipping elements flagged in @skip (may be NULL);
 * NaN where the other has none gives INFINITY
 */
double ref_compare(const float *got, const double *want, const double *mag,
		   size_t n, const unsigned char *skip);

/*
 * ref_check_config - the standard test of one option set: on every device,
 * a run of @steps steps for each odd size alone (tu_odd_sizes) and one with
 * several tensors of different sizes and shapes, fresh random params and
 * gradients, every slot compared after the last step. @tag seeds the
 * inputs. Prints the worst error to stderr.
 */
void ref_check_config(const char *tag, enum gpo_optim_kind kind,
		      const char *config, int steps);

/*
 * ref_check_huge - one tensor of 2^24 + 3 elements, @steps steps, on every
 * device; left out under GPUOPT_TEST_QUICK
 */
void ref_check_huge(const char *tag, enum gpo_optim_kind kind,
		    const char *config, int steps);

#endif /* GPUOPT_TEST_REF_H */
