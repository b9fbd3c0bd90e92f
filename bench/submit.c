// SPDX-License-Identifier: MIT
/*
 * bench_submit - what one submission and its wait cost through the
 * driver itself, without libgpuopt: the floor under a small step
 *
 *   bench_submit [-r REPS] [-a]
 *
 * Vulkan: an empty command buffer, recorded once, submitted with a fence
 * that is then polled (vkGetFenceStatus) until signalled, and reset.
 * OpenCL: a marker enqueued on an in-order queue, flushed, and its event
 * polled until complete. Median wall time of REPS (default 2000) after a
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
	printf("%-7s %-40.40s %9.1f\n", api, name, us);
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
	VkDevice dev;
	VkQueue q;
	VkCommandPool pool;
	VkCommandBuffer cmd;
	VkFence fence;
	double t0;
	int i;

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
	if (vkAllocateCommandBuffers(dev, &cbai, &cmd) != VK_SUCCESS ||
	    vkBeginCommandBuffer(cmd, &bi) != VK_SUCCESS ||
	    vkEndCommandBuffer(cmd) != VK_SUCCESS ||
	    vkCreateFence(dev, &fci, NULL, &fence) != VK_SUCCESS)
		goto out_pool;
	si.pCommandBuffers = &cmd;
	for (i = -WARMUP; i < reps; i++) {
		t0 = now_us();
		if (vkQueueSubmit(q, 1, &si, fence) != VK_SUCCESS)
			break;
		while (vkGetFenceStatus(dev, fence) == VK_NOT_READY)
			;
		vkResetFences(dev, 1, &fence);
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	if (i == reps)
		print_row("vulkan", props.deviceName, median(t, reps));
	vkDestroyFence(dev, fence, NULL);
out_pool:
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
static void cl_one(cl_device_id d, int reps, double *t)
{
	cl_int err, st;
	cl_context ctx;
	cl_command_queue q;
	cl_event ev;
	char name[128] = "";
	double t0;
	int i;

	clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(name) - 1, name, NULL);
	ctx = clCreateContext(NULL, 1, &d, NULL, NULL, &err);
	if (!ctx)
		return;
	q = clCreateCommandQueue(ctx, d, 0, &err);
	if (!q)
		goto out_ctx;
	for (i = -WARMUP; i < reps; i++) {
		t0 = now_us();
		if (clEnqueueMarkerWithWaitList(q, 0, NULL, &ev) != CL_SUCCESS)
			break;
		clFlush(q);
		do {
			if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
					   sizeof(st), &st, NULL) != CL_SUCCESS)
				st = -1;
		} while (st > CL_COMPLETE);
		clReleaseEvent(ev);
		if (st < 0)
			break;
		if (i >= 0)
			t[i] = now_us() - t0;
	}
	if (i == reps)
		print_row("opencl", name, median(t, reps));
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
	printf("%-7s %-40s %9s\n", "api", "device", "floor_us");
#ifdef GPO_HAVE_VULKAN
	vk_all(reps, all, t);
#endif
#ifdef GPO_HAVE_OPENCL
	cl_all(reps, all, t);
#endif
	free(t);
	return 0;
}
