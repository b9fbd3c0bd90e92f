// SPDX-License-Identifier: MIT
/*
 * gpuopt-ckpt - inspect and verify checkpoint files
 *
 * Lists each file's metadata and tensors (name, dtype, shape, offset,
 * bytes, XXH64) and checks every checksum against the data. Any fault
 * (an invalid header, a checksum mismatch, a missing checksum, an I/O
 * error) makes the exit status 1.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <gpuopt.h>

struct opts {
	int quiet;
	int verify;
	unsigned int flags;
};

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [-q] [-n] [-f] [-b] FILE...\n"
		"Inspect gpuopt checkpoints (safetensors files): list metadata and\n"
		"tensors, and verify every tensor's checksum.\n"
		"\n"
		"  -q, --quiet      print only faults and a verdict per file\n"
		"  -n, --no-verify  do not read the data; check the header only\n"
		"  -f, --foreign    accept files of other safetensors writers\n"
		"                   (no gpuopt metadata, tensors without checksums)\n"
		"  -b, --buffered   do not use O_DIRECT\n"
		"  -h, --help       this text\n"
		"\n"
		"Exit status: 0 every file is valid, 1 a fault was found, 2 usage.\n",
		prog);
}

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

static const char *status(const struct gpo_ckpt_tensor *t, int verified)
{
	if (!t->has_checksum)
		return "no-checksum";
	if (!verified)
		return "-";
	return t->verified > 0 ? "ok" : "BAD";
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

/* Returns how many tensors carry no checksum. */
static int list_tensors(struct gpo_ckpt *ck, int n, const struct opts *o)
{
	struct gpo_ckpt_tensor t;
	int i, unsummed = 0;

	if (!o->quiet)
		printf("tensors:\n  %-40s %-8s %-16s %12s %12s %-16s %s\n",
		       "name", "dtype", "shape", "offset", "bytes", "xxh64",
		       "status");
	for (i = 0; i < n; i++) {
		if (gpo_ckpt_tensor(ck, i, &t))
			continue;
		unsummed += !t.has_checksum;
		if (o->quiet && t.verified >= 0)
			continue;
		printf("  %-40s %-8s", t.name, t.dtype);
		print_shape(&t);
		printf(" %12" PRIu64 " %12" PRIu64, t.offset, t.bytes);
		if (t.has_checksum)
			printf(" %016" PRIx64, t.checksum);
		else
			printf(" %-16s", "-");
		printf(" %s\n", status(&t, o->verify));
	}
	return unsummed;
}

static int inspect(const char *path, const struct opts *o)
{
	struct gpo_ckpt_info info;
	struct gpo_ckpt *ck;
	int ret, vret = 0, unsummed;

	ret = gpo_ckpt_open(path, o->flags, &ck);
	if (ret) {
		printf("%s: INVALID: %s\n", path, gpo_errmsg());
		return 1;
	}
	gpo_ckpt_info(ck, &info);
	if (o->verify)
		vret = gpo_ckpt_verify(ck);
	if (!o->quiet) {
		printf("%s: %d tensors, %" PRIu64 " bytes, %" PRIu64
		       "-byte header, data at %" PRIu64 "%s\n", path,
		       info.tensors, info.file_bytes, info.header_bytes,
		       info.data_offset,
		       info.gpuopt ? ", gpuopt checkpoint" : "");
		list_metadata(ck, info.metadata);
	}
	unsummed = list_tensors(ck, info.tensors, o);
	if (vret)
		printf("%s: INVALID: %s\n", path, gpo_errmsg());
	else if (!o->verify)
		printf("%s: OK (header only)\n", path);
	else
		printf("%s: OK (%d checksums verified, %d tensors without one)\n",
		       path, info.tensors - unsummed, unsummed);
	gpo_ckpt_close(ck);
	return vret ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "quiet", no_argument, NULL, 'q' },
		{ "no-verify", no_argument, NULL, 'n' },
		{ "foreign", no_argument, NULL, 'f' },
		{ "buffered", no_argument, NULL, 'b' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct opts o = { .verify = 1 };
	int c, i, bad = 0;

	while ((c = getopt_long(argc, argv, "qnfbh", longopts, NULL)) != -1) {
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
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr, argv[0]);
		return 2;
	}
	for (i = optind; i < argc; i++)
		bad |= inspect(argv[i], &o);
	return bad;
}
