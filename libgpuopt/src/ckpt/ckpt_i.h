/* SPDX-License-Identifier: MIT */
/*
 * ckpt_i.h - checkpoints: the strict safetensors reader (safetensors.c),
 * the io_uring engine (ckpt_io.c) and what checkpoint.c shares with tests
 * and the fuzz harness.
 *
 * A gpuopt checkpoint is a safetensors file:
 *
 *	u64 LE   N, the header's length
 *	N bytes  JSON header, padded with spaces so that the data starts at a
 *	         multiple of CKPT_ALIGN (or of the filesystem's direct-I/O
 *	         alignment if that is larger)
 *	data     the tensors back to back, in data_offsets order
 *
 * Tensors are "param/<name>" and "state/<name>/<slot>", each in its
 * buffer's dtype (F32 F16 BF16 U8 I32 I64; restore converts nothing), and
 * for a slot kept as blockwise 8-bit state (state_dtype u8: its codes are
 * state/<name>/<slot>, U8) "absmax/<slot>": F32 [blocks], the absmax of
 * each block of 256, group 0's blocks first (optim_i.h). The
 * "__metadata__" map (strings only, as the format demands) holds
 * "format": "pt" and the CKPT_META_* keys below; the ones holding JSON hold
 * it as text.
 */
#ifndef GPUOPT_CKPT_I_H
#define GPUOPT_CKPT_I_H

#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/gpuopt_i.h"
#include "io/uring_i.h"
#include "optim/optim_i.h"

#define CKPT_MAX_HEADER		(100ull << 20)	/* as the safetensors crate */
#define CKPT_MAX_DIMS		32
#define CKPT_FORMAT_VERSION	"1"

#define CKPT_META_VERSION	"gpuopt.version"	/* "1" */
#define CKPT_META_WRITER	"gpuopt.writer"		/* "libgpuopt " gpo_version() */
#define CKPT_META_KIND		"gpuopt.optimizer"	/* "adamw" */
#define CKPT_META_GROUPS	"gpuopt.groups"		/* JSON, see below */
#define CKPT_META_STEP		"gpuopt.step"		/* decimal */
#define CKPT_META_SKIPPED	"gpuopt.skipped"	/* decimal */
#define CKPT_META_SCHED		"gpuopt.schedule"	/* gpo_sched_save() */
#define CKPT_META_XXH64		"gpuopt.xxh64"		/* JSON, see below */
/*
 * Optional (older files lack them): the loss scale as the device held it
 * (%.9g of a float, > 0) and its good-step counter (decimal); the
 * precision mode, JSON {"param": "f32", "grad": "f32", <slot>: dtype...}
 * for param, grad and every slot the configuration uses.
 */
#define CKPT_META_LOSS_SCALE	"gpuopt.loss_scale"
#define CKPT_META_LOSS_GOOD	"gpuopt.loss_scale_good"
#define CKPT_META_PRECISION	"gpuopt.precision"
#define CKPT_META_HDR_XXH64	"gpuopt.header_xxh64"	/* see below */

/*
 * gpuopt.groups: [{"tensors": ["w", "b"], "momentum_started": false,
 *                  "hparams": {"lr": 0.001, "amsgrad": 0, ...}}, ...]
 * one object per parameter group, in order; tensors in flat order.
 * gpuopt.xxh64: {"param/w": "<16 lower-case hex digits>", ...}, the XXH64
 * (seed 0) of each tensor's bytes.
 * gpuopt.header_xxh64: 16 hex digits, the XXH64 of the header's meaning,
 * independent of key order and data offsets (so that another writer may
 * re-save the file): every other metadata entry sorted by key as
 * "key\0value\0", then every tensor sorted by name as
 * "name\0dtype\0d0,d1,...\0". A flipped bit in a hyperparameter or the
 * step is thus caught like one in the data.
 */

enum ckpt_dtype {
	DT_BOOL, DT_U8, DT_I8, DT_F8_E5M2, DT_F8_E4M3, DT_I16, DT_U16,
	DT_F16, DT_BF16, DT_I32, DT_U32, DT_F32, DT_I64, DT_U64, DT_F64,
	DT_COUNT
};

extern const char *const gpo__ckpt_dtype_names[DT_COUNT];
/* each gpo_dtype's safetensors dtype: the only ones a strict reader takes */
extern const enum ckpt_dtype gpo__ckpt_file_dtype[GPO_DTYPES];

/* what a tensor of a checkpoint maps to in an optimizer (restore) */
#define CKPT_SLOT_PARAM	(-1)
#define CKPT_SLOT_MASTER	(-2)	/* "master/<name>": the f32 master */
/* a tensor "absmax/<slot>": the slot's absmax blocks, not a tensor's */
#define CKPT_TENSOR_ABSMAX	(-3)

struct ckpt_tensor {
	char *name;
	enum ckpt_dtype dtype;
	int ndim;
	uint64_t shape[CKPT_MAX_DIMS];
	uint64_t begin, end;		/* data_offsets: from the data start */
	uint64_t sum;			/* XXH64, if has_sum */
	int has_sum;
	int verified;			/* 1 ok, -EBADE mismatch, 0 unchecked */
	int slot;			/* restore: CKPT_SLOT_*, or slot_id */
	int tensor;			/* restore: the optimizer's index */
};

struct ckpt_group {
	struct hparams hp;
	int momentum_started;
	int ntensors;
	char **tensors;
};

/* A parsed and validated header. */
struct ckpt {
	uint64_t file_size;
	uint64_t header_len;		/* N */
	uint64_t data_start;		/* 8 + N */
	uint64_t data_len;
	int ntensors;
	struct ckpt_tensor *t;		/* sorted by data offset */
	int nmeta;
	char **meta_key;		/* in the header's order */
	char **meta_val;

	int gpuopt;			/* the gpuopt.* metadata is there */
	enum gpo_optim_kind kind;
	int ngroups;
	struct ckpt_group *groups;
	uint64_t step;
	uint64_t skipped;
	char *sched;			/* NULL when none was saved */
	int has_loss;			/* CKPT_META_LOSS_* were there */
	float loss_scale;
	uint64_t loss_good;
	/* CKPT_META_PRECISION: dtypes of param, grad, slots (-1: absent) */
	int has_prec;
	int prec[2 + SL_COUNT];
};

/*
 * gpo__ckpt_meta_precision - add the loss scale (as last read into
 * @opt->ls_saved*) and the precision mode to @meta; 0 or -ENOMEM
 */
int gpo__ckpt_meta_precision(const struct gpo_optim *opt, json_t *meta);

/*
 * gpo__ckpt_check_precision - does @ck's precision mode (when it has one)
 * match @opt's dtypes? 0, or -EINVAL with a message naming the first
 * buffer that differs
 */
int gpo__ckpt_check_precision(const struct ckpt *ck,
			      const struct gpo_optim *opt);

/*
 * gpo__ckpt_apply_loss - after a restore set @opt's hyperparameters: the
 * loss scale and counter saved, or (an older file) the restored setting's
 * starting state. Device lock held.
 */
int gpo__ckpt_apply_loss(const struct ckpt *ck, struct gpo_optim *opt);

/*
 * An internal gpo__ckpt_parse() flag for the fuzz harness: skip the header's
 * own checksum, so that mutated metadata reaches the code that parses it.
 */
#define CKPT_NO_HEADER_SUM	(1u << 30)

/*
 * gpo__ckpt_parse_len - check the 8-byte header length @le8 against the file's
 * @file_size; sets *@hlen. Returns 0, -E2BIG above CKPT_MAX_HEADER,
 * -EBADMSG for a header shorter than 2 bytes or beyond the file.
 */
int gpo__ckpt_parse_len(const void *le8, uint64_t file_size, uint64_t *hlen);

/*
 * gpo__st_parse - the safetensors format alone (safetensors.c): the JSON
 * object of tensor entries and the __metadata__ string map into @ck, the
 * layout checked against ck->data_len; *@root gets the parsed header
 * (json_decref() it). gpuopt's metadata is checked by gpo__ckpt_parse().
 */
int gpo__st_parse(struct ckpt *ck, const char *json, uint64_t hlen,
		  json_t **root);

/*
 * gpo__ckpt_parse - validate a header completely
 * @json:      the @hlen header bytes (after the 8-byte length)
 * @file_size: the whole file's length, which the tensors must fill exactly
 * @flags:     GPO_CKPT_FOREIGN accepts a header without gpuopt metadata
 *             and tensors without checksums
 *
 * Every check that needs no tensor data: JSON, entries, dtypes, shapes,
 * offsets, file length, gpuopt metadata. Returns 0 with *@out set, or the
 * -errno documented for gpo_optim_restore() with gpo_errmsg() set.
 */
int gpo__ckpt_parse(const char *json, uint64_t hlen, uint64_t file_size,
	       unsigned int flags, struct ckpt **out);
void gpo__ckpt_free(struct ckpt *ck);

/*
 * gpo__ckpt_header_sum - gpuopt.header_xxh64 of a header's JSON @root (an
 * object of tensors and __metadata__, already checked or built by us).
 * Returns 0, or -ENOMEM.
 */
int gpo__ckpt_header_sum(json_t *root, uint64_t *sum);

/* gpo__ckpt_find_meta - a metadata value, or NULL */
const char *gpo__ckpt_find_meta(const struct ckpt *ck, const char *key);

/*
 * gpo__ckpt_check_mem - validate a whole file held in memory: the header as
 * gpo__ckpt_parse(), then every checksum. A pure function (the fuzz target).
 * Returns 0 (with *@out set if @out is not NULL), -EBADE for a checksum
 * mismatch, or gpo__ckpt_parse()'s errors.
 */
int gpo__ckpt_check_mem(const void *file, size_t len, unsigned int flags,
		   struct ckpt **out);

/*
 * gpo__ckpt_match - check that @ck fits @opt and plan the restore: fills each
 * tensor's slot and tensor index, @have[s] for each slot the file holds,
 * and @groups (opt->ngroups entries) with the hyperparameters the
 * optimizer will have. Touches neither @opt nor its device.
 * Returns 0, -EINVAL for a mismatch, -ENOENT for a missing tensor.
 */
int gpo__ckpt_match(const struct ckpt *ck, const struct gpo_optim *opt,
	       unsigned int flags, int have[SL_COUNT],
	       struct optim_group *groups);

#endif /* GPUOPT_CKPT_I_H */
