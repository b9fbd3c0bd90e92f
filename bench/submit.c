// SPDX-License-Identifier: MIT
/*
 * bench_submit - what one submission and its wait cost through the
 * driver itself, without libgpuopt: the floor under a small step
 *
 *   bench_submit [-r REPS] [-a]
 *
 * Vulkan: an empty command buffer, recorded once, submitted with a fence
 * that is then polled (vkGetFenceStatus) until signalled, and reset; then
 * the same with two timestamps in it (read back after each wait), and
 * with a full barrier first and a host barrier last as well.
 * OpenCL: a marker enqueued on an in-order queue, flushed, and its event
 * polled until complete; then a 4-element kernel instead, on a plain
 * queue and on a profiling one (its times read after each wait). Median wall time of REPS (default 2000) after a
 * warm-up, per GPU device (-a: CPU implementations too). bench_optim -S's
 * small steps sit on this floor: its sgd_4_floor row is the same through
 * libgpuopt, with a 4-element kernel.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef GPO_HAVE_VULKAN
#include <vulkan/vulkan.h>
#endif
#ifdef GPO_HAVE_OPENCL
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#endif

#define WARMUP	200

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void print_row(const char *api, const char *name, double us)
{
	printf("%-7s %-58.58s %9.1f\n", api, name, us);
	fflush(stdout);
}

#ifdef GPO_HAVE_VULKAN
static void vk_one(VkPhysicalDevice phys, int reps, double *t)
{
	VkPhysicalDeviceProperties props;
	VkQueueFamilyProperties qf[16];
	uint32_t nqf = 16, fam;
	float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
	};
	VkCommandPoolCreateInfo cpci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
	};
	VkCommandBufferAllocateInfo cbai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	};
	VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
	};
	VkQueryPoolCreateInfo qpci = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2,
	};
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT |
				 VK_ACCESS_MEMORY_WRITE_BIT,
	};
	static const char *const variant[] = {
		"empty", "+2 timestamps", "+barriers",
	};
	VkDevice dev;
	VkQueue q;
	VkCommandPool pool;
	VkCommandBuffer cmd[3];
	VkQueryPool qp = VK_NULL_HANDLE;
	VkFence fence;
	uint64_t ts[2];
	char name[300];
	double t0;
	int i, v;

	vkGetPhysicalDeviceProperties(phys, &props);
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nqf, qf);
	for (fam = 0; fam < nqf; fam++)
		if (qf[fam].queueFlags & VK_QUEUE_COMPUTE_BIT)
			break;
	if (fam == nqf)
		return;
	qci.queueFamilyIndex = fam;
	cpci.queueFamilyIndex = fam;
	if (vkCreateDevice(phys, &dci, NULL, &dev) != VK_SUCCESS) {
		fprintf(stderr, "bench_submit: %s: vkCreateDevice failed\n",
			props.deviceName);
		return;
	}
	vkGetDeviceQueue(dev, fam, 0, &q);
	if (vkCreateCommandPool(dev, &cpci, NULL, &pool) != VK_SUCCESS)
		goto out_dev;
	cbai.commandPool = pool;
	cbai.commandBufferCount = 3;
	if (vkAllocateCommandBuffers(dev, &cbai, cmd) != VK_SUCCESS ||
	    vkCreateQueryPool(dev, &qpci, NULL, &qp) != VK_SUCCESS ||
	    vkCreateFence(dev, &fci, NULL, &fence) != VK_SUCCESS)
		goto out_pool;
	for (v = 0; v < 3; v++) {
		vkBeginCommandBuffer(cmd[v], &bi);
		if (v == 2)
			vkCmdPipelineBarrier(cmd[v],
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     0, 1, &mb, 0, NULL, 0, NULL);
		if (v) {
			vkCmdResetQueryPool(cmd[v], qp, 0, 2);
			vkCmdWriteTimestamp(cmd[v],
					    VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
					    qp, 0);
			vkCmdWriteTimestamp(cmd[v],
					    VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
					    qp, 1);
		}
		if (v == 2)
			vkCmdPipelineBarrier(cmd[v],
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
					     &mb, 0, NULL, 0, NULL);
		if (vkEndCommandBuffer(cmd[v]) != VK_SUCCESS)
			goto out_fence;
	}
	for (v = 0; v < 3; v++) {
		si.pCommandBuffers = &cmd[v];
		for (i = -WARMUP; i < reps; i++) {
			t0 = now_us();
			if (vkQueueSubmit(q, 1, &si, fence) != VK_SUCCESS)
				break;
			while (vkGetFenceStatus(dev, fence) == VK_NOT_READY)
				;
			vkResetFences(dev, 1, &fence);
			if (v)
				vkGetQueryPoolResults(dev, qp, 0, 2, sizeof(ts),
						      ts, sizeof(ts[0]),
						      VK_QUERY_RESULT_64_BIT);
			if (i >= 0)
				t[i] = now_us() - t0;
		}
		snprintf(name, sizeof(name), "%s, %s", props.deviceName,
			 variant[v]);
		if (i == reps)
			print_row("vulkan", name, median(t, reps));
	}
out_fence:
	vkDestroyFence(dev, fence, NULL);
out_pool:
	if (qp)
		vkDestroyQueryPool(dev, qp, NULL);
	vkDestroyCommandPool(dev, pool, NULL);
out_dev:
	vkDestroyDevice(dev, NULL);
}

static void vk_all(int reps, int all, double *t)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkPhysicalDevice phys[16];
	VkPhysicalDeviceProperties props;
	uint32_t n = 16, i;
	VkInstance inst;

	if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS)
		return;
	if (vkEnumeratePhysicalDevices(inst, &n, phys) < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		vkGetPhysicalDeviceProperties(phys[i], &props);
		if (all || props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU)
			vk_one(phys[i], reps, t);
	}
	vkDestroyInstance(inst, NULL);
}
#endif

#ifdef GPO_HAVE_OPENCL
static const char kernel_src[] =
	"__kernel void k(__global float *x) { x[get_global_id(0)] += 1.0f; }";

/*
 * @kern NULL: a marker, else that kernel over 4 elements; on @q, whose
 * profiling times are read after each wait when @prof
 */
static void cl_variant(cl_command_queue q, cl_kernel kern, int prof,
		       const char *name, int reps, double *t)
{
	const size_t four = 4;
	cl_ulong start, end;
	cl_int st, r;
	cl_event ev;
	double t0;
	int i;

	for (i = -WARMUP; i < reps; i++) {
		t0 = now_us();
		r = kern ? clEnqueueNDRangeKernel(q, kern, 1, NULL, &four, NULL,
						  0, NULL, &ev) :
			   clEnqueueMarkerWithWaitList(q, 0, NULL, &ev);
		if (r != CL_SUCCESS)
			break;
		clFlush(q);
		do {
			if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
					   sizeof(st), &st, NULL) != CL_SUCCESS)
				st = -1;
		} while (st > CL_COMPLETE);
		if (prof) {
			clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START,
						sizeof(start), &start, NULL);
			clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END,
						sizeof(end), &end, NULL);
		}
		clReleaseEvent(ev);
		if (st < 0)
			break;
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	if (i == reps)
		print_row("opencl", name, median(t, reps));
}

static void cl_one(cl_device_id d, int reps, double *t)
{
	const char *src = kernel_src;
	cl_command_queue q, qp = NULL;
	cl_program prog = NULL;
	cl_kernel kern = NULL;
	cl_mem buf = NULL;
	char dname[128] = "", name[200];
	cl_context ctx;
	cl_int err;

	clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(dname) - 1, dname, NULL);
	ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
	if (!ctx)
		return;
	q = clCreateCommandQueue(ctx, d, 0, &err);
	if (!q)
		goto out_ctx;
	snprintf(name, sizeof(name), "%s, marker", dname);
	cl_variant(q, NULL, 0, name, reps, t);
	qp = clCreateCommandQueue(ctx, d, CL_QUEUE_PROFILING_ENABLE, &err);
	prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &err);
	if (!qp || !prog || clBuildProgram(prog, 1, &d, "", NULL, NULL))
		goto out;
	kern = clCreateKernel(prog, "k", &err);
	buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 16, NULL, &err);
	if (!kern || !buf || clSetKernelArg(kern, 0, sizeof(buf), &buf))
		goto out;
	snprintf(name, sizeof(name), "%s, 4-element kernel", dname);
	cl_variant(q, kern, 0, name, reps, t);
	snprintf(name, sizeof(name), "%s, kernel, profiling queue", dname);
	cl_variant(qp, kern, 1, name, reps, t);
out:
	if (buf)
		clReleaseMemObject(buf);
	if (kern)
		clReleaseKernel(kern);
	if (prog)
		clReleaseProgram(prog);
	if (qp)
		clReleaseCommandQueue(qp);
	clReleaseCommandQueue(q);
out_ctx:
	clReleaseContext(ctx);
}

static void cl_all(int reps, int all, double *t)
{
	cl_platform_id plat[8];
	cl_device_id devs[16];
	cl_uint np = 0, nd, p, i;

	if (clGetPlatformIDs(8, plat, &np) != CL_SUCCESS)
		return;
	for (p = 0; p < np; p++) {
		if (clGetDeviceIDs(plat[p], all ? CL_DEVICE_TYPE_ALL :
				   CL_DEVICE_TYPE_GPU, 16, devs, &nd) !=
		    CL_SUCCESS)
			continue;
		for (i = 0; i < nd; i++)
			cl_one(devs[i], reps, t);
	}
}
#endif

int main(int argc, char **argv)
{
	int reps = 2000, all = 0, c;
	double *t;

	while ((c = getopt(argc, argv, "r:a")) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'a':
			all = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-r REPS] [-a]\n", argv[0]);
			return 2;
		}
	}
	if (reps < 1) {
		fprintf(stderr, "%s: -r wants a count >= 1\n", argv[0]);
		return 2;
	}
	t = calloc(reps, sizeof(*t));
	if (!t)
		return 1;
	printf("# bench_submit: one empty submission and its wait through the driver, median of %d\n",
	       reps);
	printf("%-7s %-58s %9s\n", "api", "device, what", "floor_us");
#ifdef GPO_HAVE_VULKAN
	vk_all(reps, all, t);
#endif
#ifdef GPO_HAVE_OPENCL
	cl_all(reps, all, t);
#endif
	free(t);
	return 0;
}
