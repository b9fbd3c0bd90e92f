/* SPDX-License-Identifier: MIT */
/*
 * ckpt_util.h - what the checkpoint tests (test_ckpt.c, test_ckpt_corrupt.c)
 * share: the optimizer contents they save, the files they read back.
 */
#ifndef GPUOPT_CKPT_UTIL_H
#define GPUOPT_CKPT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <gpuopt.h>

/* cu_write_random - @slot of @opt (all tensors) drawn in [-1, 1) from @rng */
void cu_write_random(struct gpo_optim *opt, const char *slot, uint64_t *rng);

/* cu_slurp - the whole file @path, malloc'ed, its size in *@len */
char *cu_slurp(const char *path, size_t *len);

#endif /* GPUOPT_CKPT_UTIL_H */
