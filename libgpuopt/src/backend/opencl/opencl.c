// SPDX-License-Identifier: MIT
/*
 * backend_opencl.c - the OpenCL backend
 *
 * Devices come from every platform the ICD loader knows. Opening one makes
 * a context, an in-order profiling queue, and one program built from all
 * the kernels/opencl files (common.cl first) as OpenCL C 1.2; its binary
 * is cached on disk (diskcache, kind "opencl"), keyed by the source, the
 * build options, the device and the driver.
 *
 * Buffers: each pool block is one cl_mem; a sub-allocation is passed to a
 * kernel as that cl_mem plus its offset in elements (see common.cl), so
 * launches create nothing: no sub-buffers, no per-step objects. A buffer a
 * kernel does not use (a zeroed dev_buf) is bound to a small dummy buffer.
 *
 * Launches only enqueue. wait() finishes the queue and reports the device
 * time from the start of the first launch after the previous wait to the
 * end of the last, from the only two events kept.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/diskcache_i.h"
#include "backend/embedded_i.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR	-1001
#endif
#ifndef CL_DEVICE_UUID_KHR
#define CL_DEVICE_UUID_KHR		0x106A
#endif
#define UUID_BYTES			16

#define DUMMY_BYTES	256
/*
 * Element kernels get one work-item per float4. Measured: an H200 copies
 * at 4.25 TB/s so, and at 3.9 with a grid-stride loop over 2048 work-items
 * per SM; PoCL runs it 7 times faster. The cap only bounds the grid: 2^30
 * float4s are 2^32 floats.
 */
#define MAX_ITEMS	((size_t)1 << 30)
#define BUILD_LOG_MAX	400

struct dev_mem {
	cl_mem mem;
	uint64_t size;
};

struct ocl_dev {
	/* from probe */
	cl_platform_id platform;
	cl_device_id device;
	/* from open */
	cl_context context;
	cl_command_queue queue;
	cl_program program;
	cl_kernel kernels[K_COUNT];
	cl_mem dummy;
	/* the first and the last launch since the previous wait */
	cl_event first;
	cl_event last;
};

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
 * Describe device @d and register it. Returns 0, or a negative errno with
 * @why saying why the device is left out.
 */
static int probe_device(struct gpo_ctx *ctx, cl_platform_id plat,
			cl_device_id d, char *why, size_t wlen)
{
	struct gpo_device_info info;
	char *name = NULL, *vendor = NULL, *driver = NULL, *ext = NULL;
	char *cver = NULL;
	cl_device_type type = 0;
	cl_bool unified = CL_FALSE, avail = CL_FALSE, compiler = CL_FALSE;
	cl_uint cu = 0;
	cl_ulong mem = 0;
	size_t wg = 0;
	struct ocl_dev *od;
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
	    wg < KERNEL_WG_SIZE) {
		snprintf(why, wlen, "%s: %s", name,
			 !avail ? "not available" :
			 !compiler ? "no OpenCL C compiler" :
			 wg < KERNEL_WG_SIZE ? "work-groups below 256" :
			 "no OpenCL C 1.2");
		ret = -ENODEV;
		goto out_free;
	}

	memset(&info, 0, sizeof(info));
	snprintf(info.name, sizeof(info.name), "%s", name);
	snprintf(info.vendor, sizeof(info.vendor), "%s", vendor);
	snprintf(info.driver, sizeof(info.driver), "%s", driver);
	fill_uuid(d, ext, info.uuid, sizeof(info.uuid));
	if (type & CL_DEVICE_TYPE_GPU)
		info.type = unified ? GPO_DEVICE_INTEGRATED_GPU :
				      GPO_DEVICE_DISCRETE_GPU;
	else if (type & CL_DEVICE_TYPE_CPU)
		info.type = GPO_DEVICE_CPU_IMPL;
	else
		info.type = GPO_DEVICE_OTHER;
	info.compute_units = cu;
	info.mem_total_bytes = mem;

	od = calloc(1, sizeof(*od));
	if (!od) {
		snprintf(why, wlen, "%s: out of memory", name);
		ret = -ENOMEM;
		goto out_free;
	}
	od->platform = plat;
	od->device = d;
	ret = gpo__ctx_add_device(ctx, &gpo__opencl_backend_ops, &info, od);
	if (ret) {
		snprintf(why, wlen, "%s: cannot register: %s", name,
			 strerror(-ret));
		free(od);
	}
out_free:
	free(name);
	free(vendor);
	free(driver);
	free(ext);
	free(cver);
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

/* ---- the program ------------------------------------------------------- */

/* All kernel sources in one text, common.cl first. */
static char *program_source(size_t *len_out)
{
	const struct embedded_file *f, *common = gpo__embedded_find(gpo__embedded_cl,
							       "common");
	size_t len = 0;
	char *src, *p;

	for (f = gpo__embedded_cl; f->name; f++)
		len += f->size + 1;
	src = malloc(len + 1);
	if (!src)
		return NULL;
	p = src;
	if (common) {
		memcpy(p, common->data, common->size);
		p += common->size;
		*p++ = '\n';
	}
	for (f = gpo__embedded_cl; f->name; f++) {
		if (f == common)
			continue;
		memcpy(p, f->data, f->size);
		p += f->size;
		*p++ = '\n';
	}
	*p = '\0';
	*len_out = p - src;
	return src;
}

static void build_options(cl_device_id d, char *buf, size_t len)
{
	cl_device_fp_config fp = 0;

	/*
	 * Division and sqrt may be 2.5 and 3 ulp off by default; correctly
	 * rounded ones give the cpu backend's results bit for bit, at no
	 * cost to kernels that wait on memory.
	 */
	clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof(fp), &fp, NULL);
	snprintf(buf, len, "-cl-std=CL1.2%s",
		 (fp & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) ?
		 " -cl-fp32-correctly-rounded-divide-sqrt" : "");
}

/* The cache key: source, options, device, driver and platform. */
static uint64_t program_key(const struct gpo_device *dev, cl_platform_id plat,
			    const char *src, size_t len, const char *opts)
{
	char pver[256] = "";
	uint64_t key;

	clGetPlatformInfo(plat, CL_PLATFORM_VERSION, sizeof(pver) - 1, pver,
			  NULL);
	key = gpo__diskcache_key(0, src, len);
	key = gpo__diskcache_key_str(key, opts);
	key = gpo__diskcache_key_str(key, dev->info.name);
	key = gpo__diskcache_key_str(key, dev->info.driver);
	return gpo__diskcache_key_str(key, pver);
}

static void release_kernels(struct ocl_dev *od)
{
	int k;

	for (k = 0; k < K_COUNT; k++) {
		if (od->kernels[k])
			clReleaseKernel(od->kernels[k]);
		od->kernels[k] = NULL;
	}
	if (od->program)
		clReleaseProgram(od->program);
	od->program = NULL;
}

/* Create every kernel of gpo__kernel_table from od->program. */
static int create_kernels(struct gpo_device *dev, struct ocl_dev *od)
{
	cl_int err;
	int k;

	for (k = 0; k < K_COUNT; k++) {
		od->kernels[k] = clCreateKernel(od->program,
						gpo__kernel_table[k].name, &err);
		if (!od->kernels[k])
			return cl_fail(dev, err, 0, gpo__kernel_table[k].name);
	}
	return 0;
}

/* The build log, shortened to fit an error message. */
static void build_log(struct ocl_dev *od, char *buf, size_t len)
{
	size_t size = 0;
	char *log;

	buf[0] = '\0';
	if (clGetProgramBuildInfo(od->program, od->device,
				  CL_PROGRAM_BUILD_LOG, 0, NULL, &size) ||
	    !size)
		return;
	log = malloc(size + 1);
	if (!log)
		return;
	if (!clGetProgramBuildInfo(od->program, od->device,
				   CL_PROGRAM_BUILD_LOG, size, log, NULL)) {
		log[size] = '\0';
		snprintf(buf, len, "%s", log);
	}
	free(log);
}

/* Load the cached binary; 0 with kernels created, or nonzero to rebuild. */
static int program_from_cache(struct gpo_device *dev, struct ocl_dev *od,
			      uint64_t key, const char *opts)
{
	const unsigned char *bin;
	cl_int err, status;
	size_t size;
	void *data;
	int ret;

	ret = gpo__diskcache_load("opencl", key, &data, &size);
	if (ret)
		return ret;
	bin = data;
	od->program = clCreateProgramWithBinary(od->context, 1, &od->device,
						&size, &bin, &status, &err);
	free(data);
	if (!od->program)
		return -EBADMSG;
	err = clBuildProgram(od->program, 1, &od->device, opts, NULL, NULL);
	ret = err ? -EBADMSG : create_kernels(dev, od);
	if (ret)
		release_kernels(od);
	return ret;
}

/* Store the built program's binary; the cache is optional: no errors. */
static void program_to_cache(struct ocl_dev *od, uint64_t key)
{
	unsigned char *bin;
	size_t size = 0;

	if (clGetProgramInfo(od->program, CL_PROGRAM_BINARY_SIZES,
			     sizeof(size), &size, NULL) || !size)
		return;
	bin = malloc(size);
	if (!bin)
		return;
	if (!clGetProgramInfo(od->program, CL_PROGRAM_BINARIES, sizeof(bin),
			      &bin, NULL))
		gpo__diskcache_store("opencl", key, bin, size);
	free(bin);
}

static int build_program(struct gpo_device *dev, struct ocl_dev *od)
{
	char opts[128], log[BUILD_LOG_MAX + 1];
	const char *srcp;
	size_t len;
	uint64_t key;
	cl_int err;
	char *src;
	int ret;

	src = program_source(&len);
	if (!src)
		return gpo__err(-ENOMEM, "out of memory");
	build_options(od->device, opts, sizeof(opts));
	key = program_key(dev, od->platform, src, len, opts);
	/* a damaged or stale entry is rebuilt below and overwritten */
	if (!program_from_cache(dev, od, key, opts)) {
		ret = 0;
		goto out_free;
	}

	srcp = src;
	od->program = clCreateProgramWithSource(od->context, 1, &srcp, &len,
						&err);
	if (!od->program) {
		ret = cl_fail(dev, err, 0, "clCreateProgramWithSource");
		goto out_free;
	}
	err = clBuildProgram(od->program, 1, &od->device, opts, NULL, NULL);
	if (err) {
		build_log(od, log, sizeof(log));
		ret = gpo__err(-EIO, "%s (%s): cannot build the kernels: %s: %s",
			      dev->info.id, dev->info.name, cl_err_name(err),
			      log);
		goto out_release;
	}
	ret = create_kernels(dev, od);
	if (ret)
		goto out_release;
	program_to_cache(od, key);
	goto out_free;

out_release:
	release_kernels(od);
out_free:
	free(src);
	return ret;
}

/* ---- open and close ---------------------------------------------------- */

/* Release what open made; what probe stored stays. */
static void teardown(struct ocl_dev *od)
{
	if (od->first)
		clReleaseEvent(od->first);
	if (od->last)
		clReleaseEvent(od->last);
	od->first = od->last = NULL;
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
	od->dummy = clCreateBuffer(od->context, CL_MEM_READ_WRITE,
				   DUMMY_BYTES, NULL, &err);
	if (!od->dummy) {
		ret = cl_fail(dev, err, 0, "clCreateBuffer (dummy)");
		goto out_teardown;
	}
	ret = build_program(dev, od);
	if (ret)
		goto out_teardown;


	dev->mem_align = align_bits / 8 > 256 ? align_bits / 8 : 256;
	dev->max_alloc = max_alloc;
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
	if (od->queue)
		clFinish(od->queue);
	teardown(od);
	free(od);
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
}

static int ocl_write(struct gpo_device *dev, const struct dev_buf *dst,
		     uint64_t off, const void *src, uint64_t bytes)
{
	struct ocl_dev *od = dev->priv;
	cl_int err;

	if (!bytes)
		return 0;
	err = clEnqueueWriteBuffer(od->queue, dst->mem->mem, CL_TRUE,
				   dst->off + off, bytes, src, 0, NULL, NULL);
	return err ? cl_fail(dev, err, 0, "clEnqueueWriteBuffer") : 0;
}

static int ocl_read(struct gpo_device *dev, const struct dev_buf *src,
		    uint64_t off, void *dst, uint64_t bytes)
{
	struct ocl_dev *od = dev->priv;
	cl_int err;

	if (!bytes)
		return 0;
	err = clEnqueueReadBuffer(od->queue, src->mem->mem, CL_TRUE,
				  src->off + off, bytes, dst, 0, NULL, NULL);
	return err ? cl_fail(dev, err, 0, "clEnqueueReadBuffer") : 0;
}

static uint64_t ocl_mem_free(struct gpo_device *dev)
{
	/* core OpenCL cannot tell */
	return 0;
}

/* ---- kernels ----------------------------------------------------------- */

/* The global size of a launch of @k, 0 for nothing to do. */
static size_t grid_size(enum kernel_id k, const struct kernel_args *a)
{
	size_t items;

	switch (gpo__kernel_table[k].grid) {
	case GRID_ELEMENTS:
		/* one work-item per float4 (the last one partial) */
		items = a->n / 4 + (a->n % 4 != 0);
		break;
	case GRID_ITEMS:
		/* lamb_trust: a group per tensor (see lamb.cl) */
		if (k == K_LAMB_TRUST)
			return (size_t)a->n * KERNEL_WG_SIZE;
		items = a->n;
		break;
	case GRID_GROUPS:
	default:
		/* results are per group: exactly the groups asked for */
		if (k == K_NORM_FINAL)
			return KERNEL_WG_SIZE;
		return (size_t)a->aux0 * KERNEL_WG_SIZE;
	}
	/* the kernels loop if the grid is short (never, below 2^32 floats) */
	if (items > MAX_ITEMS)
		items = MAX_ITEMS;
	return (items + KERNEL_WG_SIZE - 1) / KERNEL_WG_SIZE * KERNEL_WG_SIZE;
}

static int set_args(struct gpo_device *dev, cl_kernel kern, enum kernel_id k,
		    const struct kernel_args *a)
{
	struct ocl_dev *od = dev->priv;
	const cl_uint u[4] = { a->n, a->flags, a->aux0, a->aux1 };
	cl_uint arg = 0, i;
	cl_int err = 0;

	for (i = 0; i < gpo__kernel_table[k].nbuf && !err; i++) {
		const struct dev_buf *b = &a->buf[i];
		cl_mem m = b->mem ? b->mem->mem : od->dummy;
		cl_ulong off = b->mem ? b->off / 4 : 0;

		/* the kernels read float4s from these offsets */
		if (b->off % 16)
			return gpo__err(-EINVAL, "%s: %s: buffer %u at offset %llu is not 16-byte aligned",
				       dev->info.id, gpo__kernel_table[k].name, i,
				       (unsigned long long)b->off);
		err = clSetKernelArg(kern, arg++, sizeof(m), &m);
		if (!err)
			err = clSetKernelArg(kern, arg++, sizeof(off), &off);
	}
	for (i = 0; i < 4 && !err; i++)
		err = clSetKernelArg(kern, arg++, sizeof(u[i]), &u[i]);
	for (i = 0; i < KARG_NSCAL && !err; i++)
		err = clSetKernelArg(kern, arg++, sizeof(cl_float), &a->s[i]);
	return err ? cl_fail(dev, err, 0, gpo__kernel_table[k].name) : 0;
}

static int ocl_launch(struct gpo_device *dev, enum kernel_id k,
		      const struct kernel_args *args)
{
	struct ocl_dev *od = dev->priv;
	size_t global, local = KERNEL_WG_SIZE;
	cl_kernel kern;
	cl_event ev;
	cl_int err;
	int ret;

	if ((unsigned int)k >= K_COUNT)
		return gpo__err(-EINVAL, "%s: no kernel %d", dev->info.id, k);
	global = grid_size(k, args);
	if (!global)
		return 0;
	kern = od->kernels[k];
	ret = set_args(dev, kern, k, args);
	if (ret)
		return ret;
	err = clEnqueueNDRangeKernel(od->queue, kern, 1, NULL, &global, &local,
				     0, NULL, &ev);
	if (err)
		return cl_fail(dev, err, 0, gpo__kernel_table[k].name);
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

static int ocl_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct ocl_dev *od = dev->priv;
	cl_event end = od->last ? od->last : od->first;
	cl_ulong t0 = 0, t1 = 0;
	cl_int err;

	if (device_ns)
		*device_ns = 0;
	err = clFinish(od->queue);
	if (!err)
		err = event_status(od->first);
	if (!err)
		err = event_status(od->last);
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
	od->first = od->last = NULL;
	return err ? cl_fail(dev, err, 0, "running kernels") : 0;
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
	.launch = ocl_launch,
	.wait = ocl_wait,
	.mem_free = ocl_mem_free,
};
