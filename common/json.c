// SPDX-License-Identifier: MIT
/*
 * json.c - JSON strings from any bytes, for the tools' --json output
 */
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include "common/common.h"

json_t *gpo__json_str(const char *s)
{
	json_t *j = json_string(s);
	char *copy, *p;

	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}
