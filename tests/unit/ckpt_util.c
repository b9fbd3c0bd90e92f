// SPDX-License-Identifier: MIT
/*
 * ckpt_util.c - helpers of the checkpoint tests (ckpt_util.h)
 */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include "testutil.h"
#include "ckpt_util.h"

void cu_write_random(struct gpo_optim *opt, const char *slot, uint64_t *rng)
{
	size_t n = gpo_optim_numel(opt);
	float *x = malloc(n * 4);

	tu_fill(x, n, rng, -1, 1);
	ck_assert_int_eq(gpo_optim_write(opt, slot, NULL, x, n * 4), 0);
	free(x);
}

char *cu_slurp(const char *path, size_t *len)
{
	struct stat st;
	char *buf;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc(st.st_size + 1);
	ck_assert_int_eq(read(fd, buf, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return buf;
}
