// SPDX-License-Identifier: MIT
/*
 * devices.c - gpuoptctl devices, pools and rescan: the devices/ and pools/
 * directories of the tree as tables.
 */
#include <errno.h>
#include <string.h>
#include "gpuoptctl_i.h"

enum { D_IDX, D_ID, D_TYPE, D_CUS, D_MEMORY, D_POOL, D_BUSY, D_EN, D_NAME,
       D_VENDOR, D_DRIVER, D_UUID, D_BACKEND };

static const struct col_def dev_cols[] = {
	[D_IDX] = { "idx", "IDX", COL_NUMBER, "the index in devices/" },
	[D_ID] = { "id", "ID", 0, "vulkan:N, opencl:N, cpu:0" },
	[D_TYPE] = { "type", "TYPE", 0, "discrete, integrated, cpu-impl, cpu" },
	[D_CUS] = { "cus", "CUS", COL_RIGHT | COL_NUMBER, "compute units" },
	[D_MEMORY] = { "memory", "MEMORY", COL_RIGHT | COL_NUMBER, "memory" },
	[D_POOL] = { "pool", "POOL", COL_RIGHT | COL_NUMBER, "held by the pool" },
	[D_BUSY] = { "busy", "BUSY", COL_RIGHT | COL_NUMBER, "busy percent" },
	[D_EN] = { "en", "EN", 0, "takes new jobs: 1, 0, or gone" },
	[D_NAME] = { "name", "NAME", 0, "the device's name" },
	[D_VENDOR] = { "vendor", "VENDOR", 0, "" },
	[D_DRIVER] = { "driver", "DRIVER", 0, "" },
	[D_UUID] = { "uuid", "UUID", 0, "" },
	[D_BACKEND] = { "backend", "BACKEND", 0, "" },
};

#define DEV_DEFAULT "idx,id,type,cus,memory,pool,busy,en,name"

static void dev_value(const char *idx, const char *file, char *out,
		      size_t len)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "devices/%s/%s", idx, file);
	if (read_value(rel, out, len))
		snprintf(out, len, "-");
}

/* Bytes: "1.5 GiB" in a table, the count in JSON */
static void set_bytes(struct table *t, struct libscols_line *ln, int col,
		      const char *v)
{
	char h[32];

	if (tbl_json) {
		table_set(t, ln, col, !strcmp(v, "max") ? "" : v);
		return;
	}
	fmt_bytes(h, sizeof(h), v);
	table_set(t, ln, col, h);
}

/* devices_table - the devices, into @out for top, else printed */
int devices_table(struct gpo__sbuf *out)
{
	static const struct { int col; const char *file; } plain[] = {
		{ D_ID, "id" }, { D_TYPE, "type" }, { D_CUS, "compute_units" },
		{ D_NAME, "name" }, { D_VENDOR, "vendor" },
		{ D_DRIVER, "driver" }, { D_UUID, "uuid" },
		{ D_BACKEND, "backend" },
	};
	char **idx, v[256], present[8];
	struct libscols_line *ln;
	struct table t;
	size_t k;
	int n, i, ret;

	ret = table_new(&t, "devices", dev_cols, ARRAY_SIZE(dev_cols),
			DEV_DEFAULT, NULL);
	if (ret)
		return ret;
	n = list_dir("devices", &idx, index_cmp);
	for (i = 0; i < n; i++) {
		ln = table_row(&t);
		table_set(&t, ln, D_IDX, idx[i]);
		for (k = 0; k < ARRAY_SIZE(plain); k++) {
			if (!table_shows(&t, plain[k].col))
				continue;
			dev_value(idx[i], plain[k].file, v, sizeof(v));
			table_set(&t, ln, plain[k].col, v);
		}
		dev_value(idx[i], "mem_total_bytes", v, sizeof(v));
		set_bytes(&t, ln, D_MEMORY, v);
		dev_value(idx[i], "mem_used_bytes", v, sizeof(v));
		set_bytes(&t, ln, D_POOL, v);
		dev_value(idx[i], "busy_percent", v, sizeof(v));
		if (tbl_json)
			table_set(&t, ln, D_BUSY, v);
		else
			table_setf(&t, ln, D_BUSY, "%s%%", v);
		dev_value(idx[i], "enabled", v, sizeof(v));
		dev_value(idx[i], "present", present, sizeof(present));
		table_set(&t, ln, D_EN, strcmp(present, "0") ? v : "gone");
	}
	gpo__dir_free(idx, n > 0 ? n : 0);
	ret = table_print(&t, out);
	table_free(&t);
	return ret;
}

int cmd_devices(int argc, char **argv)
{
	int status = operands(argc, 0, 0);
	struct table t;

	if (status)
		return status;
	/* a bad -o is a usage error, before the tree is looked at */
	if (table_new(&t, "devices", dev_cols, ARRAY_SIZE(dev_cols),
		      DEV_DEFAULT, NULL))
		return EXIT_USAGE;
	table_free(&t);
	if (!tree_ok())
		return 1;
	return devices_table(NULL) ? 1 : 0;
}

enum { P_IDX, P_DEVICE, P_CAPACITY, P_USED, P_CACHED, P_PEAK, P_LIMIT,
       P_ALLOCS, P_FAILURES, P_ERROR };

static const struct col_def pool_cols[] = {
	[P_IDX] = { "idx", "IDX", COL_NUMBER, "" },
	[P_DEVICE] = { "device", "DEVICE", 0, "" },
	[P_CAPACITY] = { "capacity", "CAPACITY", COL_RIGHT | COL_NUMBER, "" },
	[P_USED] = { "used", "USED", COL_RIGHT | COL_NUMBER, "" },
	[P_CACHED] = { "cached", "CACHED", COL_RIGHT | COL_NUMBER, "" },
	[P_PEAK] = { "peak", "PEAK", COL_RIGHT | COL_NUMBER, "" },
	[P_LIMIT] = { "limit", "LIMIT", COL_RIGHT | COL_NUMBER, "" },
	[P_ALLOCS] = { "allocs", "ALLOCS", COL_RIGHT | COL_NUMBER, "" },
	[P_FAILURES] = { "failures", "FAILURES", COL_RIGHT | COL_NUMBER, "" },
	[P_ERROR] = { "error", "ERROR", 0, "why the pool cannot be read" },
};

#define POOL_DEFAULT "idx,device,capacity,used,cached,peak,limit,allocs,failures"

int cmd_pools(int argc, char **argv)
{
	static const struct { int col; const char *key; } keys[] = {
		{ P_CAPACITY, "capacity_bytes" }, { P_USED, "used_bytes" },
		{ P_CACHED, "cached_bytes" }, { P_PEAK, "peak_bytes" },
		{ P_LIMIT, "limit_bytes" },
	};
	char **idx, rel[128], id[32], v[64];
	struct gpo__sbuf b = { 0 };
	struct libscols_line *ln;
	struct table t;
	int n, i, status, ret;
	size_t k;

	status = operands(argc, 0, 0);
	if (status)
		return status;
	if (table_new(&t, "pools", pool_cols, ARRAY_SIZE(pool_cols),
		      POOL_DEFAULT, POOL_DEFAULT ",error"))
		return EXIT_USAGE;
	if (!tree_ok()) {
		table_free(&t);
		return 1;
	}
	n = list_dir("pools", &idx, index_cmp);
	for (i = 0; i < n; i++) {
		ln = table_row(&t);
		table_set(&t, ln, P_IDX, idx[i]);
		dev_value(idx[i], "id", id, sizeof(id));
		table_set(&t, ln, P_DEVICE, id);
		snprintf(rel, sizeof(rel), "pools/%s/stat", idx[i]);
		/* reading a pool opens its device: a gone one says ENODEV */
		ret = read_rel(rel, &b);
		if (ret || !b.buf) {
			snprintf(v, sizeof(v), "%s", strerror(ret ? -ret : EIO));
			table_set(&t, ln, P_ERROR, v);
			if (!table_shows(&t, P_ERROR) && !tbl_json)
				table_setf(&t, ln, P_CAPACITY, "(%s)", v);
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(keys); k++) {
			kv_get(b.buf, keys[k].key, v, sizeof(v));
			set_bytes(&t, ln, keys[k].col, v);
		}
		kv_get(b.buf, "allocs", v, sizeof(v));
		table_set(&t, ln, P_ALLOCS, v);
		kv_get(b.buf, "failures", v, sizeof(v));
		table_set(&t, ln, P_FAILURES, v);
	}
	gpo__sbuf_free(&b);
	gpo__dir_free(idx, n > 0 ? n : 0);
	ret = table_print(&t, NULL);
	table_free(&t);
	return ret ? 1 : 0;
}

int cmd_rescan(int argc, char **argv)
{
	int status = operands(argc, 0, 0);

	if (status)
		return status;
	if (!tree_ok())
		return 1;
	return do_write("rescan", "ctl", "rescan\n");
}
