/* SPDX-License-Identifier: MIT */
/*
 * proto.h - what the daemon and a job's worker process say to each other
 *
 * The daemon keeps the tree and the job's record; the worker (one process
 * per job, running as the job's owner) holds its library context, device,
 * optimizer and schedule. They talk over a SOCK_SEQPACKET socketpair: one
 * struct wp_req per command, one struct wp_rep per reply, nothing else.
 * Everything of variable size (a model's tensors, settings text, params
 * and gradients) goes through one shared memfd mapping whose size the
 * request names: the daemon grows it with ftruncate() before it asks, the
 * worker maps it again when the size changed. A command's bytes start at
 * the request's offset: an external job's gradient is written straight
 * into [0, off) by the FUSE writes that carry it, and every other
 * command's bytes go after that, so that they never overwrite a gradient
 * half written. No FUSE or library type
 * crosses: only fixed-size little structs of plain integers and doubles.
 *
 * The worker is started with these fds and nothing else open:
 */
#ifndef WORKER_PROTO_H
#define WORKER_PROTO_H

#include <stdint.h>

#define WP_FD_SOCK	3	/* the socketpair's end */
#define WP_FD_SHM	4	/* the memfd */
#define WP_FD_CKPT	5	/* the job's checkpoints directory, or absent */

#define WP_VERSION	8
#define WP_MSG_MAX	512
#define WP_EXTRA_MAX	8	/* extra named numbers a step may report */
#define WP_TENSOR_NAME	64
#define WP_NDIM_MAX	8

enum wp_cmd {
	WP_HELLO = 1,		/* version check; replies with the pid */
	WP_BUILD,		/* shm: struct wp_build + tensors + texts */
	WP_HPARAMS,		/* shm: arg bytes of hp text, then sched text */
	WP_STEP,		/* one step of a built-in model */
	WP_GRAD_STEP,		/* shm: the flat gradient; one step */
	WP_GRAD_READ,		/* -> shm: the flat gradient */
	WP_PARAM_READ,		/* arg: tensor index -> shm: its params */
	WP_PARAM_WRITE,		/* arg: tensor index, shm: its params */
	WP_SAVE,		/* name: checkpoint file in WP_FD_CKPT */
	WP_RESTORE,		/* name, flags WP_F_FOREIGN -> shm: what the
				 * file brought back (WP_R_SAVED) */
	WP_RESET,		/* steps and state to 0, schedule restarted */
	WP_QUIT,
	WP_SAMPLE,		/* shm: struct wp_sample + prompt -> the
				 * bytes generated, after the prompt */
};

/* wp_req.flags */
#define WP_F_KEEP_PARAMS 0x1	/* BUILD: carry params over from the old */
#define WP_F_FOREIGN	0x2	/* RESTORE: a safetensors file not ours */
#define WP_F_RESTART_SCHED 0x4	/* HPARAMS: the schedule starts over */
#define WP_F_LOSS	0x8	/* GRAD_STEP: arg holds the step's loss, a
				 * double, for stat and a plateau schedule */
#define WP_F_STAGED	0x10	/* GRAD_STEP: the gradient is the one written
				 * in place at offset 0 (off is 0) */

/*
 * wp_rep.flags: RESTORE read a file gpuopt wrote, whose settings won. Shm
 * then holds, within the request's bytes, the optimizer's settings after
 * the restore (gpo_optim_describe() of group -1) and NUL, then the
 * schedule it now has (gpo_sched_save()'s line, empty for none) and NUL.
 */
#define WP_R_SAVED	0x1
#define WP_R_POOL	0x2	/* wp_rep.pool holds the device's pool */
#define WP_RESTORED_MAX	8192	/* the shm bytes a RESTORE request lends */

struct wp_req {
	uint32_t cmd;
	uint32_t flags;
	uint64_t arg;
	uint64_t bytes;		/* of shm the command reads or writes */
	uint64_t shm_size;	/* the memfd's size now */
	uint64_t off;		/* where in shm the command's bytes start */
	char name[80];
};

/* An extra number a model kind reports with each step (epoch, accuracy) */
struct wp_extra {
	char name[24];
	double value;
};

/* Where the optimizer stands, after any command that built or stepped. */
struct wp_stat {
	uint64_t step;		/* steps applied */
	uint64_t skipped_total;
	uint32_t skipped;	/* this step was skipped */
	uint32_t nextra;
	double loss;		/* NaN when not measured */
	double lr;
	double grad_norm;
	double loss_scale;	/* after the step (1: off; NaN: not known) */
	struct wp_extra extra[WP_EXTRA_MAX];
};

/*
 * A device as both sides can find it: the worker's library context
 * enumerates on its own, so an index or id ("vulkan:1") of the daemon's
 * may name another device there (after a rescan the daemon numbers a
 * device that came back anew). By @uuid where the device has one, else by
 * @name and @ordinal: the how-manieth present device of that backend and
 * name, counting from 0 in index order.
 */
struct wp_dev {
	char backend[16];
	char uuid[40];
	char name[128];
	uint32_t ordinal;
	uint32_t pad;
};

/* The worker's pool on its device (gpo_pool_stats()), with WP_R_POOL */
struct wp_pool {
	uint64_t capacity_bytes;
	uint64_t used_bytes;
	uint64_t cached_bytes;
	uint64_t peak_bytes;
	uint64_t limit_bytes;	/* UINT64_MAX: none */
	uint64_t allocs;
	uint64_t frees;
	uint64_t failures;
};

struct wp_rep {
	int32_t ret;		/* 0 or -errno */
	uint32_t pid;		/* HELLO */
	uint32_t version;	/* HELLO */
	uint32_t flags;		/* WP_R_* */
	char dev_id[32];	/* BUILD: the device's id in the worker */
	uint64_t steps_per_epoch; /* BUILD: a model trained on data; else 0 */
	struct wp_pool pool;	/* after any command, once built */
	struct wp_stat st;
	char msg[WP_MSG_MAX];	/* the error's words when ret < 0 */
};

/*
 * WP_SAMPLE's request at the start of the command's shm, followed by
 * prompt_len bytes of prompt; the worker writes the n bytes the model
 * generates after them (a gpt model's gpo_model_sample()).
 */
struct wp_sample {
	uint64_t n;
	uint64_t prompt_len;
	uint64_t seed;
	double temperature;	/* 0: greedy */
};

struct wp_tensor {
	char name[WP_TENSOR_NAME];
	int32_t ndim;
	uint32_t pad;
	uint64_t shape[WP_NDIM_MAX];
};

/*
 * A rank's own device (a job with ranks > 1: device= one per rank, or a
 * backend's devices rank modulo their count) and that device's
 * pools/<i>/max
 */
struct wp_rank_dev {
	struct wp_dev device;
	uint64_t pool_limit;	/* UINT64_MAX: none */
};

/* WP_BUILD's description at the start of shm, followed by ndisabled
 * struct wp_dev (the devices the daemon disabled or lost: the worker
 * leaves them alone too), then nrank_devs struct wp_rank_dev (0: every
 * rank on @device; else one per rank, rank order), then ntensors struct wp_tensor, then hp_len bytes of hp text, then sched_len bytes of
 * schedule settings, then model_len bytes of the model's own settings
 * (the spec and key=value words: data, batch_size...; none of them
 * NUL-terminated). */
struct wp_build {
	int32_t optimizer;	/* enum gpo_optim_kind */
	uint32_t ntensors;
	char model[32];		/* the model kind: "quadratic", "external"... */
	struct wp_dev device;	/* the one the daemon chose for the job */
	char schedule[32];	/* "" or "constant": none */
	uint64_t seed;
	uint64_t numel;
	uint64_t pool_limit;	/* the daemon's pools/<i>/max, UINT64_MAX: none */
	uint32_t ndisabled;
	uint32_t hp_len;
	uint32_t sched_len;
	uint32_t model_len;
	int32_t param_dtype;	/* enum gpo_dtype of param and grad */
	int32_t state_dtype;	/* of every state slot */
	uint32_t nrank_devs;
	uint32_t pad;
};

#endif /* WORKER_PROTO_H */
