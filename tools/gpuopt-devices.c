// SPDX-License-Identifier: MIT
/*
 * gpuopt-devices - list the devices libgpuopt finds, with their properties
 *
 *   gpuopt-devices [-v]     -v also prints what probing skipped and why
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <gpuopt.h>

int main(int argc, char **argv)
{
	struct gpo_device_info info;
	struct gpo_ctx *ctx;
	int verbose = 0, c, i, n;

	while ((c = getopt(argc, argv, "vh")) != -1) {
		if (c == 'v') {
			verbose = 1;
			continue;
		}
		fprintf(stderr, "usage: %s [-v]\n", argv[0]);
		return c == 'h' ? 0 : 2;
	}
	if (gpo_ctx_new(&ctx, 0)) {
		fprintf(stderr, "gpuopt-devices: %s\n", gpo_errmsg());
		return 1;
	}
	n = gpo_device_count(ctx);
	printf("%-3s %-10s %-10s %-6s %12s %-s\n", "idx", "id", "type", "CUs",
	       "memory_MiB", "name / vendor / driver / uuid");
	for (i = 0; i < n; i++) {
		if (gpo_device_info(ctx, i, &info))
			continue;
		printf("%-3d %-10s %-10s %-6u %12llu %s / %s / %s / %s\n",
		       info.index, info.id, gpo_device_type_name(info.type),
		       info.compute_units,
		       (unsigned long long)(info.mem_total_bytes >> 20),
		       info.name, info.vendor, info.driver,
		       info.uuid[0] ? info.uuid : "-");
	}
	if (verbose && *gpo_ctx_probe_log(ctx))
		printf("\nskipped:\n%s", gpo_ctx_probe_log(ctx));
	gpo_ctx_free(ctx);
	return 0;
}
