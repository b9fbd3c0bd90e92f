// SPDX-License-Identifier: MIT
/*
 * kernels.c - the kernel table shared by every backend
 */
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/embedded_i.h"

const struct kernel_desc gpo__kernel_table[K_COUNT] = {
	[K_COPY]	 = { "copy",	     2, GRID_ELEMENTS },
	[K_FILL]	 = { "fill",	     1, GRID_ELEMENTS },
	[K_NORM_PARTIAL] = { "norm_partial", 2, GRID_GROUPS },
	[K_NORM_FINAL]	 = { "norm_final",   2, GRID_GROUPS },
	[K_SGD]		 = { "sgd",	     4, GRID_ELEMENTS },
	[K_ADAM]	 = { "adam",	     6, GRID_ELEMENTS },
	[K_RMSPROP]	 = { "rmsprop",	     6, GRID_ELEMENTS },
	[K_ADAGRAD]	 = { "adagrad",	     4, GRID_ELEMENTS },
	[K_LION]	 = { "lion",	     4, GRID_ELEMENTS },
	[K_LAMB_PREP]	 = { "lamb_prep",    7, GRID_GROUPS },
	[K_LAMB_TRUST]	 = { "lamb_trust",   4, GRID_ITEMS },
	[K_LAMB_APPLY]	 = { "lamb_apply",   6, GRID_GROUPS },
	[K_OBJ_QUADRATIC] = { "obj_quadratic", 3, GRID_GROUPS },
	[K_OBJ_ROSENBROCK] = { "obj_rosenbrock", 3, GRID_GROUPS },
};

const struct embedded_file *gpo__embedded_find(const struct embedded_file *tab,
					  const char *name)
{
	for (; tab->name; tab++)
		if (!strcmp(tab->name, name))
			return tab;
	return NULL;
}
