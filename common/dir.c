// SPDX-License-Identifier: MIT
/*
 * dir.c - the sorted names of a directory
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "common/common.h"

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void gpo__dir_free(char **names, int n)
{
	while (n > 0)
		free(names[--n]);
	free(names);
}

int gpo__dir_list(const char *path, int (*keep)(const char *name, void *arg),
		  void *arg, int (*cmp)(const void *, const void *),
		  char ***out)
{
	char **names = NULL, **v;
	struct dirent *d;
	int n = 0, cap = 0, ret = 0;
	DIR *dp;

	*out = NULL;
	dp = opendir(path);
	if (!dp)
		return -errno;
	for (;;) {
		errno = 0;
		d = readdir(dp);
		if (!d) {
			ret = -errno;
			break;
		}
		if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (keep && !keep(d->d_name, arg))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			v = realloc(names, cap * sizeof(*names));
			if (!v) {
				ret = -ENOMEM;
				break;
			}
			names = v;
		}
		names[n] = strdup(d->d_name);
		if (!names[n]) {
			ret = -ENOMEM;
			break;
		}
		n++;
	}
	closedir(dp);
	if (ret)
		goto out_free_names;
	if (n)
		qsort(names, n, sizeof(*names), cmp ? cmp : cmp_str);
	*out = names;
	return n;

out_free_names:
	gpo__dir_free(names, n);
	return ret;
}
