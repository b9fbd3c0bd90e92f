// SPDX-License-Identifier: MIT
/*
 * fuzz_ckpt.c - libFuzzer harness for the checkpoint reader: each input is
 * a whole file in memory, through the strict and the lenient reader and
 * the matching against every optimizer kind (fuzz_ckpt.h). `make fuzz`
 * builds it with clang and runs it (tests/fuzz/run.sh).
 */
#include "fuzz_ckpt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gpo_optim *opts[GPO_OPTIM_KINDS];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int k;

	if (!opts[0])
		for (k = 0; k < GPO_OPTIM_KINDS; k++)
			opts[k] = fuzz_fake_optim(k);
	fuzz_one(data, size, opts);
	return 0;
}
