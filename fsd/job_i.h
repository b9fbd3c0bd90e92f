/* SPDX-License-Identifier: MIT */
/*
 * job_i.h - the job runner's interface
 *
 * The tree asks a job for everything through these calls and never sees
 * its optimizer: that lives in the job's worker process (fsd/worker/,
 * speaking fsd/worker/proto.h), and job.c turns these calls into its
 * messages. Every call returns 0 or a negative errno with fs_err() set;
 * none blocks longer than one step (or a worker's watchdog time), except
 * "step N", which returns when its steps are done or its writer is
 * interrupted.
 */
#ifndef JOB_I_H
#define JOB_I_H

#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include "fs_i.h"

#define JOB_NAME_MAX 63
#define JOB_LOG_MAX (16u << 20)	/* bytes of events or history kept */

enum job_state {
	JOB_CREATED = 0,
	JOB_RUNNING,
	JOB_PAUSED,
	JOB_STOPPED,
	JOB_DONE,
	JOB_FAILED,
	JOB_STATES
};

const char *job_state_name(enum job_state s);

/* ---- config.c ------------------------------------------------------------ */

enum model_kind {
	MODEL_NONE = 0,
	MODEL_EXTERNAL,
	MODEL_QUADRATIC,
	MODEL_ROSENBROCK,
	MODEL_MLP,			/* the tensor engine, on a dataset */
	MODEL_GPT,			/* a byte-level GPT, on a file's bytes */
};

struct model_tensor {
	char name[64];
	int ndim;
	uint64_t shape[8];
	uint64_t numel;
};

struct model {
	enum model_kind kind;
	int ntensors;
	struct model_tensor *t;
	uint64_t numel;
	char *spec;			/* canonical text, "none" for none */
	uint64_t gpt[4];		/* gpt: layers, heads, dim, ctx */
};

struct kv {
	char key[32];
	char value[128];
};

struct kvlist {
	struct kv *v;
	int n;
};

#define MAX_STEPS_UNLIMITED UINT64_MAX
#define MAX_STEPS_DEFAULT 1000		/* model=external: unlimited */
#define TRAIN_DATA_MAX 4096

/* how a model that learns from data trains (model=mlp:..., gpt:...) */
struct train_config {
	char activation[16];		/* mlp */
	char loss[8];			/* mlp */
	char data[TRAIN_DATA_MAX];	/* "": none given */
	uint64_t batch_size;
	uint64_t epochs;		/* 0: max_steps alone */
	uint64_t eval_every;		/* steps; 0: once an epoch */
	int shuffle;
	int matmul_f16;			/* matmul=f16: binary16 products */
	double dropout;			/* gpt: 0 <= p < 1 */
};

/* device=: 64 ranks of "opencl:10," fit */
#define DEVICE_SPEC_MAX	768

struct job_config {
	int optimizer;			/* enum gpo_optim_kind */
	struct kvlist hp;		/* optimizer settings given */
	char schedule[32];		/* "constant": no schedule */
	struct kvlist sched;		/* schedule settings given */
	char device[DEVICE_SPEC_MAX];	/* an id or backend, or one per rank */
	struct model model;
	uint64_t max_steps;
	uint64_t log_every;
	uint64_t checkpoint_every;
	uint64_t keep_checkpoints;
	uint64_t seed;
	uint64_t restart_on_failure;	/* worker restarts left to a job */
	uint64_t memory_limit_bytes;	/* the worker's address space, 0: max */
	uint64_t autostart;		/* a daemon restart resumes the job */
	int max_steps_given;		/* written, not the default */
	int param_dtype;		/* enum gpo_dtype: param and grad */
	int state_dtype;		/* every state slot */
	struct train_config train;
	double temperature;		/* gpt: samples' (0: greedy) */
	/* data parallel (ranks > 1 or shards > 1: a worker under mpiexec) */
	uint64_t ranks;			/* 1: one process */
	uint64_t shards;		/* 0: as many as ranks */
	char hosts[128];		/* mpirun --host, "": this machine */
	/* libgpuopt-mpi's settings (gpo_comm_new()) */
	int deterministic;		/* 1: the shards summed in a fixed order */
	int zero;			/* 1: ZeRO-1, optimizer state sharded */
	int overlap;			/* 1: buckets reduced during backward */
	uint64_t bucket_bytes;
	uint64_t comm_timeout;		/* seconds; 0: job_comm_timeout_max() */
};

/* what a config write changed */
#define CFG_OPTIMIZER	0x01
#define CFG_HP		0x02
#define CFG_SCHED	0x04
#define CFG_DEVICE	0x08
#define CFG_MODEL	0x10
#define CFG_RUN		0x20	/* max_steps, log_every, ... */
#define CFG_RANKS	0x40	/* ranks, shards, hosts, the comm's settings:
				 * a new worker */

#define RANKS_MAX	64	/* ranks= at most (and the CPUs without hosts=) */
/* every rank's device id ("vulkan:0", fewer than 32 bytes), by commas */
#define RANK_DEVS_MAX	(RANKS_MAX * 32)

void config_init(struct fsd *fs, struct job_config *cfg);
void config_free(struct job_config *cfg);
int config_copy(struct job_config *dst, const struct job_config *src);
/*
 * config_parse - apply the key=value words of @text to a copy of @cur
 * and validate the result as a whole. On success @out holds the new
 * config and @changed what differs; on failure @out is empty and the
 * error says which word is bad.
 */
int config_parse(struct fsd *fs, const struct job_config *cur,
		 const char *text, struct job_config *out,
		 unsigned int *changed);
/* config_show - every key with its effective value; @opt may be NULL */
int config_show(struct fsd *fs, const struct job_config *cfg,
		struct gpo_optim *opt, struct gpo__sbuf *sb);
/*
 * config_restored - @cur with what a restored checkpoint brought back:
 * the optimizer settings @hp ("key=value" lines of gpo_optim_describe(),
 * every key) in place of those given, and the schedule of @sched (a
 * gpo_sched_save() line, "" for none: constant) with its settings; its
 * state stays the worker's. Validated as config_parse() does; on failure
 * @out is empty.
 */
int config_restored(struct fsd *fs, const struct job_config *cur,
		    const char *hp, const char *sched, struct job_config *out);
/* config_hp_text / config_sched_text - settings for the library */
int config_hp_text(const struct job_config *cfg, struct gpo__sbuf *sb);
int config_sched_text(const struct job_config *cfg, struct gpo__sbuf *sb);
/* config_mem_bytes - what a job of @cfg counts against memory limits */
uint64_t config_mem_bytes(const struct job_config *cfg);
/* config_lr - the lr group 0 starts with under @cfg */
double config_lr(struct fsd *fs, const struct job_config *cfg);
/* config_loss_scale - the loss scale a job of @cfg starts with (1: off) */
double config_loss_scale(struct fsd *fs, const struct job_config *cfg);
/* config_hp - hyperparameter @key of group 0 under @cfg, NaN if none */
double config_hp(struct fsd *fs, const struct job_config *cfg,
		 const char *key);
/*
 * config_model_text - the model's own settings for the worker: its spec
 * and, for models that learn from data, the train keys
 */
int config_model_text(const struct job_config *cfg, struct gpo__sbuf *sb);
/* config_steps_itself - a model with its own loss (not external) */
int config_steps_itself(const struct job_config *cfg);
/* config_learns - a model trained on data (mlp, gpt): epochs, extras */
int config_learns(const struct job_config *cfg);
/* config_uses_sched - does the config need a library schedule? */
int config_uses_sched(const struct job_config *cfg);
int model_parse(const char *spec, struct model *m);
/* config_mpi - does @cfg run its worker under mpiexec? */
int config_mpi(const struct job_config *cfg);
/*
 * config_rank_device - ctx_lock held: the device spec rank @rank of @cfg
 * opens: its item of a device=a,b,... list; with ranks > 1 a backend
 * name ("opencl") is that backend's enabled device rank modulo their
 * count, as gpo_comm_device() takes it; else device= itself.
 */
int config_rank_device(struct fsd *fs, const struct job_config *cfg,
		       uint64_t rank, char *buf, size_t len);
/* config_comm_text - gpo_comm_new()'s settings for @cfg's ranks */
int config_comm_text(const struct job_config *cfg, char *buf, size_t len);
void model_free(struct model *m);
int model_equal(const struct model *a, const struct model *b);
void model_shape_text(const struct model_tensor *t, char *buf, size_t len);

/* ---- job.c --------------------------------------------------------------- */

/*
 * job_mpi_why - NULL when jobs with ranks= can run (mpiexec and
 * gpuoptfs-worker-mpi found at the daemon's start), else why not
 */
const char *job_mpi_why(void);
/*
 * job_comm_timeout_max - the longest timeout= (seconds) a job's ranks
 * may wait on each other: half the daemon's watchdog, so that a hung
 * rank fails the step with its cause before the watchdog ends the worker
 */
unsigned int job_comm_timeout_max(void);

struct job_snapshot {
	char name[JOB_NAME_MAX + 1];
	uid_t uid;
	enum job_state state;
	uint64_t step;
	uint64_t max_steps;
	uint64_t skipped;
	double loss;
	double lr;
	double grad_norm;
	double grad_scale;		/* the loss scale gradients are unscaled by */
	double loss_scale;		/* loss_scale's now (1: off) */
	int param_dtype, state_dtype;	/* enum gpo_dtype */
	int master_weights;
	double steps_per_sec;
	double elapsed_s;
	double eta_s;
	char device[32];		/* the device in use, "-" before */
	char rank_devices[RANK_DEVS_MAX]; /* each rank's, by commas */
	char optimizer[16];
	char model[64];			/* model kind */
	uint64_t params;
	uint64_t param_bytes;
	uint64_t restarts;		/* workers restart_on_failure started */
	int worker_pid;			/* 0 when the job has no worker */
	uint64_t ranks;			/* its processes (config's ranks) */
	uint64_t shards;		/* and the comm's settings */
	int deterministic, zero, overlap;
	uint64_t bucket_bytes;
	unsigned int comm_timeout;
	int nextra;			/* a model kind's own numbers */
	struct {
		char name[24];
		double value;
	} extra[8];
};

enum job_log {
	LOG_EVENTS = 0,
	LOG_HISTORY,
};

int job_name_valid(const char *name);
int job_create(struct fsd *fs, const char *name, uid_t uid, gid_t gid,
	       struct job **out);
/* job_remove - take the job out of the tree (rmdir); EBUSY while running */
int job_remove(struct job *j, uid_t uid);
/* job_removed - rmdir took it: its handles serve nothing more */
int job_removed(struct job *j);
/* job_stop_all - pause every job at shutdown, save and free them */
void job_stop_all(struct fsd *fs);
/* job_load_all - at start: the jobs the state directory's records keep */
void job_load_all(struct fsd *fs);

struct job *job_lookup(struct fsd *fs, const char *name);
void job_get(struct job *j);
void job_put(struct job *j);
const char *job_name(const struct job *j);
uid_t job_uid(const struct job *j);
gid_t job_gid(const struct job *j);
/* job_list - call @fn for each job's name (under the daemon's lock) */
void job_list(struct fsd *fs, void (*fn)(void *arg, const char *name),
	      void *arg);
/*
 * job_pool_sum - the pools the workers of the jobs on device @index hold,
 * added up as of each worker's last reply (limit_bytes left 0). Returns
 * how many workers, or a negative errno.
 */
int job_pool_sum(struct fsd *fs, int index, struct gpo_pool_stats *sum);
/* job_snapshots - a malloc'ed array of every job's snapshot */
int job_snapshots(struct fsd *fs, struct job_snapshot **out);
void job_snapshot(struct job *j, struct job_snapshot *s);

int job_config_show(struct job *j, struct gpo__sbuf *sb);
int job_config_store(struct job *j, const char *text, uid_t uid);
int job_ctl(struct job *j, const char *verb, uid_t uid);
int job_error_show(struct job *j, struct gpo__sbuf *sb);
/* job_note_error - a write to the job failed: its error file says why */
void job_note_error(struct job *j, const char *msg);

/* what a file's or directory's mtime follows */
enum job_time {
	JOB_T_DIR = 0,			/* any of the others */
	JOB_T_CONFIG,
	JOB_T_STATE,
	JOB_T_STAT,			/* every step, state or config change */
	JOB_T_ERROR,
	JOB_T_EVENTS,
	JOB_T_HISTORY,
	JOB_T_PARAMS,			/* params/ and grad */
	JOB_T_SAMPLE,
	JOB_TIMES
};
#define JOB_T(t) (1u << (t))

/* job_mtime - when the job's content @which last changed */
struct timespec job_mtime(struct job *j, enum job_time which);

size_t job_log_size(struct job *j, enum job_log which);
int job_log_read(struct job *j, enum job_log which, char *buf, size_t size,
		 off_t off);
/* job_log_poll - 1 if the log is longer than @pos, else keep @ph */
int job_log_poll(struct job *j, enum job_log which, off_t pos,
		 struct fuse_pollhandle *ph);

int job_tensor_count(struct job *j);
int job_tensor_find(struct job *j, const char *name);
int job_tensor_info(struct job *j, int index, struct model_tensor *t);
int job_params_read(struct job *j, int tensor, void *dst, size_t bytes);
int job_params_write(struct job *j, int tensor, const void *src,
		     size_t bytes);
/* job_model_gen - changes whenever the model does: partial writes of
 * params or grad begun under another model are stale */
uint64_t job_model_gen(struct job *j);
uint64_t job_grad_bytes(struct job *j);
int job_grad_read(struct job *j, void *dst, size_t bytes);
/* job_loss_store - an external job's loss for the step its next
 * gradient makes */
int job_loss_store(struct job *j, const char *text, uid_t uid);
/* job_grad_step - the whole flat gradient: runs exactly one step */
int job_grad_step(struct job *j, const void *src, size_t bytes);
/*
 * A gradient written in parts, copied straight into the worker's shared
 * memory: job_grad_claim() makes the write @id its one owner (-ESTALE:
 * the model is not @gen's; any other error: taken, no worker yet, no
 * memory: stage privately), job_grad_put() copies a part at @off, job_grad_step_staged()
 * steps on the whole, job_grad_unstage() gives the space back.
 */
int job_grad_claim(struct job *j, uint64_t gen, size_t bytes, uint64_t *id);
int job_grad_put(struct job *j, uint64_t id, uint64_t off, const void *src,
		 size_t size);
int job_grad_step_staged(struct job *j, uint64_t id, size_t bytes);
void job_grad_unstage(struct job *j, uint64_t id);

/*
 * sample: the bytes the last "sample N [PROMPT]" of ctl generated (gpt
 * models); job_sample_copy() puts them in @sb, job_sample_size() says
 * how many there are
 */
#define JOB_SAMPLE_MAX 65536		/* bytes one sample may have */
#define JOB_PROMPT_MAX 4096		/* bytes of a sample's prompt */
int job_sample_copy(struct job *j, struct gpo__sbuf *sb);
size_t job_sample_size(struct job *j);

/* checkpoints/: NAME.safetensors files */
int job_ckpt_valid(const char *file);
int job_ckpt_list(struct job *j, void (*fn)(void *arg, const char *name),
		  void *arg);
/* job_ckpt_dir_mtime - the checkpoints directory's mtime; -ENOENT before
 * the first checkpoint */
int job_ckpt_dir_mtime(struct job *j, struct timespec *ts);
/* job_ckpt_open - an fd for reading checkpoint @file, or -errno */
int job_ckpt_open(struct job *j, const char *file, struct stat *st);

#endif /* JOB_I_H */
