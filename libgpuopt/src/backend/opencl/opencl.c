// SPDX-License-Identifier: MIT
/*
 * opencl.c - the OpenCL backend
 *
 * Devices come from every platform the ICD loader knows. Opening one makes
 * a context and an in-order profiling queue, nothing more. The first
 * launch of an op in a dtype builds its family's program for that dtype
 * (common.cl and kernels/opencl/<family>/<family>.cl, -DGPO_DTYPE_<dtype>,
 * OpenCL C 1.2) and makes the op's kernel; both are kept until close.
 * Program binaries are cached on disk (diskcache, kind "opencl"), keyed by
 * the source, the build options, the device and the driver.
 *
 * Buffers: each pool block is one cl_mem; a sub-allocation is passed to a
 * kernel as that cl_mem plus its offset in elements (see common.cl), so
 * launches create nothing: no sub-buffers, no per-step objects. A buffer a
 * kernel does not use (a zeroed dev_buf) is bound to a small dummy buffer.
 *
 * Transfers: pinned memory (gpo_host_alloc(): a CL_MEM_ALLOC_HOST_PTR
 * buffer, mapped) is read and written in one blocking copy, which the
 * driver does by DMA; larger transfers from other memory go through a
 * pinned staging buffer in slots, several copies in flight.
 *
 * Launches only enqueue. wait() finishes the queue and reports the device
 * time from the start of the first launch after the previous wait to the
 * end of the last, from the only two events kept.
 *
 * An adopted device (gpo_device_adopt_opencl) runs on the caller's context
 * and in-order queue: open retains them instead of making its own, close
 * releases them, and everything gpuopt enqueues goes to that queue, after
 * the caller's earlier work. wait() finishes the whole queue, so it also
 * waits for work the caller enqueued before (which gpuopt's waits on in an
 * in-order queue anyway) or from another thread meanwhile; a queue made
 * without CL_QUEUE_PROFILING_ENABLE reports a device time of 0. The
 * caller's cl_mem objects bound to an optimizer (import) are retained and
 * passed to kernels as the pool's blocks are.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/diskcache_i.h"
#include "backend/embedded_i.h"
#include "abi/matmul.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR	-1001
#endif
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR		0x106A
#endif
#define UUID_BYTES			16

#define DUMMY_BYTES	256
/* gpo_device_info()'s driver field of an adopted device starts so */
#define ADOPTED_PREFIX	"adopted, "
/*
 * Element kernels get one work-item per float4. Measured: an H200 copies
 * at 4.25 TB/s so, and at 3.9 with a grid-stride loop over 2048 work-items
 * per SM; PoCL runs it 7 times faster. The cap only bounds the grid: 2^30
 * float4s are 2^32 floats.
 */
#define MAX_ITEMS	((size_t)1 << 30)
#define BUILD_LOG_MAX	400
/*
 * Transfers larger than a slot go through a pinned staging buffer of
 * XFER_SLOTS slots, so that the host copies one chunk while the device
 * copies others: clEnqueueWrite/ReadBuffer straight from pageable memory
 * moved 2.6 GB/s on an H100, where pinned memory moves 50.
 */
#define XFER_SLOTS	4
#define XFER_SLOT_BYTES	(16ull << 20)

struct dev_mem {
	cl_mem mem;
	uint64_t size;
};

struct ocl_dev {
	/* from probe */
	cl_platform_id platform;
	cl_device_id device;
	/*
	 * from open; an adopted device's context and queue are the caller's,
	 * set by adopt: open takes references of its own, teardown drops them
	 */
	cl_context context;
	cl_command_queue queue;
	int adopted;
	cl_mem dummy;
	/*
	 * built on first use (get_kernel), under @lock; a family's programs
	 * are at the index of its first op
	 */
	pthread_mutex_t lock;
	cl_program programs[OP_COUNT][GPO_DTYPES];
	cl_kernel kernels[OP_COUNT][GPO_DTYPES];
	cl_kernel big16;		/* matmul_big16 (deep()), likewise */
	/* from probe: the op's kernel is in its embedded source (supports) */
	unsigned char has_kernel[OP_COUNT][GPO_DTYPES];
	/* the first and the last launch since the previous wait */
	cl_event first;
	cl_event last;
	/* the last command of all (a step's readback): wait() polls it */
	cl_event tail;

	/*
	 * The arguments each kernel was last given (set_args()), so a step
	 * sets only those that changed; stale once any buffer is freed
	 * (@free_gen), as a new cl_mem may get a freed one's handle.
	 */
	struct kern_args {
		uint64_t gen;		/* free_gen + 1 when set; 0: none */
		cl_mem mem[OP_MAX_BUF];
		cl_ulong off[OP_MAX_BUF];
		uint32_t args[GPO_ARGS_MAX / 4];
	} kargs[OP_COUNT][GPO_DTYPES], big16_args;
	uint64_t free_gen;
	/*
	 * wait() polls the last event for spin_ns (GPUs) before blocking:
	 * a blocking wait wakes late. @in_order: our own in-order queue, so
	 * the last command done means all are.
	 */
	uint64_t spin_ns;
	uint64_t last_ns;		/* wall time of the last wait's batch */
	int in_order;

	/*
	 * the staging buffer (CL_MEM_ALLOC_HOST_PTR, mapped), made by the
	 * first large pageable transfer; each slot's copy has an event
	 */
	pthread_mutex_t xfer_lock;
	cl_mem staging;
	unsigned char *staging_map;
	uint64_t slot_size;
	cl_event slot_ev[XFER_SLOTS];
};

/*
 * wait() polls the last command this long past the last wait's time, for
 * batches up to twice this long, as the Vulkan backend does (device.c):
 * a blocking wait wakes tens of microseconds late on NVIDIA
 */
#define SPIN_NS		200000

static const char *cl_err_name(cl_int err)
{
	switch (err) {
#define E(x) case x: return #x
	E(CL_SUCCESS);
	E(CL_DEVICE_NOT_FOUND);
	E(CL_DEVICE_NOT_AVAILABLE);
	E(CL_COMPILER_NOT_AVAILABLE);
	E(CL_MEM_OBJECT_ALLOCATION_FAILURE);
	E(CL_OUT_OF_RESOURCES);
	E(CL_OUT_OF_HOST_MEMORY);
	E(CL_PROFILING_INFO_NOT_AVAILABLE);
	E(CL_MEM_COPY_OVERLAP);
	E(CL_BUILD_PROGRAM_FAILURE);
	E(CL_MAP_FAILURE);
	E(CL_MISALIGNED_SUB_BUFFER_OFFSET);
	E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
	E(CL_COMPILE_PROGRAM_FAILURE);
	E(CL_LINKER_NOT_AVAILABLE);
	E(CL_LINK_PROGRAM_FAILURE);
	E(CL_INVALID_VALUE);
	E(CL_INVALID_DEVICE_TYPE);
	E(CL_INVALID_PLATFORM);
	E(CL_INVALID_DEVICE);
	E(CL_INVALID_CONTEXT);
	E(CL_INVALID_QUEUE_PROPERTIES);
	E(CL_INVALID_COMMAND_QUEUE);
	E(CL_INVALID_HOST_PTR);
	E(CL_INVALID_MEM_OBJECT);
	E(CL_INVALID_BINARY);
	E(CL_INVALID_BUILD_OPTIONS);
	E(CL_INVALID_PROGRAM);
	E(CL_INVALID_PROGRAM_EXECUTABLE);
	E(CL_INVALID_KERNEL_NAME);
	E(CL_INVALID_KERNEL_DEFINITION);
	E(CL_INVALID_KERNEL);
	E(CL_INVALID_ARG_INDEX);
	E(CL_INVALID_ARG_VALUE);
	E(CL_INVALID_ARG_SIZE);
	E(CL_INVALID_KERNEL_ARGS);
	E(CL_INVALID_WORK_DIMENSION);
	E(CL_INVALID_WORK_GROUP_SIZE);
	E(CL_INVALID_WORK_ITEM_SIZE);
	E(CL_INVALID_GLOBAL_OFFSET);
	E(CL_INVALID_EVENT_WAIT_LIST);
	E(CL_INVALID_EVENT);
	E(CL_INVALID_OPERATION);
	E(CL_INVALID_BUFFER_SIZE);
	E(CL_INVALID_GLOBAL_WORK_SIZE);
	E(CL_PLATFORM_NOT_FOUND_KHR);
#undef E
	default:
		return "unknown OpenCL error";
	}
}

/*
 * The errno for an OpenCL error: a lost device is -ENODEV, running out of
 * memory is -ENOMEM where memory is what was asked for (@alloc), anything
 * else is the device failing: -EIO.
 */
static int cl_errno(cl_int err, int alloc)
{
	switch (err) {
	case CL_DEVICE_NOT_AVAILABLE:
		return -ENODEV;
	case CL_OUT_OF_RESOURCES:
	case CL_MEM_OBJECT_ALLOCATION_FAILURE:
	case CL_OUT_OF_HOST_MEMORY:
	case CL_INVALID_BUFFER_SIZE:
		return alloc ? -ENOMEM : -EIO;
	default:
		return -EIO;
	}
}

/* Report @err of @what on @dev: "opencl:0 (name): what: CL_... (-5)" */
static int cl_fail(const struct gpo_device *dev, cl_int err, int alloc,
		   const char *what)
{
	return gpo__err(cl_errno(err, alloc), "%s (%s): %s: %s (%d)",
		       dev->info.id, dev->info.name, what, cl_err_name(err),
		       (int)err);
}

static void kernel_table(struct ocl_dev *od);
static cl_int event_status(cl_event ev);

/* ---- probe --------------------------------------------------------------- */

/* A device info string, malloc'ed; NULL with *@err set on failure. */
static char *dev_str(cl_device_id d, cl_device_info param, cl_int *err)
{
	size_t size = 0;
	char *s;

	*err = clGetDeviceInfo(d, param, 0, NULL, &size);
	if (*err)
		return NULL;
	s = malloc(size + 1);
	if (!s) {
		*err = CL_OUT_OF_HOST_MEMORY;
		return NULL;
	}
	*err = clGetDeviceInfo(d, param, size, s, NULL);
	if (*err) {
		free(s);
		return NULL;
	}
	s[size] = '\0';
	return s;
}

static int has_word(const char *list, const char *word)
{
	size_t len = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		if ((p == list || p[-1] == ' ') && (p[len] == ' ' || !p[len]))
			return 1;
		p += len;
	}
	return 0;
}

/* "OpenCL C 1.2 ..." and "OpenCL 3.0 ..." as major * 10 + minor */
static int cl_version_of(const char *s, const char *prefix)
{
	int major = 0, minor = 0;

	if (strncmp(s, prefix, strlen(prefix)) ||
	    sscanf(s + strlen(prefix), "%d.%d", &major, &minor) != 2)
		return 0;
	return major * 10 + minor;
}

static void fill_uuid(cl_device_id d, const char *ext, char *out,
		      size_t len)
{
	unsigned char uuid[UUID_BYTES];
	int i;

	out[0] = '\0';
	if (!has_word(ext, "cl_khr_device_uuid") ||
	    clGetDeviceInfo(d, CL_DEVICE_UUID_KHR, sizeof(uuid), uuid, NULL))
		return;
	for (i = 0; i < UUID_BYTES && 2 * i + 2 < (int)len; i++)
		snprintf(out + 2 * i, 3, "%02x", uuid[i]);
}

/*
 * Describe device @d in @info as probe and adopt both do, after checking
 * that gpuopt can run on it. Returns 0, or a negative errno (-ENODEV: a
 * device gpuopt cannot use) with @why saying why.
 */
static int describe_device(cl_device_id d, struct gpo_device_info *info,
			   char *why, size_t wlen)
{
	char *name = NULL, *vendor = NULL, *driver = NULL, *ext = NULL;
	char *cver = NULL;
	cl_device_type type = 0;
	cl_bool unified = CL_FALSE, avail = CL_FALSE, compiler = CL_FALSE;
	cl_uint cu = 0;
	cl_ulong mem = 0;
	size_t wg = 0;
	cl_int err;
	int ret = -EIO;

	name = dev_str(d, CL_DEVICE_NAME, &err);
	if (name)
		vendor = dev_str(d, CL_DEVICE_VENDOR, &err);
	if (vendor)
		driver = dev_str(d, CL_DRIVER_VERSION, &err);
	if (driver)
		ext = dev_str(d, CL_DEVICE_EXTENSIONS, &err);
	if (ext)
		cver = dev_str(d, CL_DEVICE_OPENCL_C_VERSION, &err);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_TYPE, sizeof(type), &type,
				      NULL);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_AVAILABLE, sizeof(avail),
				      &avail, NULL);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_COMPILER_AVAILABLE,
				      sizeof(compiler), &compiler, NULL);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_MAX_COMPUTE_UNITS,
				      sizeof(cu), &cu, NULL);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_GLOBAL_MEM_SIZE,
				      sizeof(mem), &mem, NULL);
	if (!err)
		err = clGetDeviceInfo(d, CL_DEVICE_MAX_WORK_GROUP_SIZE,
				      sizeof(wg), &wg, NULL);
	if (!err && (type & CL_DEVICE_TYPE_GPU))
		err = clGetDeviceInfo(d, CL_DEVICE_HOST_UNIFIED_MEMORY,
				      sizeof(unified), &unified, NULL);
	if (err) {
		snprintf(why, wlen, "device query failed: %s (%d)",
			 cl_err_name(err), (int)err);
		goto out_free;
	}
	if (!avail || !compiler || cl_version_of(cver, "OpenCL C ") < 12 ||
	    wg < GPO_WG_SIZE) {
		snprintf(why, wlen, "%s: %s", name,
			 !avail ? "not available" :
			 !compiler ? "no OpenCL C compiler" :
			 wg < GPO_WG_SIZE ? "work-groups below 256" :
			 "no OpenCL C 1.2");
		ret = -ENODEV;
		goto out_free;
	}

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%s", name);
	snprintf(info->vendor, sizeof(info->vendor), "%s", vendor);
	snprintf(info->driver, sizeof(info->driver), "%s", driver);
	fill_uuid(d, ext, info->uuid, sizeof(info->uuid));
	if (type & CL_DEVICE_TYPE_GPU)
		info->type = unified ? GPO_DEVICE_INTEGRATED_GPU :
				       GPO_DEVICE_DISCRETE_GPU;
	else if (type & CL_DEVICE_TYPE_CPU)
		info->type = GPO_DEVICE_CPU_IMPL;
	else
		info->type = GPO_DEVICE_OTHER;
	info->compute_units = cu;
	info->mem_total_bytes = mem;
	ret = 0;
out_free:
	free(name);
	free(vendor);
	free(driver);
	free(ext);
	free(cver);
	return ret;
}

static struct ocl_dev *ocl_dev_new(cl_platform_id plat, cl_device_id d)
{
	struct ocl_dev *od = calloc(1, sizeof(*od));

	if (!od)
		return NULL;
	od->platform = plat;
	od->device = d;
	kernel_table(od);
	pthread_mutex_init(&od->lock, NULL);
	pthread_mutex_init(&od->xfer_lock, NULL);
	return od;
}

static void ocl_dev_free(struct ocl_dev *od)
{
	pthread_mutex_destroy(&od->lock);
	pthread_mutex_destroy(&od->xfer_lock);
	free(od);
}

/*
 * Describe device @d and register it. Returns 0, or a negative errno with
 * @why saying why the device is left out.
 */
static int probe_device(struct gpo_ctx *ctx, cl_platform_id plat,
			cl_device_id d, char *why, size_t wlen)
{
	struct gpo_device_info info;
	struct ocl_dev *od;
	int ret;

	ret = describe_device(d, &info, why, wlen);
	if (ret)
		return ret;
	od = ocl_dev_new(plat, d);
	if (!od) {
		snprintf(why, wlen, "%s: out of memory", info.name);
		return -ENOMEM;
	}
	ret = gpo__ctx_add_device(ctx, &gpo__opencl_backend_ops, &info, od);
	if (ret) {
		snprintf(why, wlen, "%s: cannot register: %s", info.name,
			 strerror(-ret));
		ocl_dev_free(od);
	}
	return ret;
}

static void probe_platform(struct gpo_ctx *ctx, cl_platform_id plat,
			   unsigned int index)
{
	cl_device_id *devs;
	cl_uint nd = 0, i;
	char why[256];
	cl_int err;

	err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
	if (err == CL_DEVICE_NOT_FOUND || (!err && !nd))
		return;
	if (err) {
		gpo__ctx_log(ctx, "opencl: platform %u skipped: clGetDeviceIDs: %s (%d)",
			index, cl_err_name(err), (int)err);
		return;
	}
	devs = calloc(nd, sizeof(*devs));
	if (!devs) {
		gpo__ctx_log(ctx, "opencl: platform %u skipped: out of memory",
			index);
		return;
	}
	err = clGetDeviceIDs(plat, CL_DEVICE_TYPE_ALL, nd, devs, &nd);
	if (err)
		gpo__ctx_log(ctx, "opencl: platform %u skipped: clGetDeviceIDs: %s (%d)",
			index, cl_err_name(err), (int)err);
	for (i = 0; !err && i < nd; i++)
		if (probe_device(ctx, plat, devs[i], why, sizeof(why)))
			gpo__ctx_log(ctx, "opencl: platform %u device %u skipped: %s",
				index, i, why);
	free(devs);
}

static int ocl_probe(struct gpo_ctx *ctx)
{
	cl_platform_id *plats;
	cl_uint np = 0, i;
	cl_int err;

	err = clGetPlatformIDs(0, NULL, &np);
	/* no ICD installed is not an error: there is just nothing here */
	if (err == CL_PLATFORM_NOT_FOUND_KHR || (!err && !np))
		return 0;
	if (err)
		return gpo__err(-EIO, "opencl: clGetPlatformIDs: %s (%d)",
			       cl_err_name(err), (int)err);
	plats = calloc(np, sizeof(*plats));
	if (!plats)
		return gpo__err(-ENOMEM, "out of memory");
	err = clGetPlatformIDs(np, plats, &np);
	if (err) {
		free(plats);
		return gpo__err(-EIO, "opencl: clGetPlatformIDs: %s (%d)",
			       cl_err_name(err), (int)err);
	}
	for (i = 0; i < np; i++)
		probe_platform(ctx, plats[i], i);
	free(plats);
	return 0;
}

/* ---- program sources --------------------------------------------------- */

/*
 * OpenCL C has no files to include from: the library embeds kernels/
 * (tools/embed.sh names each entry by its path there) and a program's
 * source is assembled here, each `#include "name"` line replaced by the
 * embedded file, looked up beside the including file first and then from
 * kernels/, as a C compiler with -Ikernels would. Include guards make
 * repeats harmless; #line keeps the build log's file names and lines.
 */
#define INCLUDE_DEPTH_MAX	8
#define SRC_NAME_MAX		128

struct src_text {
	char *data;
	size_t len;
	size_t cap;
};

static int src_add(struct src_text *t, const char *s, size_t len)
{
	if (t->len + len + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 16384;
		char *p;

		while (t->len + len + 1 > cap)
			cap *= 2;
		p = realloc(t->data, cap);
		if (!p)
			return gpo__err(-ENOMEM, "out of memory");
		t->data = p;
		t->cap = cap;
	}
	memcpy(t->data + t->len, s, len);
	t->len += len;
	t->data[t->len] = '\0';
	return 0;
}

/* #line @line "@name": the build log names the file and line it means */
static int src_line_mark(struct src_text *t, unsigned int line,
			 const char *name)
{
	char num[32];
	int ret;

	snprintf(num, sizeof(num), "#line %u \"", line);
	ret = src_add(t, num, strlen(num));
	if (!ret)
		ret = src_add(t, name, strlen(name));
	if (!ret)
		ret = src_add(t, "\"\n", 2);
	return ret;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/*
 * If the line [p, end) is an #include "name", copy the name to @name:
 * returns 1, 0 for any other line, or -1 for an #include this expander
 * cannot follow (no closing quote, or a name too long). An #include
 * <name> is left to the compiler: abi.h has one for C, in a branch
 * OpenCL C never takes.
 */
static int include_name(const char *p, const char *end, char *name,
			size_t len)
{
	const char *q;

	p = skip_blanks(p, end);
	if (p == end || *p != '#')
		return 0;
	p = skip_blanks(p + 1, end);
	if (end - p < 7 || strncmp(p, "include", 7))
		return 0;
	p = skip_blanks(p + 7, end);
	if (p < end && *p == '<')
		return 0;
	if (p == end || *p != '"')
		return -1;
	q = memchr(p + 1, '"', end - p - 1);
	if (!q || q == p + 1 || (size_t)(q - p - 1) >= len)
		return -1;
	memcpy(name, p + 1, q - p - 1);
	name[q - p - 1] = '\0';
	return 1;
}

/* The embedded file @name as included from @from: beside it, else top. */
static const struct embedded_file *find_include(const char *from,
						const char *name)
{
	const char *slash = strrchr(from, '/');
	char path[2 * SRC_NAME_MAX];

	if (slash && snprintf(path, sizeof(path), "%.*s/%s",
			      (int)(slash - from), from, name) <
		     (int)sizeof(path)) {
		const struct embedded_file *f;

		f = gpo__embedded_find(gpo__embedded_cl, path);
		if (f)
			return f;
	}
	return gpo__embedded_find(gpo__embedded_cl, name);
}

/* Append @f to @t with its includes expanded, @depth files deep. */
static int src_expand(struct src_text *t, const struct embedded_file *f,
		      int depth)
{
	const char *p = (const char *)f->data, *end = p + f->size;
	char name[SRC_NAME_MAX];
	unsigned int line = 1;
	int ret;

	ret = src_line_mark(t, 1, f->name);
	while (!ret && p < end) {
		const char *eol = memchr(p, '\n', end - p);
		const char *next = eol ? eol + 1 : end;
		const struct embedded_file *inc;

		switch (include_name(p, eol ? eol : end, name, sizeof(name))) {
		case 0:
			ret = src_add(t, p, next - p);
			if (!ret && !eol)
				ret = src_add(t, "\n", 1);
			break;
		case 1:
			inc = find_include(f->name, name);
			if (!inc)
				return gpo__err(-EIO, "opencl: %s:%u: #include \"%s\": no such embedded kernel source",
						f->name, line, name);
			if (depth + 1 >= INCLUDE_DEPTH_MAX)
				return gpo__err(-EIO, "opencl: %s:%u: #include \"%s\": nested more than %d deep (an include cycle?)",
						f->name, line, name,
						INCLUDE_DEPTH_MAX);
			ret = src_expand(t, inc, depth + 1);
			if (!ret)
				ret = src_line_mark(t, line + 1, f->name);
			break;
		default:
			return gpo__err(-EIO, "opencl: %s:%u: a malformed #include",
					f->name, line);
		}
		p = next;
		line++;
	}
	return ret;
}

/*
 * The source of @family's program: common.cl, then
 * opencl/<family>/<family>.cl, includes expanded. Returns 0 with a
 * malloc'ed text in *@src, or -errno.
 */
static int program_source(const char *family, char **src, size_t *len)
{
	const struct embedded_file *common, *fam;
	struct src_text t = { NULL, 0, 0 };
	char path[SRC_NAME_MAX];
	int ret;

	snprintf(path, sizeof(path), "opencl/%s/%s.cl", family, family);
	common = gpo__embedded_find(gpo__embedded_cl, "opencl/common.cl");
	fam = gpo__embedded_find(gpo__embedded_cl, path);
	if (!common || !fam)
		return gpo__err(-EIO, "opencl: no embedded kernel source %s",
				common ? path : "opencl/common.cl");
	ret = src_expand(&t, common, 0);
	if (!ret)
		ret = src_expand(&t, fam, 0);
	if (ret) {
		free(t.data);
		return ret;
	}
	*src = t.data;
	*len = t.len;
	return 0;
}

/* ---- programs and kernels, built on first use ------------------------- */

/*
 * The -D that picks a dtype's element type T in common.cl, for the dtypes
 * the kernels can be built for. f16 and bf16 need no device extension
 * (stored as ushort, converted with vload_half or shifts); so far their
 * programs are the update kernels' for half parameters (ops.c's
 * DT_PARAM: only ops whose descriptor names the dtype are launched in
 * it). u8 and i64 are missing only because no kernel has them yet.
 */
static const char *const dtype_define[GPO_DTYPES] = {
	[GPO_F32] = "GPO_DTYPE_F32",
	[GPO_F16] = "GPO_DTYPE_F16",
	[GPO_BF16] = "GPO_DTYPE_BF16",
	[GPO_I32] = "GPO_DTYPE_I32",
};

/*
 * What supports() answers, found without building: whether the kernel of
 * an op is in its family's embedded source (opencl/<family>/<family>.cl,
 * not the files it includes) for a dtype. A kernel is a line starting
 * `KERNEL void <name>(` (or `__kernel`), and counts unless it sits in a
 * branch of an #if on GPO_DTYPE_xxx that the dtype's build leaves out:
 * conditions of the forms #ifdef, #ifndef, #if [!]defined(GPO_DTYPE_xxx)
 * and #elif of that are followed; any other condition may be true or not,
 * and neither its branches nor its #else hide a kernel.
 */
enum cond { COND_FALSE, COND_TRUE, COND_UNKNOWN };

#define IF_DEPTH_MAX	16

/* @p points at the macro name of a condition on @define (or not) */
static enum cond cond_name(const char *p, const char *end, const char *define,
			   int negate, int paren)
{
	const char *q = p;
	enum cond c;

	while (q < end && (*q == '_' || (*q >= 'A' && *q <= 'Z') ||
			   (*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9')))
		q++;
	if (q == p || q - p < 10 || strncmp(p, "GPO_DTYPE_", 10))
		return COND_UNKNOWN;
	c = (size_t)(q - p) == strlen(define) && !strncmp(p, define, q - p) ?
	    COND_TRUE : COND_FALSE;
	q = skip_blanks(q, end);
	if (paren) {
		if (q == end || *q != ')')
			return COND_UNKNOWN;
		q = skip_blanks(q + 1, end);
	}
	/* anything after the name (&&, ||, a comment) is not followed */
	if (q != end)
		return COND_UNKNOWN;
	return negate ? (c == COND_TRUE ? COND_FALSE : COND_TRUE) : c;
}

/* The expression of an #if or #elif: [!]defined(NAME) or defined NAME */
static enum cond cond_expr(const char *p, const char *end, const char *define)
{
	int negate = 0, paren = 0;

	p = skip_blanks(p, end);
	if (p < end && *p == '!') {
		negate = 1;
		p = skip_blanks(p + 1, end);
	}
	if (end - p < 7 || strncmp(p, "defined", 7))
		return COND_UNKNOWN;
	p = skip_blanks(p + 7, end);
	if (p < end && *p == '(') {
		paren = 1;
		p = skip_blanks(p + 1, end);
	}
	return cond_name(p, end, define, negate, paren);
}

/* Does the line [p, end) start with @word, then a blank or the end? */
static const char *word_at(const char *p, const char *end, const char *word)
{
	size_t len = strlen(word);

	if ((size_t)(end - p) < len || strncmp(p, word, len))
		return NULL;
	p += len;
	if (p < end && *p != ' ' && *p != '\t' && *p != '(')
		return NULL;
	return p;
}

static int kernel_in_source(const struct embedded_file *f, const char *name,
			    const char *define)
{
	const char *p = (const char *)f->data, *end = p + f->size;
	/* per #if level: a branch of it may be compiled; one surely was */
	unsigned char possible[IF_DEPTH_MAX], taken[IF_DEPTH_MAX];
	int depth = 0, hidden = 0, i;

	while (p < end) {
		const char *eol = memchr(p, '\n', end - p);
		const char *next = eol ? eol + 1 : end, *q, *r;
		enum cond c = COND_UNKNOWN;

		if (!eol)
			eol = end;
		q = skip_blanks(p, eol);
		if (q < eol && *q == '#') {
			q = skip_blanks(q + 1, eol);
			if ((r = word_at(q, eol, "ifdef")) ||
			    (r = word_at(q, eol, "ifndef"))) {
				c = cond_name(skip_blanks(r, eol), eol, define,
					      q[2] == 'n', 0);
				goto push;
			} else if ((r = word_at(q, eol, "if"))) {
				c = cond_expr(r, eol, define);
push:
				if (depth == IF_DEPTH_MAX)
					return 1;	/* unknown: say yes */
				possible[depth] = c != COND_FALSE;
				taken[depth++] = c == COND_TRUE;
			} else if ((r = word_at(q, eol, "elif")) && depth) {
				c = cond_expr(r, eol, define);
				possible[depth - 1] = !taken[depth - 1] &&
						      c != COND_FALSE;
				taken[depth - 1] |= c == COND_TRUE;
			} else if (word_at(q, eol, "else") && depth) {
				possible[depth - 1] = !taken[depth - 1];
				taken[depth - 1] = 1;
			} else if (word_at(q, eol, "endif") && depth) {
				depth--;
			}
			hidden = 0;
			for (i = 0; i < depth; i++)
				hidden |= !possible[i];
		} else if (!hidden && ((r = word_at(q, eol, "KERNEL")) ||
				       (r = word_at(q, eol, "__kernel")))) {
			r = skip_blanks(r, eol);
			if ((r = word_at(r, eol, "void"))) {
				r = skip_blanks(r, eol);
				if ((r = word_at(r, eol, name)) &&
				    (r = skip_blanks(r, eol)) < eol && *r == '(')
					return 1;
			}
		}
		p = next;
	}
	return 0;
}

/* Fill od->has_kernel from the embedded sources (at probe) */
static void kernel_table(struct ocl_dev *od)
{
	char path[SRC_NAME_MAX];
	int op, dt;

	if (!gpo__embedded_find(gpo__embedded_cl, "opencl/common.cl"))
		return;
	for (op = 0; op < OP_COUNT; op++) {
		const struct embedded_file *fam;

		snprintf(path, sizeof(path), "opencl/%s/%s.cl",
			 gpo__ops[op].family, gpo__ops[op].family);
		fam = gpo__embedded_find(gpo__embedded_cl, path);
		for (dt = 0; fam && dt < GPO_DTYPES; dt++)
			od->has_kernel[op][dt] = dtype_define[dt] &&
				kernel_in_source(fam, gpo__ops[op].name,
						 dtype_define[dt]);
	}
}

static void build_options(cl_device_id d, enum gpo_dtype dtype, char *buf,
			  size_t len)
{
	cl_device_fp_config fp = 0;

	/*
	 * Division and sqrt may be 2.5 and 3 ulp off by default; correctly
	 * rounded ones give the cpu backend's results bit for bit, at no
	 * cost to kernels that wait on memory. Without them, precision.cl's
	 * cr_div and cr_sqrt compute the correctly rounded results in
	 * integer arithmetic; with them (GPO_CR_DIVSQRT), they are / and sqrt.
	 * Only with denormals too: a flushed subnormal quotient is not the
	 * IEEE one.
	 */
	clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, NULL);
	snprintf(buf, len, "-cl-std=CL1.2%s -D%s",
		 (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) &&
		 (fp & CL_FP_DENORM) ?
		 " -cl-fp32-correctly-rounded-divide-sqrt -DGPO_CR_DIVSQRT" :
		 "",
		 dtype_define[dtype]);
}

/* The cache key: source, options, device, driver and platform. */
static uint64_t program_key(const struct gpo_device *dev, cl_platform_id plat,
			    const char *src, size_t len, const char *opts)
{
	const char *driver = dev->info.driver;
	char pver[256] = "";
	uint64_t key;

	/* adopted or probed, one device runs the same binaries */
	if (dev->adopted && !strncmp(driver, ADOPTED_PREFIX,
				     strlen(ADOPTED_PREFIX)))
		driver += strlen(ADOPTED_PREFIX);
	clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(pver) - 1, pver,
			  NULL);
	key = gpo__diskcache_key(0, src, len);
	key = gpo__diskcache_key_str(key, opts);
	key = gpo__diskcache_key_str(key, dev->info.name);
	key = gpo__diskcache_key_str(key, driver);
	return gpo__diskcache_key_str(key, pver);
}

/* The op whose slot holds its family's programs: the family's first. */
static enum gpo__op_id family_slot(enum gpo__op_id op)
{
	int i;

	for (i = 0; i < (int)op; i++)
		if (!strcmp(gpo__ops[i].family, gpo__ops[op].family))
			return i;
	return op;
}

static void release_kernels(struct ocl_dev *od)
{
	int op, dt;

	if (od->big16)
		clReleaseKernel(od->big16);
	od->big16 = NULL;
	for (op = 0; op < OP_COUNT; op++) {
		for (dt = 0; dt < GPO_DTYPES; dt++) {
			if (od->kernels[op][dt])
				clReleaseKernel(od->kernels[op][dt]);
			od->kernels[op][dt] = NULL;
			if (od->programs[op][dt])
				clReleaseProgram(od->programs[op][dt]);
			od->programs[op][dt] = NULL;
		}
	}
}

/* The build log, shortened to fit an error message. */
static void build_log(struct ocl_dev *od, cl_program prog, char *buf,
		      size_t len)
{
	size_t size = 0;
	char *log;

	buf[0] = '\0';
	if (clGetProgramBuildInfo(prog, od->device, CL_PROGRAM_BUILD_LOG, 0,
				  NULL, &size) || !size)
		return;
	log = malloc(size + 1);
	if (!log)
		return;
	if (!clGetProgramBuildInfo(prog, od->device, CL_PROGRAM_BUILD_LOG,
				   size, log, NULL)) {
		log[size] = '\0';
		snprintf(buf, len, "%s", log);
	}
	free(log);
}

/*
 * A program from the cached binary, checked to have every kernel of
 * @family; NULL to build from source (missing, damaged or stale).
 */
static cl_program program_from_cache(struct ocl_dev *od, uint64_t key,
				     const char *opts, const char *family)
{
	const unsigned char *bin;
	cl_program prog;
	cl_int err, status;
	size_t size;
	void *data;
	int op;

	if (gpo__diskcache_load("opencl", key, &data, &size))
		return NULL;
	bin = data;
	prog = clCreateProgramWithBinary(od->context, 1, &od->device, &size,
					 &bin, &status, &err);
	free(data);
	if (!prog)
		return NULL;
	err = clBuildProgram(prog, 1, &od->device, opts, NULL, NULL);
	for (op = 0; !err && op < OP_COUNT; op++) {
		cl_kernel k;

		if (strcmp(gpo__ops[op].family, family))
			continue;
		k = clCreateKernel(prog, gpo__ops[op].name, &err);
		if (k)
			clReleaseKernel(k);
	}
	if (err) {
		clReleaseProgram(prog);
		return NULL;
	}
	return prog;
}

/* Store the built program's binary; the cache is optional: no errors. */
static void program_to_cache(cl_program prog, uint64_t key)
{
	unsigned char *bin;
	size_t size = 0;

	if (clGetProgramInfo(prog, CL_PROGRAM_BINARY_SIZES, sizeof(size),
			     &size, NULL) || !size)
		return;
	bin = malloc(size);
	if (!bin)
		return;
	if (!clGetProgramInfo(prog, CL_PROGRAM_BINARIES, sizeof(bin), &bin,
			      NULL))
		gpo__diskcache_store("opencl", key, bin, size);
	free(bin);
}

/* Build @family's program for @dtype: from the disk cache, else source. */
static int build_program(struct gpo_device *dev, struct ocl_dev *od,
			 const char *family, enum gpo_dtype dtype,
			 cl_program *out)
{
	char opts[160], log[BUILD_LOG_MAX + 1];
	const char *srcp;
	cl_program prog;
	size_t len;
	uint64_t key;
	cl_int err;
	char *src = NULL;
	int ret;

	ret = program_source(family, &src, &len);
	if (ret)
		return ret;
	build_options(od->device, dtype, opts, sizeof(opts));
	key = program_key(dev, od->platform, src, len, opts);
	/* a damaged or stale entry is rebuilt below and overwritten */
	prog = program_from_cache(od, key, opts, family);
	if (prog)
		goto out_done;

	srcp = src;
	prog = clCreateProgramWithSource(od->context, 1, &srcp, &len, &err);
	if (!prog) {
		ret = cl_fail(dev, err, 0, "clCreateProgramWithSource");
		goto out_free;
	}
	err = clBuildProgram(prog, 1, &od->device, opts, NULL, NULL);
	if (err) {
		build_log(od, prog, log, sizeof(log));
		ret = gpo__err(-EIO, "%s (%s): cannot build the %s kernels (%s): %s: %s",
			       dev->info.id, dev->info.name, family,
			       dtype_define[dtype], cl_err_name(err), log);
		clReleaseProgram(prog);
		goto out_free;
	}
	program_to_cache(prog, key);
out_done:
	*out = prog;
out_free:
	free(src);
	return ret;
}

/*
 * deep - does @call, a matmul_big, run as matmul_big16 (steps 16 deep, not
 * 8; kernels/opencl/matmul/matmul.cl)? For tall, narrow products: n at
 * most 3 tiles wide and m at least 8 n. On an H200 (2026-11-29,
 * bench/results/issue11-h200-2026-11-29.txt, call 42) the byte GPT's
 * products of 16384 x 384 over k = 384, 1152 and 1536 ran 11-17 % faster
 * 16 deep; 1152 x 384 over 16 slices of 1024, 16384 x 1536 over 384 and
 * SGEMM 4096 ran 10-14 % slower.
 */
static int deep(const struct op_call *call)
{
	const struct gpo_matmul_args *a = call->args;

	return call->op == OP_MATMUL_BIG && call->dtype == GPO_F32 && a &&
	       a->n <= 3 * GPO_MM_TILE_BIG && a->m / 8 >= a->n;
}

/*
 * The kernel @call runs (its op's in its dtype, or matmul_big16 where
 * deep()), made on first use from its family's program, which is built on
 * first use of any of its ops; @ka, the arguments it was last given.
 * Under od->lock: the arrays are the device's, whoever launches.
 */
static int get_kernel(struct gpo_device *dev, struct ocl_dev *od,
		      const struct op_call *call, cl_kernel *out,
		      struct kern_args **ka)
{
	enum gpo__op_id op = call->op, fam = family_slot(op);
	enum gpo_dtype dtype = call->dtype;
	int d = deep(call);
	const char *name = d ? "matmul_big16" : gpo__ops[op].name;
	cl_kernel *slot = d ? &od->big16 : &od->kernels[op][dtype];
	cl_int err;
	int ret = 0;

	*ka = d ? &od->big16_args : &od->kargs[op][dtype];
	pthread_mutex_lock(&od->lock);
	if (*slot)
		goto out_unlock;
	if (!od->programs[fam][dtype]) {
		ret = build_program(dev, od, gpo__ops[op].family, dtype,
				    &od->programs[fam][dtype]);
		if (ret)
			goto out_unlock;
	}
	*slot = clCreateKernel(od->programs[fam][dtype], name, &err);
	if (!*slot)
		ret = cl_fail(dev, err, 0, name);
out_unlock:
	*out = *slot;
	pthread_mutex_unlock(&od->lock);
	return ret;
}

/* ---- open and close ---------------------------------------------------- */

/* Release what open made; what probe stored stays. */
static void teardown(struct ocl_dev *od)
{
	int i;

	for (i = 0; i < XFER_SLOTS; i++)
		if (od->slot_ev[i])
			clReleaseEvent(od->slot_ev[i]);
	memset(od->slot_ev, 0, sizeof(od->slot_ev));
	if (od->staging_map)
		clEnqueueUnmapMemObject(od->queue, od->staging,
					od->staging_map, 0, NULL, NULL);
	if (od->queue)
		clFinish(od->queue);
	od->staging_map = NULL;
	if (od->staging)
		clReleaseMemObject(od->staging);
	od->staging = NULL;
	if (od->first)
		clReleaseEvent(od->first);
	if (od->last)
		clReleaseEvent(od->last);
	if (od->tail)
		clReleaseEvent(od->tail);
	od->first = od->last = od->tail = NULL;
	memset(od->kargs, 0, sizeof(od->kargs));
	memset(&od->big16_args, 0, sizeof(od->big16_args));
	release_kernels(od);
	if (od->dummy)
		clReleaseMemObject(od->dummy);
	od->dummy = NULL;
	if (od->queue)
		clReleaseCommandQueue(od->queue);
	od->queue = NULL;
	if (od->context)
		clReleaseContext(od->context);
	od->context = NULL;
	/* a root device ignores this; a sub-device of the caller's does not */
	if (od->adopted)
		clReleaseDevice(od->device);
}

/*
 * The staging slots' size: GPUOPT_OPENCL_DEBUG=staging=BYTES (the whole
 * staging buffer, as GPUOPT_VULKAN_DEBUG's) sends smaller transfers
 * through them, for tests.
 */
static uint64_t staging_slot(void)
{
	const char *env = getenv("GPUOPT_OPENCL_DEBUG");
	const char *p = env ? strstr(env, "staging=") : NULL;
	uint64_t bytes = p ? strtoull(p + 8, NULL, 0) : 0;

	if (bytes < 4096 || bytes > XFER_SLOTS * XFER_SLOT_BYTES)
		return XFER_SLOT_BYTES;
	return bytes / XFER_SLOTS;
}

static int ocl_open(struct gpo_device *dev)
{
	struct ocl_dev *od = dev->priv;
	cl_context_properties props[] = {
		CL_CONTEXT_PLATFORM, (cl_context_properties)od->platform, 0
	};
	cl_uint align_bits = 0;
	cl_ulong max_alloc = 0;
	cl_int err;
	int ret;

	err = clGetDeviceInfo(od->device, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
			      sizeof(align_bits), &align_bits, NULL);
	if (!err)
		err = clGetDeviceInfo(od->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
				      sizeof(max_alloc), &max_alloc, NULL);
	if (err)
		return cl_fail(dev, err, 0, "clGetDeviceInfo");

	if (od->adopted) {
		/* checked by adopt; released by teardown as if made here */
		clRetainDevice(od->device);
		clRetainContext(od->context);
		clRetainCommandQueue(od->queue);
		goto out_dummy;
	}
	od->context = clCreateContext(props, 1, &od->device, NULL, NULL,
				      &err);
	if (!od->context)
		return cl_fail(dev, err, 0, "clCreateContext");
	od->queue = clCreateCommandQueue(od->context, od->device,
					 CL_QUEUE_PROFILING_ENABLE, &err);
	if (!od->queue) {
		ret = cl_fail(dev, err, 0, "clCreateCommandQueue");
		goto out_teardown;
	}
out_dummy:
	od->dummy = clCreateBuffer(od->context, CL_MEM_READ_WRITE,
				   DUMMY_BYTES, NULL, &err);
	if (!od->dummy) {
		ret = cl_fail(dev, err, 0, "clCreateBuffer (dummy)");
		goto out_teardown;
	}
	dev->mem_align = align_bits / 8 > 256 ? align_bits / 8 : 256;
	dev->max_alloc = max_alloc;
	/*
	 * only our own queue: the caller's work on an adopted one must
	 * finish at a wait too, which only clFinish() tells
	 */
	od->in_order = !od->adopted;
	/* on a CPU implementation polling takes a core from its workers */
	od->spin_ns = dev->info.type == GPO_DEVICE_CPU_IMPL ? 0 : SPIN_NS;
	od->slot_size = staging_slot();
	return 0;

out_teardown:
	teardown(od);
	return ret;
}

/* Also for a device that was probed but never opened. */
static void ocl_close(struct gpo_device *dev)
{
	struct ocl_dev *od = dev->priv;

	if (!od)
		return;
	/* an adopted queue's: the caller's work before ours finishes too */
	if (od->queue)
		clFinish(od->queue);
	teardown(od);
	ocl_dev_free(od);
	dev->priv = NULL;
}

/* ---- memory ------------------------------------------------------------ */

static int ocl_alloc(struct gpo_device *dev, uint64_t bytes,
		     struct dev_mem **out)
{
	struct ocl_dev *od = dev->priv;
	struct dev_mem *mem;
	cl_int err;
	int ret;

	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	mem->mem = clCreateBuffer(od->context, CL_MEM_READ_WRITE, bytes, NULL,
				  &err);
	if (!mem->mem) {
		ret = cl_fail(dev, err, 1, "clCreateBuffer");
		goto out_free;
	}
	/*
	 * Drivers may allocate lazily, at the first kernel that uses the
	 * buffer; placing it on the device now makes running out of memory
	 * an allocation failure (-ENOMEM) instead of a failed step.
	 */
	err = clEnqueueMigrateMemObjects(od->queue, 1, &mem->mem,
				CL_MIGRATE_MEM_OBJECT_CONTENT_UNDEFINED, 0, NULL,
				NULL);
	if (!err)
		err = clFinish(od->queue);
	if (err) {
		ret = cl_fail(dev, err, 1, "placing a new buffer");
		goto out_release;
	}
	mem->size = bytes;
	*out = mem;
	return 0;

out_release:
	clReleaseMemObject(mem->mem);
out_free:
	free(mem);
	return ret;
}

static void ocl_free(struct gpo_device *dev, struct dev_mem *mem)
{
	if (!mem)
		return;
	/* OpenCL keeps the memory until the kernels using it are done */
	clReleaseMemObject(mem->mem);
	free(mem);
	((struct ocl_dev *)dev->priv)->free_gen++;
}

/* ---- transfers --------------------------------------------------------- */

/*
 * Pinned memory: a CL_MEM_ALLOC_HOST_PTR buffer mapped for its life. The
 * transfers below read and write its mapped pointer, which NVIDIA's
 * driver recognises as page-locked and copies by DMA.
 */
static int map_pinned(struct gpo_device *dev, uint64_t bytes, cl_mem *mem,
		      unsigned char **map)
{
	struct ocl_dev *od = dev->priv;
	cl_int err;
	void *p;

	if (dev->max_alloc && bytes > dev->max_alloc)
		return gpo__err(-ENOMEM, "%s (%s): %llu bytes of pinned memory: more than one buffer may hold (%llu)",
			       dev->info.id, dev->info.name,
			       (unsigned long long)bytes,
			       (unsigned long long)dev->max_alloc);
	*mem = clCreateBuffer(od->context, CL_MEM_READ_WRITE |
			      CL_MEM_ALLOC_HOST_PTR, bytes, NULL, &err);
	if (!*mem)
		return cl_fail(dev, err, 1, "clCreateBuffer (pinned)");
	p = clEnqueueMapBuffer(od->queue, *mem, CL_TRUE,
			       CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, NULL,
			       NULL, &err);
	if (!p) {
		clReleaseMemObject(*mem);
		*mem = NULL;
		return cl_fail(dev, err, 1, "clEnqueueMapBuffer (pinned)");
	}
	*map = p;
	return 0;
}

static int ocl_host_alloc(struct gpo_device *dev, struct host_mem *hm)
{
	cl_mem mem;
	int ret;

	ret = map_pinned(dev, hm->size, &mem, &hm->ptr);
	if (!ret)
		hm->priv = mem;
	return ret;
}

static void ocl_host_free(struct gpo_device *dev, struct host_mem *hm)
{
	struct ocl_dev *od = dev->priv;
	cl_mem mem = hm->priv;

	/* copies from or to it may be queued: the unmap comes after them */
	clEnqueueUnmapMemObject(od->queue, mem, hm->ptr, 0, NULL, NULL);
	clFinish(od->queue);
	clReleaseMemObject(mem);
}

/* slot_wait - wait for slot @i's copy, if any; its status */
static cl_int slot_wait(struct ocl_dev *od, int i)
{
	cl_int err;

	if (!od->slot_ev[i])
		return CL_SUCCESS;
	err = clWaitForEvents(1, &od->slot_ev[i]);
	if (!err)
		err = event_status(od->slot_ev[i]);
	clReleaseEvent(od->slot_ev[i]);
	od->slot_ev[i] = NULL;
	return err;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static cl_int slot_enqueue(struct ocl_dev *od, cl_mem mem, uint64_t off,
			   int i, uint64_t len, int write)
{
	unsigned char *map = od->staging_map + (uint64_t)i * od->slot_size;

	return write ? clEnqueueWriteBuffer(od->queue, mem, CL_FALSE, off, len,
					    map, 0, NULL, &od->slot_ev[i]) :
		       clEnqueueReadBuffer(od->queue, mem, CL_FALSE, off, len,
					   map, 0, NULL, &od->slot_ev[i]);
}

/*
 * transfer_slots - chunk k through slot k % XFER_SLOTS: the host copies
 * one chunk into or out of staging while the queue copies the others.
 * Every slot is idle on return. Under od->xfer_lock.
 */
static int transfer_slots(struct gpo_device *dev, cl_mem mem, uint64_t off,
			  unsigned char *host, uint64_t bytes, int write)
{
	struct ocl_dev *od = dev->priv;
	const uint64_t size = od->slot_size, n = (bytes + size - 1) / size;
	uint64_t k, next = 0;
	cl_int err = CL_SUCCESS, e;
	int i, ret;

	if (!od->staging) {
		ret = map_pinned(dev, size * XFER_SLOTS, &od->staging,
				 &od->staging_map);
		if (ret)
			return ret;
	}
	for (k = 0; k < n && !err; k++) {
		unsigned char *map;
		uint64_t pos = k * size, len = min_u64(size, bytes - pos);

		i = (int)(k % XFER_SLOTS);
		map = od->staging_map + (uint64_t)i * size;
		if (write) {
			err = slot_wait(od, i);
			if (err)
				break;
			gpo__host_copy(map, host + pos, len);
			err = slot_enqueue(od, mem, off + pos, i, len, 1);
			continue;
		}
		/* reads: every slot busy ahead of the host's copy */
		for (; !err && next < n && next < k + XFER_SLOTS; next++)
			err = slot_enqueue(od, mem, off + next * size,
					   (int)(next % XFER_SLOTS),
					   min_u64(size, bytes - next * size), 0);
		if (!err)
			err = slot_wait(od, i);
		if (!err)
			gpo__host_copy(host + pos, map, len);
	}
	for (i = 0; i < XFER_SLOTS; i++) {
		e = slot_wait(od, i);
		if (!err)
			err = e;
	}
	return err ? cl_fail(dev, err, 0, write ? "clEnqueueWriteBuffer" :
					       "clEnqueueReadBuffer") : 0;
}

/*
 * transfer - pinned memory (gpo_host_alloc) and transfers up to a slot
 * in one blocking copy from or to the caller's memory; larger pageable
 * ones through the slots. The queue is in order: after the kernels.
 */
static int transfer(struct gpo_device *dev, const struct dev_buf *b,
		    uint64_t off, unsigned char *host, uint64_t bytes,
		    int write)
{
	struct ocl_dev *od = dev->priv;
	struct host_mem hm;
	cl_int err;
	int ret;

	if (!bytes)
		return 0;
	off += b->off;
	if (bytes > od->slot_size && !gpo__host_find(dev, host, bytes, &hm)) {
		pthread_mutex_lock(&od->xfer_lock);
		ret = transfer_slots(dev, b->mem->mem, off, host, bytes, write);
		pthread_mutex_unlock(&od->xfer_lock);
		return ret;
	}
	if (write)
		err = clEnqueueWriteBuffer(od->queue, b->mem->mem, CL_TRUE, off,
					   bytes, host, 0, NULL, NULL);
	else
		err = clEnqueueReadBuffer(od->queue, b->mem->mem, CL_TRUE, off,
					  bytes, host, 0, NULL, NULL);
	if (err)
		return cl_fail(dev, err, 0, write ? "clEnqueueWriteBuffer" :
						    "clEnqueueReadBuffer");
	return 0;
}

static int ocl_write(struct gpo_device *dev, const struct dev_buf *dst,
		     uint64_t off, const void *src, uint64_t bytes)
{
	/* transfer() only reads @src when it writes */
	return transfer(dev, dst, off, (unsigned char *)src, bytes, 1);
}

static int ocl_read(struct gpo_device *dev, const struct dev_buf *src,
		    uint64_t off, void *dst, uint64_t bytes)
{
	return transfer(dev, src, off, dst, bytes, 0);
}

static uint64_t ocl_mem_free(struct gpo_device *dev)
{
	/* core OpenCL cannot tell */
	return 0;
}

/* ---- launches --------------------------------------------------------- */

/*
 * 1 when @op's kernel is in its family's source for @dtype (kernel_table),
 * answered without building: a build can still fail, at the first launch.
 */
static int ocl_supports(struct gpo_device *dev, enum gpo__op_id op,
			enum gpo_dtype dtype)
{
	struct ocl_dev *od = dev->priv;

	return (unsigned int)op < OP_COUNT &&
	       (unsigned int)dtype < GPO_DTYPES && od->has_kernel[op][dtype];
}

/* The global size of a launch of @op over @work (> 0). */
static size_t grid_size(const struct gpo__op *op, uint64_t work)
{
	size_t items;

	/* results are per group: exactly the groups asked for */
	if (op->grid == GRID_GROUPS)
		return (size_t)work * GPO_WG_SIZE;
	/* one work-item per float4 (the last one partial) */
	items = work / 4 + (work % 4 != 0);
	/* the kernels loop if the grid is short (never, below 2^32 floats) */
	if (items > MAX_ITEMS)
		items = MAX_ITEMS;
	return (items + GPO_WG_SIZE - 1) / GPO_WG_SIZE * GPO_WG_SIZE;
}

/*
 * Each buffer as its cl_mem and its offset in elements (common.cl's BUF),
 * then the family's parameter struct by value. Every element type the
 * kernels have is 4 bytes (float, int, uint).
 */
static int set_args(struct gpo_device *dev, cl_kernel kern,
		    struct kern_args *ka, const struct gpo__op *op,
		    const struct op_call *call)
{
	struct ocl_dev *od = dev->priv;
	int fresh = ka->gen != od->free_gen + 1;
	cl_uint arg = 0, i;
	cl_int err = 0;

	for (i = 0; i < op->nbuf && !err; i++, arg += 2) {
		const struct dev_buf *b = &call->buf[i];
		cl_mem m = b->mem ? b->mem->mem : od->dummy;
		cl_ulong off = b->mem ? b->off / 4 : 0;

		if (b->off % 4) {
			ka->gen = 0;
			return gpo__err(-EINVAL, "%s: %s: buffer %s at offset %llu is not at a whole element",
					dev->info.id, op->name,
					op->buf[i].name,
					(unsigned long long)b->off);
		}
		if (fresh || ka->mem[i] != m)
			err = clSetKernelArg(kern, arg, sizeof(m), &m);
		if (!err && (fresh || ka->off[i] != off))
			err = clSetKernelArg(kern, arg + 1, sizeof(off), &off);
		ka->mem[i] = m;
		ka->off[i] = off;
	}
	if (!err && (fresh || memcmp(ka->args, call->args, op->args_size)))
		err = clSetKernelArg(kern, arg, op->args_size, call->args);
	if (err) {
		ka->gen = 0;
		return cl_fail(dev, err, 0, op->name);
	}
	memcpy(ka->args, call->args, op->args_size);
	ka->gen = od->free_gen + 1;
	return 0;
}

static int ocl_launch(struct gpo_device *dev, const struct op_call *call)
{
	const struct gpo__op *op = &gpo__ops[call->op];
	struct ocl_dev *od = dev->priv;
	size_t global, local = GPO_WG_SIZE;
	struct kern_args *ka;
	cl_kernel kern;
	cl_event ev;
	cl_int err;
	int ret;

	global = grid_size(op, call->work);
	ret = get_kernel(dev, od, call, &kern, &ka);
	if (ret)
		return ret;
	ret = set_args(dev, kern, ka, op, call);
	if (ret)
		return ret;
	err = clEnqueueNDRangeKernel(od->queue, kern, 1, NULL, &global, &local,
				     0, NULL, &ev);
	if (err)
		return cl_fail(dev, err, 0, op->name);
	/* keep the first and the latest: wait() times the span */
	if (!od->first) {
		od->first = ev;
	} else {
		if (od->last)
			clReleaseEvent(od->last);
		od->last = ev;
	}
	return 0;
}

/* A failed command shows as a negative execution status of its event. */
static cl_int event_status(cl_event ev)
{
	cl_int st = CL_COMPLETE, err;

	if (!ev)
		return CL_SUCCESS;
	err = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
			     sizeof(st), &st, NULL);
	if (err)
		return err;
	return st < 0 ? st : CL_SUCCESS;
}

/*
 * spin - poll @ev for about the last batch's time plus od->spin_ns:
 * 1 if it completed (or failed) meanwhile, 0 if not
 */
static int spin(struct ocl_dev *od, cl_event ev)
{
	uint64_t start = gpo__now_ns(), end;
	cl_int st;

	if (!od->spin_ns || !od->in_order ||
	    od->last_ns > 2 * od->spin_ns || clFlush(od->queue))
		return 0;
	end = start + od->last_ns + od->spin_ns;
	do {
		if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
				   sizeof(st), &st, NULL))
			return 0;
		if (st <= CL_COMPLETE)
			return 1;
	} while (gpo__now_ns() < end);
	return 0;
}

static int ocl_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct ocl_dev *od = dev->priv;
	cl_event end = od->last ? od->last : od->first;
	cl_event tail = od->tail ? od->tail : end;
	uint64_t t = gpo__now_ns();
	cl_ulong t0 = 0, t1 = 0;
	cl_int err = 0;

	if (device_ns)
		*device_ns = 0;
	/*
	 * In order, the last command done means all are (reads and writes
	 * between are blocking): no clFinish, which blocks and wakes late
	 */
	if (!tail || !spin(od, tail))
		err = clFinish(od->queue);
	if (tail)
		od->last_ns = gpo__now_ns() - t;
	if (!err)
		err = event_status(od->first);
	if (!err)
		err = event_status(od->last);
	if (!err)
		err = event_status(od->tail);
	if (!err && device_ns && od->first &&
	    !clGetEventProfilingInfo(od->first, CL_PROFILING_COMMAND_START,
				     sizeof(t0), &t0, NULL) &&
	    !clGetEventProfilingInfo(end, CL_PROFILING_COMMAND_END,
				     sizeof(t1), &t1, NULL) &&
	    t1 > t0)
		*device_ns = t1 - t0;
	if (od->first)
		clReleaseEvent(od->first);
	if (od->last)
		clReleaseEvent(od->last);
	if (od->tail)
		clReleaseEvent(od->tail);
	od->first = od->last = od->tail = NULL;
	return err ? cl_fail(dev, err, 0, "running kernels") : 0;
}

/*
 * Recorded steps, OpenCL's way: launches go to the queue as they come
 * (set_args() already sets only what changed); graph_end() puts the
 * readback of the step's scalars behind them, non-blocking, so a step is
 * one flush and one wait, and the host reads the scalars from @back after
 * it. Only the latest step's scalars are ever read, so
 * steps queued one after another may share @back. @back is pinned memory
 * where the driver gives it (a mapped CL_MEM_ALLOC_HOST_PTR buffer, which
 * a GPU writes by DMA instead of staging a read into pageable memory),
 * else @plain.
 */
#define GRAPH_BACK	64

struct dev_graph {
	float *back;
	cl_mem pin;			/* NULL: @back is @plain */
	float plain[GRAPH_BACK];
};

static int ocl_graph_begin(struct gpo_device *dev, struct dev_graph **g)
{
	struct ocl_dev *od = dev->priv;
	struct dev_graph *n;
	cl_int err;

	if (*g)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return gpo__err(-ENOMEM, "out of memory");
	n->back = n->plain;
	n->pin = clCreateBuffer(od->context, CL_MEM_ALLOC_HOST_PTR |
				CL_MEM_READ_WRITE, sizeof(n->plain), NULL,
				&err);
	if (n->pin) {
		void *map = clEnqueueMapBuffer(od->queue, n->pin, CL_TRUE,
					       CL_MAP_READ | CL_MAP_WRITE, 0,
					       sizeof(n->plain), 0, NULL,
					       NULL, &err);

		if (map) {
			n->back = map;
		} else {
			clReleaseMemObject(n->pin);
			n->pin = NULL;
		}
	}
	*g = n;
	return 0;
}

static int ocl_graph_end(struct gpo_device *dev, struct dev_graph *g,
			 int abort, const struct dev_buf *rb,
			 unsigned int nrb, const void **host)
{
	struct ocl_dev *od = dev->priv;
	cl_event ev = NULL;
	cl_int err = 0;
	unsigned int i;

	if (abort || !od->in_order)
		return 0;
	if (nrb && (nrb > GPO_RB_COUNT ||
		    gpo__rb_offset(rb, nrb) > sizeof(g->plain)))
		return 0;
	for (i = 0; i < nrb; i++)
		if (!rb[i].mem)
			return 0;
	for (i = 0; i < nrb; i++) {
		err = clEnqueueReadBuffer(od->queue, rb[i].mem->mem, CL_FALSE,
					  rb[i].off, rb[i].size,
					  (char *)g->back +
					  gpo__rb_offset(rb, i), 0, NULL,
					  i + 1 == nrb ? &ev : NULL);
		if (err)
			return cl_fail(dev, err, 0, "clEnqueueReadBuffer");
	}
	if (ev) {
		if (od->tail)
			clReleaseEvent(od->tail);
		od->tail = ev;
	}
	/* no flush: wait() flushes when it polls, submit() when asked */
	*host = nrb ? g->back : NULL;
	return 1;
}

static void ocl_graph_free(struct gpo_device *dev, struct dev_graph *g)
{
	struct ocl_dev *od = dev->priv;

	if (!g)
		return;
	/* a readback may still be writing into it */
	clFinish(od->queue);
	if (g->pin) {
		clEnqueueUnmapMemObject(od->queue, g->pin, g->back, 0, NULL,
					NULL);
		clFinish(od->queue);
		clReleaseMemObject(g->pin);
	}
	free(g);
}

/* the queue's commands go to the device; wait() finishes them */
static int ocl_submit(struct gpo_device *dev)
{
	struct ocl_dev *od = dev->priv;
	cl_int err = clFlush(od->queue);

	return err ? cl_fail(dev, err, 0, "clFlush") : 0;
}

/* ---- the caller's objects (interop) ----------------------------------- */

/*
 * Is @d one of @ctx's devices? Returns CL_SUCCESS and sets *@found, or
 * the error of the query (CL_INVALID_CONTEXT for a context that is not).
 */
static cl_int context_has_device(cl_context ctx, cl_device_id d, int *found)
{
	cl_device_id *devs;
	size_t size = 0, i;
	cl_int err;

	*found = 0;
	err = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, 0, NULL, &size);
	if (err)
		return err;
	devs = malloc(size ? size : 1);
	if (!devs)
		return CL_OUT_OF_HOST_MEMORY;
	err = clGetContextInfo(ctx, CL_CONTEXT_DEVICES, size, devs, NULL);
	for (i = 0; !err && i < size / sizeof(*devs); i++)
		if (devs[i] == d)
			*found = 1;
	free(devs);
	return err;
}

/* -EINVAL for what the caller handed in, -ENOMEM or -EIO for the rest */
static int adopt_fail(cl_int err, const char *what)
{
	int ret = err == CL_OUT_OF_HOST_MEMORY ? -ENOMEM :
		  err == CL_OUT_OF_RESOURCES ? -EIO : -EINVAL;

	return gpo__err(ret, "adopting an OpenCL context: %s: %s (%d)", what,
			cl_err_name(err), (int)err);
}

/*
 * Check the caller's handles before anything is retained: the queries
 * read them and change nothing, so a refusal leaves them as they were.
 */
static int check_handles(const struct gpo_opencl_handles *h,
			 cl_platform_id *plat)
{
	cl_context context = h->context, qctx = NULL;
	cl_device_id device = h->device, qdev = NULL;
	cl_command_queue queue = h->queue;
	cl_command_queue_properties props = 0;
	int found;
	cl_int err;

	if (!context || !device || !queue)
		return gpo__err(-EINVAL, "adopting an OpenCL context: a NULL %s",
				!context ? "context" : !device ? "device" :
				"queue");
	err = clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof(*plat), plat,
			      NULL);
	if (err)
		return adopt_fail(err, "the device");
	err = context_has_device(context, device, &found);
	if (err)
		return adopt_fail(err, "the context");
	if (!found)
		return gpo__err(-EINVAL, "adopting an OpenCL context: the device is not one of the context's");
	err = clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof(qctx),
				    &qctx, NULL);
	if (!err)
		err = clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE,
					    sizeof(qdev), &qdev, NULL);
	if (!err)
		err = clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES,
					    sizeof(props), &props, NULL);
	if (err)
		return adopt_fail(err, "the queue");
	if (qctx != context)
		return gpo__err(-EINVAL, "adopting an OpenCL context: the queue is of another context");
	if (qdev != device)
		return gpo__err(-EINVAL, "adopting an OpenCL context: the queue is of another device");
	/* gpuopt's launches rely on each starting after the one before */
	if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
		return gpo__err(-EINVAL, "adopting an OpenCL context: the queue executes out of order; gpuopt needs an in-order queue");
	return 0;
}

int gpo__opencl_adopt(struct gpo_ctx *ctx, const struct gpo_opencl_handles *h,
		      struct gpo_device **out)
{
	struct gpo_device_info info;
	cl_platform_id plat = NULL;
	struct ocl_dev *od;
	char why[256], driver[sizeof(info.driver)];
	int ret;

	ret = check_handles(h, &plat);
	if (ret)
		return ret;
	ret = describe_device(h->device, &info, why, sizeof(why));
	if (ret)
		return gpo__err(ret == -ENODEV ? -EINVAL : ret,
				"adopting an OpenCL context: %s", why);
	snprintf(driver, sizeof(driver), "%s", info.driver);
	snprintf(info.driver, sizeof(info.driver), ADOPTED_PREFIX "%.*s",
		 (int)(sizeof(info.driver) - sizeof(ADOPTED_PREFIX)), driver);

	od = ocl_dev_new(plat, h->device);
	if (!od)
		return gpo__err(-ENOMEM, "out of memory");
	od->context = h->context;
	od->queue = h->queue;
	od->adopted = 1;
	ret = gpo__ctx_adopt_device(ctx, &gpo__opencl_backend_ops, &info, od,
				    out);
	if (ret)
		ocl_dev_free(od);
	return ret;
}

/*
 * A cl_mem of the caller's, retained while bound. gpuopt passes it to its
 * kernels as it does its own buffers (the cl_mem and an element offset,
 * set_args), never as a sub-buffer: the offset of a binding needs no
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN, only the 256 bytes gpo_optim_bind()
 * asks, which keep float4 accesses aligned.
 */
static int ocl_import(struct gpo_device *dev, const struct gpo_extbuf *eb,
		      struct dev_mem **out)
{
	const cl_mem_flags kernel_rw = CL_MEM_READ_ONLY | CL_MEM_WRITE_ONLY;
	const cl_mem_flags host_rw = CL_MEM_HOST_READ_ONLY |
		CL_MEM_HOST_WRITE_ONLY | CL_MEM_HOST_NO_ACCESS;
	struct ocl_dev *od = dev->priv;
	cl_mem m = eb->handle;
	cl_mem_object_type type = 0;
	cl_mem_flags flags = 0;
	cl_context mctx = NULL;
	struct dev_mem *mem;
	size_t size = 0;
	cl_int err;

	if (eb->kind != GPO_EXTBUF_CL_MEM)
		return gpo__err(-EINVAL, "%s: an OpenCL device binds cl_mem buffers only (GPO_EXTBUF_CL_MEM), not kind %d",
				dev->info.id, (int)eb->kind);
	if (!dev->adopted)
		return gpo__err(-EINVAL, "%s: not adopted: bind a cl_mem to an optimizer of a device from gpo_device_adopt_opencl()",
				dev->info.id);
	if (!m)
		return gpo__err(-EINVAL, "%s: a NULL cl_mem", dev->info.id);
	/* a released cl_mem is CL_INVALID_MEM_OBJECT here, as is a stray one */
	err = clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof(type), &type, NULL);
	if (!err)
		err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof(mctx),
					 &mctx, NULL);
	if (!err)
		err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof(size), &size,
					 NULL);
	if (!err)
		err = clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof(flags),
					 &flags, NULL);
	if (err)
		return gpo__err(err == CL_OUT_OF_HOST_MEMORY ? -ENOMEM : -EINVAL,
				"%s: not a valid cl_mem (released?): %s (%d)",
				dev->info.id, cl_err_name(err), (int)err);
	if (type != CL_MEM_OBJECT_BUFFER)
		return gpo__err(-EINVAL, "%s: the cl_mem is an image or a pipe, not a buffer",
				dev->info.id);
	if (mctx != od->context)
		return gpo__err(-EINVAL, "%s: the cl_mem is of another OpenCL context",
				dev->info.id);
	if (eb->size > size)
		return gpo__err(-EINVAL, "%s: the buffer is said to hold %llu bytes; the cl_mem has %zu",
				dev->info.id, (unsigned long long)eb->size,
				size);
	/* kernels read and write it; so does the host (reads, writes, saves) */
	if (flags & (kernel_rw | host_rw))
		return gpo__err(-EINVAL, "%s: the cl_mem must be CL_MEM_READ_WRITE and host accessible (no CL_MEM_READ_ONLY, WRITE_ONLY or HOST_*)",
				dev->info.id);

	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	err = clRetainMemObject(m);
	if (err) {
		free(mem);
		return cl_fail(dev, err, 0, "clRetainMemObject");
	}
	mem->mem = m;
	mem->size = eb->size;
	*out = mem;
	return 0;
}

/* Drop the reference import took; the caller's cl_mem lives on if theirs does. */
static void ocl_release(struct gpo_device *dev, struct dev_mem *mem)
{
	if (!mem)
		return;
	/* OpenCL keeps the memory until the kernels using it are done */
	clReleaseMemObject(mem->mem);
	free(mem);
	/* set_args(): a new cl_mem may get this handle */
	((struct ocl_dev *)dev->priv)->free_gen++;
}

const struct backend_ops gpo__opencl_backend_ops = {
	.name = "opencl",
	.probe = ocl_probe,
	.open = ocl_open,
	.close = ocl_close,
	.alloc = ocl_alloc,
	.free = ocl_free,
	.write = ocl_write,
	.read = ocl_read,
	.host_alloc = ocl_host_alloc,
	.host_free = ocl_host_free,
	.supports = ocl_supports,
	.launch = ocl_launch,
	.wait = ocl_wait,
	.submit = ocl_submit,
	.graph_begin = ocl_graph_begin,
	.graph_end = ocl_graph_end,
	.graph_free = ocl_graph_free,
	.mem_free = ocl_mem_free,
	.import = ocl_import,
	.release = ocl_release,
};
