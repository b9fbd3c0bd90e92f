/* SPDX-License-Identifier: MIT */
/*
 * embedded_i.h - kernel sources and SPIR-V embedded at build time
 * (tools/embed.sh writes the tables from kernels/).
 */
#ifndef GPUOPT_EMBEDDED_I_H
#define GPUOPT_EMBEDDED_I_H

#include <stddef.h>

struct embedded_file {
	/* cl: the path below kernels/ ("abi/adam.h"); spv: the file name
	 * without extension */
	const char *name;
	const unsigned char *data;
	size_t size;		/* bytes, without the NUL added to .cl text */
};

/* terminated by an entry with name NULL */
extern const struct embedded_file gpo__embedded_cl[];
extern const struct embedded_file gpo__embedded_spv[];

const struct embedded_file *gpo__embedded_find(const struct embedded_file *tab,
					  const char *name);

#endif /* GPUOPT_EMBEDDED_I_H */
