// SPDX-License-Identifier: MIT
/*
 * gpuopt-devices - list the devices libgpuopt finds, with their properties
 *
 * A table, or with --json one JSON object (gpuopt-devices(1) documents
 * its schema). Exit status: 0, 1 failure, 2 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <gpuopt.h>
#include "common/common.h"

#define EXIT_USAGE 2

static const char *prog = "gpuopt-devices";

static void usage(void)
{
	printf(
		"usage: %s [-v] [--json]\n"
		"List the compute devices libgpuopt finds.\n"
		"\n"
		"  -v, --verbose  also print what probing skipped and why\n"
		"  -j, --json     one JSON object instead of the table\n"
		"  -V, --version  print the version\n"
		"  -h, --help     this text\n"
		"\n"
		"Exit status: 0 listed, 1 failure, 2 usage. See gpuopt-devices(1).\n",
		prog);
}

static int bad_usage(void)
{
	fprintf(stderr, "usage: %s [-v] [--json]\nTry '%s --help'.\n", prog,
		prog);
	return EXIT_USAGE;
}

/* Sets @key; a NULL @val (out of memory) is counted in *@err. */
static void set(json_t *obj, const char *key, json_t *val, int *err)
{
	if (json_object_set_new(obj, key, val))
		*err = 1;
}

static json_t *device_json(struct gpo_ctx *ctx,
			   const struct gpo_device_info *d, int *err)
{
	json_t *o = json_object();
	char why[160];
	int rank = gpo_device_best_rank(ctx, d->index, why, sizeof(why));

	if (!o) {
		*err = 1;
		return NULL;
	}
	set(o, "index", json_integer(d->index), err);
	set(o, "id", gpo__json_str(d->id), err);
	set(o, "backend", gpo__json_str(d->backend), err);
	set(o, "type", gpo__json_str(gpo_device_type_name(d->type)), err);
	set(o, "compute_units", json_integer(d->compute_units), err);
	set(o, "mem_total_bytes", json_integer((json_int_t)d->mem_total_bytes),
	    err);
	set(o, "mem_used_bytes", json_integer((json_int_t)d->mem_used_bytes),
	    err);
	set(o, "name", gpo__json_str(d->name), err);
	set(o, "vendor", gpo__json_str(d->vendor), err);
	set(o, "driver", gpo__json_str(d->driver), err);
	set(o, "uuid", d->uuid[0] ? gpo__json_str(d->uuid) : json_null(), err);
	set(o, "coopmat", gpo__json_str(d->coopmat), err);
	set(o, "enabled", json_boolean(d->enabled), err);
	set(o, "present", json_boolean(d->present), err);
	set(o, "best_rank", rank > 0 ? json_integer(rank) : json_null(), err);
	set(o, "best_why", gpo__json_str(rank >= 0 ? why : ""), err);
	return o;
}

/* The probe log's lines, one string each. */
static json_t *skipped_json(const char *log, int *err)
{
	json_t *a = json_array();
	const char *nl;
	char *line;

	if (!a) {
		*err = 1;
		return NULL;
	}
	for (; *log; log = *nl ? nl + 1 : nl) {
		nl = strchrnul(log, '\n');
		if (nl == log)
			continue;
		line = strndup(log, nl - log);
		if (!line || json_array_append_new(a, gpo__json_str(line)))
			*err = 1;
		free(line);
	}
	return a;
}

static int print_json(struct gpo_ctx *ctx, int n)
{
	struct gpo_device_info info;
	json_t *root, *devs;
	int i, err = 0;

	root = json_object();
	devs = json_array();
	if (!root || !devs) {
		json_decref(devs);
		goto out_root;
	}
	set(root, "devices", devs, &err);
	for (i = 0; i < n; i++)
		if (!gpo_device_info(ctx, i, &info) &&
		    json_array_append_new(devs, device_json(ctx, &info, &err)))
			err = 1;
	set(root, "skipped", skipped_json(gpo_ctx_probe_log(ctx), &err), &err);
	if (err)
		goto out_root;
	if (json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER) ||
	    putchar('\n') == EOF)
		err = 1;
	json_decref(root);
	return err ? -1 : 0;

out_root:
	json_decref(root);
	fprintf(stderr, "%s: out of memory\n", prog);
	return -1;
}

static void print_table(struct gpo_ctx *ctx, int n, int verbose)
{
	struct gpo_device_info info;
	char why[160], place[8];
	int i, rank;

	printf("%-3s %-10s %-10s %-6s %12s %-4s %-s\n", "idx", "id", "type",
	       "CUs", "memory_MiB", "best", "name / vendor / driver / uuid / coopmat");
	for (i = 0; i < n; i++) {
		if (gpo_device_info(ctx, i, &info))
			continue;
		rank = gpo_device_best_rank(ctx, i, NULL, 0);
		snprintf(place, sizeof(place), rank > 0 ? "%d" : "-", rank);
		printf("%-3d %-10s %-10s %-6u %12llu %-4s %s / %s / %s / %s / %s\n",
		       info.index, info.id, gpo_device_type_name(info.type),
		       info.compute_units,
		       (unsigned long long)(info.mem_total_bytes >> 20),
		       place, info.name, info.vendor, info.driver,
		       info.uuid[0] ? info.uuid : "-", info.coopmat);
	}
	/* why "best" (gpo_device_select) tries them in this order */
	printf("\nbest:\n");
	for (i = 0; i < n; i++) {
		if (gpo_device_info(ctx, i, &info))
			continue;
		rank = gpo_device_best_rank(ctx, i, why, sizeof(why));
		snprintf(place, sizeof(place), rank > 0 ? "%d" : "-", rank);
		printf("  %-4s %-10s %s\n", place, info.id, why);
	}
	if (verbose && *gpo_ctx_probe_log(ctx))
		printf("\nskipped:\n%s", gpo_ctx_probe_log(ctx));
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct gpo_ctx *ctx;
	int verbose = 0, json = 0, c, n, ret = 0;

	while ((c = getopt_long(argc, argv, "vjVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'v':
			verbose = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'V':
			printf("%s %s\n", prog, gpo_version());
			return 0;
		case 'h':
			usage();
			return 0;
		default:	/* getopt_long said why */
			return bad_usage();
		}
	}
	if (optind < argc) {
		fprintf(stderr, "%s: unexpected argument '%s'\n", prog,
			argv[optind]);
		return bad_usage();
	}
	if (gpo_ctx_new(&ctx, 0)) {
		fprintf(stderr, "%s: %s\n", prog, gpo_errmsg());
		return 1;
	}
	n = gpo_device_count(ctx);
	if (json)
		ret = print_json(ctx, n);
	else
		print_table(ctx, n, verbose);
	gpo_ctx_free(ctx);
	if (!ret && (fflush(stdout) || ferror(stdout))) {
		fprintf(stderr, "%s: cannot write the output\n", prog);
		ret = -1;
	}
	return ret ? 1 : 0;
}
