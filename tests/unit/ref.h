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
 *
 * Below them, what the optimizer precision tests (test_optim_precision,
 * test_optim_master, test_optim_u8) share: their layout of tensors and
 * groups, random inputs, half rounding, runs read back and compared with
 * cpu:0's bytes, and the 8-bit state's maps.
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

/* ---- what the optimizer precision tests share ---------------------------- */

/*
 * The layout of test_optim_precision, test_optim_master and test_optim_u8:
 * tensors "t<i>" of the given sizes, tensor i in group i % REF_NGROUPS,
 * group g at learning rate ref_group_lr[g]
 */
#define REF_NGROUPS	3
extern const double ref_group_lr[REF_NGROUPS];

/*
 * ref_grouped_optim - an optimizer of @kind on @dev in that layout,
 * configured by @conf (every group); dtypes stay f32
 */
struct gpo_optim *ref_grouped_optim(struct gpo_device *dev,
				    enum gpo_optim_kind kind, const char *conf,
				    const uint64_t *sizes, int ntensors);

/* ref_group_numel - the elements of group @g in that layout */
uint64_t ref_group_numel(const uint64_t *sizes, int ntensors, int g);

/* ref_round_half - @x rounded to nearest even in @dt (f16 or bf16) */
uint16_t ref_round_half(float x, enum gpo_dtype dt);

/* ref_widen - the half value @h of @dt, exactly */
float ref_widen(uint16_t h, enum gpo_dtype dt);

/* ref_fill_mixed - uniform in [-1, 1), every 7th from 0 times 100 */
void ref_fill_mixed(float *x, uint64_t n, uint64_t *s);

/*
 * ref_fill_half - uniform in [-1, 1) rounded to @dt, every 7th from 0
 * times 30 (before rounding)
 */
void ref_fill_half(uint16_t *h, uint64_t n, uint64_t *s, enum gpo_dtype dt);

/*
 * ref_random_params - fresh parameters from *@s in @opt's param dtype:
 * uniform in [-1, 1) for f32, ref_fill_half() for f16 and bf16
 */
void ref_random_params(struct gpo_optim *opt, uint64_t *s);

/*
 * ref_steps - @steps steps, each with fresh gradients from *@s in @opt's
 * grad dtype: ref_fill_mixed() for f32, ref_fill_half() for f16 and bf16
 */
void ref_steps(struct gpo_optim *opt, uint64_t *s, int steps);

/* ---- named buffers read back, compared byte for byte --------------------- */

#define REF_MAX_BUFS	12

/* what one device's run ends with: named buffers, as bytes */
struct ref_bufs {
	int n;
	char name[REF_MAX_BUFS][64];
	int dtype[REF_MAX_BUFS];	/* an absmax array: GPO_F32 */
	void *buf[REF_MAX_BUFS];
	size_t bytes[REF_MAX_BUFS];
};

/* ref_bufs_read - buffer @name of @opt (read into poison) as the next */
void ref_bufs_read(struct gpo_optim *opt, const char *name,
		   struct ref_bufs *b);

/* ref_bufs_read_absmax - the absmax blocks of u8 @slot, "<slot>.absmax" */
void ref_bufs_read_absmax(struct gpo_optim *opt, const char *slot,
			  struct ref_bufs *b);

/*
 * ref_bufs_read_all - into an empty @b: param, master (if @opt keeps
 * one) and every slot in use (a u8 one followed by its absmax blocks;
 * amsgrad's u8 max_exp_avg_sq, never in use, left out)
 */
void ref_bufs_read_all(struct gpo_optim *opt, struct ref_bufs *b);

void ref_bufs_free(struct ref_bufs *b);

/* ref_first_diff - the first of @n elements of @esize bytes that differ; -1 */
long ref_first_diff(const void *a, const void *b, size_t n, size_t esize);

/*
 * ref_bufs_same - assert that @got holds @want's buffers, byte for byte;
 * a failure names @what, the buffer, @dev_id and the first element that
 * differs
 */
void ref_bufs_same(const char *what, const char *dev_id,
		   const struct ref_bufs *want, const struct ref_bufs *got);

/*
 * A test's mode: how it builds its optimizer on a device (@make, from
 * @arg), reads the result back (@read; NULL: ref_bufs_read_all()) and
 * the seed of its inputs
 */
struct ref_mode {
	struct gpo_optim *(*make)(struct gpo_device *dev, const void *arg);
	void (*read)(struct gpo_optim *opt, const void *arg,
		     struct ref_bufs *out);
	const void *arg;
	uint64_t seed;
};

/*
 * ref_mode_run - @m's optimizer on @dev: ref_random_params(), then
 * @steps ref_steps() from the seed, read back into @out
 */
void ref_mode_run(const struct ref_mode *m, struct gpo_device *dev, int steps,
		  struct ref_bufs *out);

/*
 * ref_same_as_cpu - ref_mode_run() on cpu:0 into @cpu_out, then on every
 * other test device, each asserted to give cpu:0's bytes; prints how many
 * devices were compared. The caller frees @cpu_out.
 */
void ref_same_as_cpu(const char *what, const struct ref_mode *m, int steps,
		     struct ref_bufs *cpu_out);

/*
 * ref_ckpt_across - on cpu:0, @m's optimizer 10 steps on, saved to @path,
 * 5 more steps read into @cpu_out; then on every test device (cpu:0 too)
 * a fresh one restored from @path, the same 5 steps there, asserted to
 * give those bytes. The caller frees @cpu_out and removes @path.
 */
void ref_ckpt_across(const char *what, const struct ref_mode *m,
		     const char *path, struct ref_bufs *cpu_out);

/* ---- the 8-bit state (bitsandbytes' dynamic maps, blocks of 256) --------- */

#define REF_QBLOCK	256

/* ref_u8_nslots - how many u8 slots @kind's step keeps */
int ref_u8_nslots(enum gpo_optim_kind kind);

/* ref_u8_slot - the name of @kind's u8 slot @k */
const char *ref_u8_slot(enum gpo_optim_kind kind, int k);

/* ref_u8_signed - does slot @k use the signed map? (exp_avg_sq: unsigned) */
int ref_u8_signed(enum gpo_optim_kind kind, int k);

/*
 * ref_dequant - map @sg's value of @code times @absmax, exactly (rounded
 * to float, it is the kernels' f32 product)
 */
double ref_dequant(uint8_t code, float absmax, int sg);

/*
 * ref_quant - the code of the map value nearest to x * (1 / absmax): the
 * reciprocal and the product each rounded to float, then a linear search
 * in double, ties to the lower code; absmax 0 or a NaN product: the code
 * of 0.0
 */
uint8_t ref_quant(float x, float absmax, int sg);

/*
 * ref_code_fits - is @code the map value nearest x / absmax, within
 * @tol? (x / absmax lies between the midpoints to its neighbours)
 */
int ref_code_fits(double x, double absmax, int sg, uint8_t code, double tol);

#endif /* GPUOPT_TEST_REF_H */
