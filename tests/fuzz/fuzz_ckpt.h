/* SPDX-License-Identifier: MIT */
/*
 * fuzz_ckpt.h - what one fuzz input runs, shared by the libFuzzer harness
 * (fuzz_ckpt.c) and the unit test that replays the corpus and every
 * regression file (tests/unit/test_ckpt_corrupt.c)
 *
 * An input is a whole checkpoint file in memory. It goes through the
 * strict reader (header and checksums) in both modes and, where that
 * accepts it, through the matching against an optimizer like the one
 * gen_corpus.sh saved the seeds from (tensors "w" [2,3], "b" [3] in
 * group 0, "v" [2,1,2] in group 1: small, so that the fuzzer is fast),
 * for every optimizer kind.
 */
#ifndef GPUOPT_FUZZ_CKPT_H
#define GPUOPT_FUZZ_CKPT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ckpt/ckpt_i.h"

static const struct fuzz_tensor {
	const char *name;
	int ndim;
	uint64_t shape[3];
	int group;
} fuzz_layout[] = {
	{ "w", 2, { 2, 3 }, 0 },
	{ "v", 3, { 2, 1, 2 }, 1 },
	{ "b", 1, { 3 }, 0 },
};

#define FUZZ_NTENSORS ((int)(sizeof(fuzz_layout) / sizeof(fuzz_layout[0])))

/* The layout as a real optimizer on the cpu device of @ctx. */
static inline struct gpo_optim *fuzz_make_optim(struct gpo_ctx *ctx,
						enum gpo_optim_kind kind)
{
	struct gpo_device *dev;
	struct gpo_optim *opt;
	int i;

	if (gpo_device_select(ctx, "cpu", &dev) ||
	    gpo_optim_new(dev, kind, &opt))
		return NULL;
	if (gpo_optim_add_group(opt) != 1)
		goto out_free;
	for (i = 0; i < FUZZ_NTENSORS; i++)
		if (gpo_optim_add_tensor(opt, fuzz_layout[i].name,
					 fuzz_layout[i].ndim,
					 fuzz_layout[i].shape,
					 fuzz_layout[i].group) < 0)
			goto out_free;
	return opt;
out_free:
	gpo_optim_free(opt);
	return NULL;
}

/*
 * The layout as a bare object, no device (gpo__ckpt_match() reads only the
 * kind, groups and tensors): the harness then probes no GPU API.
 */
static inline struct gpo_optim *fuzz_fake_optim(enum gpo_optim_kind kind)
{
	struct gpo_optim *opt = calloc(1, sizeof(*opt));
	int i, j;

	if (!opt)
		return NULL;
	opt->kind = kind;
	opt->ngroups = 2;
	opt->ntensors = FUZZ_NTENSORS;
	opt->groups = calloc(2, sizeof(*opt->groups));
	opt->tensors = calloc(FUZZ_NTENSORS, sizeof(*opt->tensors));
	if (!opt->groups || !opt->tensors) {
		free(opt->groups);
		free(opt->tensors);
		free(opt);
		return NULL;
	}
	gpo__hparams_defaults(kind, &opt->groups[0].hp);
	gpo__hparams_defaults(kind, &opt->groups[1].hp);
	for (i = 0; i < FUZZ_NTENSORS; i++) {
		struct optim_tensor *t = &opt->tensors[i];

		strcpy(t->name, fuzz_layout[i].name);
		t->group = fuzz_layout[i].group;
		t->ndim = fuzz_layout[i].ndim;
		t->numel = 1;
		for (j = 0; j < t->ndim; j++) {
			t->shape[j] = fuzz_layout[i].shape[j];
			t->numel *= t->shape[j];
		}
	}
	return opt;
}

static inline void fuzz_free_fake(struct gpo_optim *opt)
{
	if (!opt)
		return;
	free(opt->groups);
	free(opt->tensors);
	free(opt);
}

/* The header alone, leniently and past its checksum, against @opts. */
static inline void fuzz_match(const uint8_t *data, size_t size,
			      struct gpo_optim **opts)
{
	struct optim_group groups[2];
	struct ckpt *ck = NULL;
	int have[SL_COUNT], k;
	uint64_t hlen;

	if (size < 8 || gpo__ckpt_parse_len(data, size, &hlen) ||
	    gpo__ckpt_parse((const char *)data + 8, hlen, size,
		       GPO_CKPT_FOREIGN | CKPT_NO_HEADER_SUM, &ck))
		return;
	for (k = 0; k < GPO_OPTIM_KINDS; k++)
		if (opts[k])
			gpo__ckpt_match(ck, opts[k], GPO_CKPT_FOREIGN, have, groups);
	gpo__ckpt_free(ck);
}

/* Returns the strict reader's verdict (0 or -errno); never crashes. */
static inline int fuzz_one(const uint8_t *data, size_t size,
			   struct gpo_optim **opts)
{
	int ret = gpo__ckpt_check_mem(data, size, 0, NULL);

	/* what the strict reader accepts, the lenient one must too */
	if (gpo__ckpt_check_mem(data, size, GPO_CKPT_FOREIGN, NULL) && !ret)
		abort();
	fuzz_match(data, size, opts);
	return ret;
}

#endif /* GPUOPT_FUZZ_CKPT_H */
