// SPDX-License-Identifier: MIT
/*
 * gpuopt-ckpt - inspect and verify checkpoint files
 *
 * Lists each file's metadata and tensors (name, dtype, shape, offset,
 * bytes, XXH64) and checks every checksum against the data, as a table
 * or, with --json, one JSON object (gpuopt-ckpt(1) documents its schema).
 * Faults go to stderr. Any fault (an invalid header, a checksum mismatch,
 * a missing checksum, an I/O error) makes the exit status 1; a usage
 * error 2.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>
#include <gpuopt.h>
#include "common/common.h"

#define EXIT_FAULT 1
#define EXIT_USAGE 2

static const char *prog = "gpuopt-ckpt";

struct opts {
	int quiet;
	int verify;
	int json;
	unsigned int flags;
};

static void usage(void)
{
	printf("usage: %s [-q] [-n] [-f] [-b] [--json] FILE...\n"
	       "Inspect gpuopt checkpoints (safetensors files): list metadata and\n"
	       "tensors, and verify every tensor's checksum.\n"
	       "\n"
	       "  -q, --quiet      print only faults and a verdict per file\n"
	       "  -n, --no-verify  do not read the data; check the header only\n"
	       "  -f, --foreign    accept files of other safetensors writers\n"
	       "                   (no gpuopt metadata, tensors without checksums)\n"
	       "  -b, --buffered   do not use O_DIRECT\n"
	       "  -j, --json       one JSON object on stdout instead of the tables\n"
	       "  -V, --version    print the version\n"
	       "  -h, --help       this text\n"
	       "\n"
	       "Exit status: 0 every file is valid, 1 a fault was found, 2 usage.\n"
	       "See gpuopt-ckpt(1).\n",
	       prog);
}

static int bad_usage(void)
{
	fprintf(stderr,
		"usage: %s [-q] [-n] [-f] [-b] [--json] FILE...\n"
		"Try '%s --help'.\n",
		prog, prog);
	return EXIT_USAGE;
}

/*
 * advise - @msg in @buf, with the library's advice for C callers
 * (GPO_CKPT_FOREIGN) spelled as this command's option, or that advice
 * added where @foreign_reads: --foreign would accept the file.
 */
static void advise(char *buf, size_t size, const char *msg, int foreign_reads)
{
	const char *c_flag = strstr(msg, "GPO_CKPT_FOREIGN");

	if (c_flag)
		snprintf(buf, size, "%.*s--foreign%s", (int)(c_flag - msg), msg,
			 c_flag + strlen("GPO_CKPT_FOREIGN"));
	else if (foreign_reads)
		snprintf(buf, size, "%s (--foreign reads it)", msg);
	else
		snprintf(buf, size, "%s", msg);
}

/* gpo_errmsg() without the "PATH: " the library puts in front */
static void errmsg(const char *path, char *buf, size_t size)
{
	const char *msg = gpo_errmsg();
	size_t len = strlen(path);

	if (!strncmp(msg, path, len) && !strncmp(msg + len, ": ", 2))
		msg += len + 2;
	snprintf(buf, size, "%s", msg);
}

/* Would --foreign open what failed with @err? */
static int foreign_reads(const char *path, const struct opts *o, int err)
{
	struct gpo_ckpt *ck;

	if (o->flags & GPO_CKPT_FOREIGN || (err != -ENODATA && err != -EPROTO))
		return 0;
	if (gpo_ckpt_open(path, o->flags | GPO_CKPT_FOREIGN, &ck))
		return 0;
	gpo_ckpt_close(ck);
	return 1;
}

static const char *status_text(const struct gpo_ckpt_tensor *t, int verified)
{
	if (!t->has_checksum)
		return "no-checksum";
	if (!verified)
		return "-";
	return t->verified > 0 ? "ok" : "BAD";
}

static const char *status_json(const struct gpo_ckpt_tensor *t, int verified)
{
	if (!t->has_checksum)
		return "no-checksum";
	if (!verified || !t->verified)
		return "unchecked";
	return t->verified > 0 ? "ok" : "mismatch";
}

/* ---- the tables ---- */

static void print_shape(const struct gpo_ckpt_tensor *t)
{
	char buf[256];
	size_t used = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < t->ndim && used < sizeof(buf) - 24; i++)
		used += snprintf(buf + used, sizeof(buf) - used, "%s%" PRIu64,
				 i ? "," : "", t->shape[i]);
	printf(" %-16s", buf[0] ? buf : "scalar");
}

static void list_metadata(struct gpo_ckpt *ck, int n)
{
	const char *key, *value;
	int i;

	printf("metadata:\n");
	for (i = 0; i < n; i++)
		if (!gpo_ckpt_metadata(ck, i, &key, &value))
			printf("  %s: %s\n", key, value);
}

static void list_tensors(struct gpo_ckpt *ck, int n, const struct opts *o)
{
	struct gpo_ckpt_tensor t;
	int i;

	if (!o->quiet)
		printf("tensors:\n  %-40s %-8s %-16s %12s %12s %-16s %s\n",
		       "name", "dtype", "shape", "offset", "bytes", "xxh64",
		       "status");
	for (i = 0; i < n; i++) {
		if (gpo_ckpt_tensor(ck, i, &t))
			continue;
		if (o->quiet && t.verified >= 0)
			continue;
		printf("  %-40s %-8s", t.name, t.dtype);
		print_shape(&t);
		printf(" %12" PRIu64 " %12" PRIu64, t.offset, t.bytes);
		if (t.has_checksum)
			printf(" %016" PRIx64, t.checksum);
		else
			printf(" %-16s", "-");
		printf(" %s\n", status_text(&t, o->verify));
	}
}

/* ---- JSON ---- */

/* Sets @key; a NULL @val (out of memory) is counted in *@err. */
static void set(json_t *obj, const char *key, json_t *val, int *err)
{
	if (json_object_set_new(obj, key, val))
		*err = 1;
}

static void append(json_t *arr, json_t *val, int *err)
{
	if (json_array_append_new(arr, val))
		*err = 1;
}

static json_t *u64_json(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static json_t *tensor_json(const struct gpo_ckpt_tensor *t,
			   const struct gpo_ckpt_info *info,
			   const struct opts *o, int *err)
{
	json_t *obj = json_object(), *shape = json_array(), *span = json_array();
	char sum[17];
	int i;

	if (!obj || !shape || !span) {
		json_decref(shape);
		json_decref(span);
		json_decref(obj);
		*err = 1;
		return NULL;
	}
	for (i = 0; i < t->ndim; i++)
		append(shape, u64_json(t->shape[i]), err);
	append(span, u64_json(t->offset - info->data_offset), err);
	append(span, u64_json(t->offset - info->data_offset + t->bytes), err);
	snprintf(sum, sizeof(sum), "%016" PRIx64, t->checksum);
	set(obj, "name", json_string(t->name), err);
	set(obj, "dtype", json_string(t->dtype), err);
	set(obj, "shape", shape, err);
	set(obj, "offset", u64_json(t->offset), err);
	set(obj, "bytes", u64_json(t->bytes), err);
	set(obj, "data_offsets", span, err);
	set(obj, "xxh64", t->has_checksum ? json_string(sum) : json_null(), err);
	set(obj, "status", json_string(status_json(t, o->verify)), err);
	return obj;
}

/* The header's facts, metadata and tensors into @file. */
static void header_json(json_t *file, struct gpo_ckpt *ck,
			const struct gpo_ckpt_info *info, const struct opts *o,
			int *err)
{
	json_t *meta = json_object(), *tensors = json_array();
	struct gpo_ckpt_tensor t;
	const char *key, *value;
	int i;

	set(file, "data_checked", json_boolean(o->verify), err);
	set(file, "file_bytes", u64_json(info->file_bytes), err);
	set(file, "header_bytes", u64_json(info->header_bytes), err);
	set(file, "data_offset", u64_json(info->data_offset), err);
	set(file, "gpuopt", json_boolean(info->gpuopt), err);
	set(file, "metadata", meta, err);
	set(file, "tensors", tensors, err);
	if (!meta || !tensors)
		return;
	for (i = 0; i < info->metadata; i++)
		if (!gpo_ckpt_metadata(ck, i, &key, &value))
			set(meta, key, json_string(value), err);
	for (i = 0; i < info->tensors; i++)
		if (!gpo_ckpt_tensor(ck, i, &t))
			append(tensors, tensor_json(&t, info, o, err), err);
}

/*
 * inspect - check one file, print it (or add it to @files, with --json)
 * Returns 0 when it is valid, else EXIT_FAULT.
 */
static int inspect(const char *path, const struct opts *o, json_t *files,
		   int *err)
{
	struct gpo_ckpt_info info;
	struct gpo_ckpt *ck;
	json_t *file = NULL;
	char lib[1024], msg[1100];
	int ret, vret = 0, unsummed = 0, i;

	if (o->json) {
		file = json_object();
		append(files, file, err);
		set(file, "path", gpo__json_str(path), err);
	}
	ret = gpo_ckpt_open(path, o->flags, &ck);
	if (ret) {
		errmsg(path, lib, sizeof(lib));
		advise(msg, sizeof(msg), lib, foreign_reads(path, o, ret));
		fprintf(stderr, "%s: INVALID: %s\n", path, msg);
		if (o->json) {
			set(file, "valid", json_false(), err);
			set(file, "error", gpo__json_str(msg), err);
		}
		return EXIT_FAULT;
	}
	gpo_ckpt_info(ck, &info);
	if (o->verify && (vret = gpo_ckpt_verify(ck))) {
		errmsg(path, lib, sizeof(lib));
		advise(msg, sizeof(msg), lib, 0);
		fprintf(stderr, "%s: INVALID: %s\n", path, msg);
	}
	if (o->json) {
		set(file, "valid", json_boolean(!vret), err);
		set(file, "error", vret ? gpo__json_str(msg) : json_null(), err);
		header_json(file, ck, &info, o, err);
		gpo_ckpt_close(ck);
		return vret ? EXIT_FAULT : 0;
	}

	if (!o->quiet) {
		printf("%s: %d tensors, %" PRIu64 " bytes, %" PRIu64
		       "-byte header, data at %" PRIu64 "%s\n", path,
		       info.tensors, info.file_bytes, info.header_bytes,
		       info.data_offset,
		       info.gpuopt ? ", gpuopt checkpoint" : "");
		list_metadata(ck, info.metadata);
	}
	list_tensors(ck, info.tensors, o);
	for (i = 0; i < info.tensors; i++) {
		struct gpo_ckpt_tensor t;

		if (!gpo_ckpt_tensor(ck, i, &t))
			unsummed += !t.has_checksum;
	}
	if (!vret && !o->verify)
		printf("%s: OK (header only)\n", path);
	else if (!vret)	/* a fault was said on stderr */
		printf("%s: OK (%d checksums verified, %d tensors without one)\n",
		       path, info.tensors - unsummed, unsummed);
	gpo_ckpt_close(ck);
	return vret ? EXIT_FAULT : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-verify", no_argument, NULL, 'n' },
		{ "foreign", no_argument, NULL, 'f' },
		{ "buffered", no_argument, NULL, 'b' },
		{ "json", no_argument, NULL, 'j' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .verify = 1 };
	json_t *root = NULL, *files = NULL;
	int c, i, bad = 0, err = 0;

	while ((c = getopt_long(argc, argv, "qnfbjVh", longopts, NULL)) != -1) {
		switch (c) {
		case 'q':
			o.quiet = 1;
			break;
		case 'n':
			o.verify = 0;
			break;
		case 'f':
			o.flags |= GPO_CKPT_FOREIGN;
			break;
		case 'b':
			o.flags |= GPO_CKPT_BUFFERED;
			break;
		case 'j':
			o.json = 1;
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
	if (optind >= argc) {
		fprintf(stderr, "%s: no FILE\n", prog);
		return bad_usage();
	}
	if (o.json) {
		root = json_object();
		files = json_array();
		if (!root || !files || json_object_set(root, "files", files)) {
			fprintf(stderr, "%s: out of memory\n", prog);
			json_decref(files);
			json_decref(root);
			return EXIT_FAULT;
		}
	}
	for (i = optind; i < argc; i++)
		bad |= inspect(argv[i], &o, files, &err);
	if (o.json) {
		if (err)
			fprintf(stderr, "%s: out of memory\n", prog);
		else if (json_dumpf(root, stdout,
				    JSON_INDENT(2) | JSON_PRESERVE_ORDER) ||
			 putchar('\n') == EOF)
			err = 1;
		json_decref(files);
		json_decref(root);
	}
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "%s: cannot write the output\n", prog);
		err = 1;
	}
	return err ? EXIT_FAULT : bad;
}
