// SPDX-License-Identifier: MIT
/*
 * bench_submit - what one submission and its wait cost through the
 * driver itself, without libgpuopt: the floor under a small step
 *
 *   bench_submit [-r REPS] [-a] [-n]
 *
 * Vulkan: command buffers recorded once that build up, row by row, to
 * what a replayed libgpuopt step submits (the rows are described above
 * vk_one() below; the last, adamw_10k, is the command buffer of
 * bench_optim -S's adamw_10k), each submitted with a fence that is then
 * polled (/poll) or waited for (/wait), and reset; then the same steps
 * through libgpuopt on that device (gpuopt_adamw_10k, gpuopt_sgd_4; -n:
 * not), the rows timed in turns in one process. gpuopt_adamw_10k against
 * adamw_10k/poll is libgpuopt's own cost per step.
 * OpenCL: a marker enqueued on an in-order queue, flushed, and its event
 * polled until complete; then a 4-element kernel instead, on a plain
 * queue and on a profiling one (its times read after each wait). Median
 * wall time of REPS (default 2000) after a warm-up, per GPU device (-a:
 * CPU implementations too). bench_optim -S's small steps sit on this
 * floor: its sgd_4_floor row is the same through libgpuopt, with a
 * 4-element kernel.
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
	printf("%-7s %-64.64s %9.1f\n", api, name, us);
	fflush(stdout);
}

#ifdef GPO_HAVE_VULKAN
/*
 * The Vulkan rows build up, one command buffer each, to what a replayed
 * optimizer step of libgpuopt submits (vulkan/graph.c record()):
 *
 *   empty        nothing
 *   ts           two timestamps, read back after each wait
 *   barriers     + a full barrier first and a host barrier last
 *   dispatch     one 4-element sgd dispatch (sgd.f32), a descriptor set
 *                bound once, its parameters in push constants; no
 *                barriers, no timestamps
 *   recorded     sgd.f32.ab, 4 elements, as graph.c records a step: the
 *                barrier of gpo__vk_barrier_all(), a query reset and a
 *                timestamp, the pipeline, push descriptors with the
 *                parameter struct bound from a mapped buffer, the
 *                dispatch, a timestamp, the host barrier
 *   recorded_no_ts  the same without the query reset and timestamps
 *   replayed     the same, its parameter struct written into the mapped
 *                buffer before each submit and the timestamps read after
 *                each wait (gpo__vk_retire()): a replayed step
 *   adamw_10k    replayed with adam.f32.ab over 10 000 elements: the
 *                command buffer of bench_optim -S's adamw_10k
 *
 * each waited for by polling vkGetFenceStatus (/poll, as fence_wait() on
 * a GPU) and by vkWaitForFences (/wait), the fence reset after each; then
 * the same steps through libgpuopt on that device (gpuopt_adamw_10k,
 * gpuopt_sgd_4: gpo_optim_step()), so that both sides are timed in the
 * same process, in turns of TURN submissions. All on the queue family
 * libgpuopt picks (the first compute one with timestamps); then the
 * driver's rows again on a compute-only family where the device has one
 * (", queue family N"), which may answer faster.
 */
#include "backend/embedded_i.h"
#include "abi/adam.h"
#include "abi/sgd.h"
#include "gpuopt.h"

#define TURN		100
#define N_ADAMW		10000
#define NBIND		(GPO_ARGS_BINDING + 1)
#define SLICE		65536		/* bytes: each binding's view */

enum { V_EMPTY, V_TS, V_BARRIERS, V_DISPATCH, V_RECORDED, V_NO_TS,
       V_REPLAYED, V_ADAMW, NVARIANT };

static const char *const vk_what[NVARIANT] = {
	"empty", "ts", "barriers", "dispatch", "recorded", "recorded_no_ts",
	"replayed", "adamw_10k",
};

struct vk_bench {
	VkDevice dev;
	VkQueue q;
	VkCommandPool pool;
	VkCommandBuffer cmd[NVARIANT];
	VkFence fence;
	VkQueryPool qp;
	VkBuffer buf, args;
	VkDeviceMemory buf_mem, args_mem;
	void *args_map;
	VkDescriptorSetLayout dsl, dsl_push;
	VkPipelineLayout pl, pl_push;
	VkDescriptorPool dpool;
	VkDescriptorSet set;
	VkPipeline sgd, sgd_ab, adam_ab;
	PFN_vkCmdPushDescriptorSetKHR push_desc;
	uint64_t step;
};

struct vk_row {
	char what[48];
	int v;			/* the variant; -1: through libgpuopt */
	int wait;		/* vkWaitForFences, not polling */
	struct gpo_optim *opt;
	double *t;
};

static int mem_type(VkPhysicalDevice phys, uint32_t bits,
		    VkMemoryPropertyFlags want)
{
	VkPhysicalDeviceMemoryProperties mp;
	uint32_t i;

	vkGetPhysicalDeviceMemoryProperties(phys, &mp);
	for (i = 0; i < mp.memoryTypeCount; i++)
		if ((bits & (1u << i)) &&
		    (mp.memoryTypes[i].propertyFlags & want) == want)
			return (int)i;
	return -1;
}

/* a storage buffer of @bytes in memory of @want (@alt if none), bound */
static int vk_buffer(VkPhysicalDevice phys, VkDevice dev, uint64_t bytes,
		     VkMemoryPropertyFlags want, VkMemoryPropertyFlags alt,
		     VkBuffer *buf, VkDeviceMemory *mem)
{
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = bytes,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
	};
	VkMemoryRequirements req;
	int t;

	if (vkCreateBuffer(dev, &bci, NULL, buf) != VK_SUCCESS)
		return -1;
	vkGetBufferMemoryRequirements(dev, *buf, &req);
	t = mem_type(phys, req.memoryTypeBits, want);
	if (t < 0)
		t = mem_type(phys, req.memoryTypeBits, alt);
	mai.allocationSize = req.size;
	mai.memoryTypeIndex = (uint32_t)t;
	if (t < 0 || vkAllocateMemory(dev, &mai, NULL, mem) != VK_SUCCESS)
		return -1;
	return vkBindBufferMemory(dev, *buf, *mem, 0) == VK_SUCCESS ? 0 : -1;
}

static int vk_pipeline(VkDevice dev, VkPipelineLayout pl, const char *name,
		       VkPipeline *out)
{
	const struct embedded_file *f = gpo__embedded_find(gpo__embedded_spv,
							   name);
	/* group ops' row (spec constant 0); element ops ignore it */
	const uint32_t row = 65535;
	const VkSpecializationMapEntry me = { 0, 0, sizeof(row) };
	const VkSpecializationInfo spec = { 1, &me, sizeof(row), &row };
	VkShaderModuleCreateInfo smci = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
	};
	VkComputePipelineCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.pName = "main",
			.pSpecializationInfo = &spec,
		},
		.layout = pl,
	};
	VkResult r;

	if (!f || !f->size || f->size % 4) {
		fprintf(stderr, "bench_submit: no SPIR-V %s in the library\n",
			name);
		return -1;
	}
	smci.codeSize = f->size;
	smci.pCode = (const uint32_t *)f->data;
	if (vkCreateShaderModule(dev, &smci, NULL, &ci.stage.module) !=
	    VK_SUCCESS)
		return -1;
	r = vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, NULL, out);
	vkDestroyShaderModule(dev, ci.stage.module, NULL);
	return r == VK_SUCCESS ? 0 : -1;
}

/* the parameter structs: sgd's at 0, adam's at 256 of the mapped buffer */
static void sgd_args(struct gpo_sgd_args *a)
{
	memset(a, 0, sizeof(*a));
	a->n = 4;
	a->lr = 1e-3f;
	a->one_minus_dampening = 1.0f;
}

static void adam_args(struct gpo_adam_args *a, uint64_t step)
{
	memset(a, 0, sizeof(*a));
	a->n = N_ADAMW;
	a->flags = GPO_ADAM_DECOUPLED;
	a->beta1 = 0.9f;
	a->beta2 = 0.999f;
	a->eps = 1e-8f;
	a->weight_decay = 0.01f;
	a->step_size = 1e-3f;
	a->bc2_sqrt = 1.0f;
	a->decay = 1.0f - 1e-5f;
	a->one_minus_beta1 = 0.1f;
	a->one_minus_beta2 = 0.001f;
	a->p_step_lo = (uint32_t)step;
}

/* the writes of push descriptors: binding i at slice i, the struct at @at */
static void push_writes(const struct vk_bench *b, VkDescriptorBufferInfo *bi,
			VkWriteDescriptorSet *w, uint64_t at, uint64_t range)
{
	int i;

	for (i = 0; i < NBIND; i++) {
		bi[i] = (VkDescriptorBufferInfo) { b->buf, (uint64_t)i * SLICE,
						   SLICE };
		if (i == GPO_ARGS_BINDING)
			bi[i] = (VkDescriptorBufferInfo) { b->args, at, range };
		w[i] = (VkWriteDescriptorSet) {
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstBinding = (uint32_t)i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
	}
}

/* what gpo__vk_barrier_all() records */
static void barrier_all(VkCommandBuffer cmd)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT |
				 VK_ACCESS_HOST_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
				 VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_READ_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
	};

	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
			     VK_PIPELINE_STAGE_TRANSFER_BIT |
			     VK_PIPELINE_STAGE_HOST_BIT,
			     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
			     VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL,
			     0, NULL);
}

/* the end of graph.c's recording: a timestamp (@qp), the host barrier */
static void host_barrier(VkCommandBuffer cmd, VkQueryPool qp)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};

	if (qp)
		vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				    qp, 1);
	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
			     VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
			     NULL);
}

static int vk_record(struct vk_bench *b, int v, uint32_t groups_adamw)
{
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	};
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT |
				 VK_ACCESS_MEMORY_WRITE_BIT,
	};
	VkDescriptorBufferInfo dbi[NBIND];
	VkWriteDescriptorSet w[NBIND];
	VkCommandBuffer cmd = b->cmd[v];
	struct gpo_sgd_args sa;

	vkBeginCommandBuffer(cmd, &bi);
	switch (v) {
	case V_TS:
	case V_BARRIERS:
		if (v == V_BARRIERS)
			vkCmdPipelineBarrier(cmd,
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     0, 1, &mb, 0, NULL, 0, NULL);
		vkCmdResetQueryPool(cmd, b->qp, 0, 2);
		vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
				    b->qp, 0);
		vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				    b->qp, 1);
		if (v == V_BARRIERS)
			vkCmdPipelineBarrier(cmd,
					     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
					     VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
					     &mb, 0, NULL, 0, NULL);
		break;
	case V_DISPATCH:
		sgd_args(&sa);
		vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, b->sgd);
		vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
					b->pl, 0, 1, &b->set, 0, NULL);
		vkCmdPushConstants(cmd, b->pl, VK_SHADER_STAGE_COMPUTE_BIT, 0,
				   sizeof(sa), &sa);
		vkCmdDispatch(cmd, 1, 1, 1);
		break;
	case V_RECORDED:
	case V_NO_TS:
	case V_REPLAYED:
	case V_ADAMW:
		barrier_all(cmd);
		if (v != V_NO_TS) {
			vkCmdResetQueryPool(cmd, b->qp, 0, 2);
			vkCmdWriteTimestamp(cmd,
					    VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
					    b->qp, 0);
		}
		if (v == V_ADAMW) {
			vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
					  b->adam_ab);
			push_writes(b, dbi, w, 256,
				    sizeof(struct gpo_adam_args));
		} else {
			vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
					  b->sgd_ab);
			push_writes(b, dbi, w, 0, sizeof(struct gpo_sgd_args));
		}
		b->push_desc(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, b->pl_push,
			     0, NBIND, w);
		vkCmdDispatch(cmd, v == V_ADAMW ? groups_adamw : 1, 1, 1);
		host_barrier(cmd, v == V_NO_TS ? VK_NULL_HANDLE : b->qp);
		break;
	}
	return vkEndCommandBuffer(cmd) == VK_SUCCESS ? 0 : -1;
}

/* one submission of row @r and its wait; the seconds it took */
static double vk_iter(struct vk_bench *b, const struct vk_row *r)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &b->cmd[r->v],
	};
	struct gpo_adam_args aa;
	struct gpo_sgd_args sa;
	uint64_t ts[2];
	double t0 = now_us();

	if (r->v < 0)
		return gpo_optim_step(r->opt, NULL) ? -1 : now_us() - t0;
	/* a replayed step's scalars, written where its shader reads them */
	if (r->v == V_REPLAYED) {
		sgd_args(&sa);
		sa.p_step_lo = (uint32_t)++b->step;
		memcpy(b->args_map, &sa, sizeof(sa));
	} else if (r->v == V_ADAMW) {
		adam_args(&aa, ++b->step);
		memcpy((char *)b->args_map + 256, &aa, sizeof(aa));
	}
	if (vkQueueSubmit(b->q, 1, &si, b->fence) != VK_SUCCESS)
		return -1;
	if (r->wait) {
		if (vkWaitForFences(b->dev, 1, &b->fence, VK_TRUE,
				    UINT64_MAX) != VK_SUCCESS)
			return -1;
	} else {
		while (vkGetFenceStatus(b->dev, b->fence) == VK_NOT_READY)
			;
	}
	vkResetFences(b->dev, 1, &b->fence);
	if (r->v == V_TS || r->v == V_BARRIERS || r->v >= V_REPLAYED)
		vkGetQueryPoolResults(b->dev, b->qp, 0, 2, sizeof(ts), ts,
				      sizeof(ts[0]), VK_QUERY_RESULT_64_BIT);
	return now_us() - t0;
}

/*
 * libgpuopt's optimizer on the Vulkan device named @name (the first of
 * that name), stepping @n parameters with @kind: NULL if there is none
 */
static struct gpo_optim *gpo_opt(struct gpo_ctx *ctx, const char *name,
				 const char *kind, uint64_t n)
{
	struct gpo_device_info info;
	struct gpo_device *dev;
	struct gpo_optim *opt = NULL;
	uint64_t seed = 0x9e3779b97f4a7c15ull, i;
	float *host;
	int d, nd = gpo_device_count(ctx);

	for (d = 0; d < nd; d++) {
		if (gpo_device_info(ctx, d, &info) ||
		    strcmp(info.backend, "vulkan") || strcmp(info.name, name))
			continue;
		if (gpo_device_select(ctx, info.id, &dev))
			return NULL;
		break;
	}
	if (d == nd)
		return NULL;
	host = malloc(n * sizeof(*host));
	if (!host || gpo_optim_new(dev, gpo_optim_kind_parse(kind), &opt) ||
	    gpo_optim_add_tensor(opt, "t", 1, &n, 0) < 0 ||
	    gpo_optim_configure(opt, -1, "lr=0.001"))
		goto out_fail;
	/* never time on zeros */
	for (i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		host[i] = (float)((seed >> 40) * (1.0 / 16777216.0) - 0.5);
	}
	if (gpo_optim_write(opt, "param", NULL, host, n * sizeof(*host)) ||
	    gpo_optim_write(opt, "grad", NULL, host, n * sizeof(*host)) ||
	    gpo_optim_step(opt, NULL))
		goto out_fail;
	free(host);
	return opt;

out_fail:
	fprintf(stderr, "bench_submit: %s through libgpuopt: %s\n", kind,
		gpo_errmsg());
	gpo_optim_free(opt);
	free(host);
	return NULL;
}

/* set up on queue family @fam of @phys: the number of variants, or -1 */
static int vk_setup(VkPhysicalDevice phys, uint32_t fam, struct vk_bench *b)
{
	uint32_t next = 0, i;
	float prio = 1.0f;
	const char *ext = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
	VkExtensionProperties *exts;
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
		.commandBufferCount = NVARIANT,
	};
	VkFenceCreateInfo fci = { .sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO };
	VkQueryPoolCreateInfo qpci = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2,
	};
	VkDescriptorSetLayoutBinding lb[NBIND];
	VkDescriptorSetLayoutCreateInfo dslci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = NBIND,
		.pBindings = lb,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = GPO_ARGS_MAX,
	};
	VkPipelineLayoutCreateInfo plci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	VkDescriptorPoolSize ps = {
		.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.descriptorCount = NBIND,
	};
	VkDescriptorPoolCreateInfo dpci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = 1,
		.poolSizeCount = 1,
		.pPoolSizes = &ps,
	};
	VkDescriptorSetAllocateInfo dsai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorSetCount = 1,
	};
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	};
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
	};
	const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	VkDescriptorBufferInfo dbi[NBIND];
	VkWriteDescriptorSet w[NBIND];
	int push = 0, v;

	vkEnumerateDeviceExtensionProperties(phys, NULL, &next, NULL);
	exts = calloc(next ? next : 1, sizeof(*exts));
	if (!exts)
		return -1;
	vkEnumerateDeviceExtensionProperties(phys, NULL, &next, exts);
	for (i = 0; i < next; i++)
		if (!strcmp(exts[i].extensionName, ext))
			push = 1;
	free(exts);
	if (!push) {
		fprintf(stderr, "bench_submit: no %s: the dispatch rows only\n",
			ext);
	} else {
		dci.enabledExtensionCount = 1;
		dci.ppEnabledExtensionNames = &ext;
	}
	qci.queueFamilyIndex = fam;
	cpci.queueFamilyIndex = fam;
	if (vkCreateDevice(phys, &dci, NULL, &b->dev) != VK_SUCCESS)
		return -1;
	vkGetDeviceQueue(b->dev, fam, 0, &b->q);
	if (push)
		b->push_desc = (PFN_vkCmdPushDescriptorSetKHR)
			vkGetDeviceProcAddr(b->dev, "vkCmdPushDescriptorSetKHR");
	if (vkCreateCommandPool(b->dev, &cpci, NULL, &b->pool) != VK_SUCCESS)
		return -1;
	cbai.commandPool = b->pool;
	if (vkAllocateCommandBuffers(b->dev, &cbai, b->cmd) != VK_SUCCESS ||
	    vkCreateQueryPool(b->dev, &qpci, NULL, &b->qp) != VK_SUCCESS ||
	    vkCreateFence(b->dev, &fci, NULL, &b->fence) != VK_SUCCESS)
		return -1;
	/* the op's bindings at slices of one buffer; the structs mapped */
	if (vk_buffer(phys, b->dev, (uint64_t)NBIND * SLICE,
		      VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0, &b->buf,
		      &b->buf_mem) ||
	    vk_buffer(phys, b->dev, 4096,
		      vis | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, vis, &b->args,
		      &b->args_mem) ||
	    vkMapMemory(b->dev, b->args_mem, 0, VK_WHOLE_SIZE, 0,
			&b->args_map) != VK_SUCCESS)
		return -1;
	for (i = 0; i < NBIND; i++)
		lb[i] = (VkDescriptorSetLayoutBinding) {
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	if (vkCreateDescriptorSetLayout(b->dev, &dslci, NULL, &b->dsl) !=
	    VK_SUCCESS)
		return -1;
	plci.pSetLayouts = &b->dsl;
	if (vkCreatePipelineLayout(b->dev, &plci, NULL, &b->pl) != VK_SUCCESS ||
	    vkCreateDescriptorPool(b->dev, &dpci, NULL, &b->dpool) !=
	    VK_SUCCESS)
		return -1;
	dsai.descriptorPool = b->dpool;
	dsai.pSetLayouts = &b->dsl;
	if (vkAllocateDescriptorSets(b->dev, &dsai, &b->set) != VK_SUCCESS)
		return -1;
	push_writes(b, dbi, w, 0, sizeof(struct gpo_sgd_args));
	for (i = 0; i < NBIND; i++)
		w[i].dstSet = b->set;
	vkUpdateDescriptorSets(b->dev, NBIND, w, 0, NULL);
	if (vk_pipeline(b->dev, b->pl, "sgd.f32", &b->sgd))
		return -1;
	if (push) {
		dslci.flags =
			VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
		if (vkCreateDescriptorSetLayout(b->dev, &dslci, NULL,
						&b->dsl_push) != VK_SUCCESS)
			return -1;
		plci.pSetLayouts = &b->dsl_push;
		if (vkCreatePipelineLayout(b->dev, &plci, NULL, &b->pl_push) !=
		    VK_SUCCESS ||
		    vk_pipeline(b->dev, b->pl_push, "sgd.f32.ab", &b->sgd_ab) ||
		    vk_pipeline(b->dev, b->pl_push, "adam.f32.ab",
				&b->adam_ab))
			return -1;
	}
	/* never time on zeros: 0.01f in every element of every binding */
	vkBeginCommandBuffer(b->cmd[0], &bi);
	vkCmdFillBuffer(b->cmd[0], b->buf, 0, VK_WHOLE_SIZE, 0x3c23d70a);
	vkEndCommandBuffer(b->cmd[0]);
	si.pCommandBuffers = &b->cmd[0];
	if (vkQueueSubmit(b->q, 1, &si, b->fence) != VK_SUCCESS ||
	    vkWaitForFences(b->dev, 1, &b->fence, VK_TRUE, UINT64_MAX) !=
	    VK_SUCCESS)
		return -1;
	vkResetFences(b->dev, 1, &b->fence);
	vkResetCommandPool(b->dev, b->pool, 0);
	sgd_args((struct gpo_sgd_args *)b->args_map);
	adam_args((struct gpo_adam_args *)((char *)b->args_map + 256), 0);
	for (v = 0; v < NVARIANT; v++) {
		if (v >= V_RECORDED && !push)
			break;
		if (vk_record(b, v, (N_ADAMW / 4 + GPO_WG_SIZE - 1) /
			      GPO_WG_SIZE))
			return -1;
	}
	return push ? NVARIANT : V_RECORDED;
}

static void vk_teardown(struct vk_bench *b)
{
	if (!b->dev)
		return;
	vkDeviceWaitIdle(b->dev);
	if (b->adam_ab)
		vkDestroyPipeline(b->dev, b->adam_ab, NULL);
	if (b->sgd_ab)
		vkDestroyPipeline(b->dev, b->sgd_ab, NULL);
	if (b->sgd)
		vkDestroyPipeline(b->dev, b->sgd, NULL);
	if (b->dpool)
		vkDestroyDescriptorPool(b->dev, b->dpool, NULL);
	if (b->pl_push)
		vkDestroyPipelineLayout(b->dev, b->pl_push, NULL);
	if (b->pl)
		vkDestroyPipelineLayout(b->dev, b->pl, NULL);
	if (b->dsl_push)
		vkDestroyDescriptorSetLayout(b->dev, b->dsl_push, NULL);
	if (b->dsl)
		vkDestroyDescriptorSetLayout(b->dev, b->dsl, NULL);
	if (b->args)
		vkDestroyBuffer(b->dev, b->args, NULL);
	if (b->args_mem)
		vkFreeMemory(b->dev, b->args_mem, NULL);
	if (b->buf)
		vkDestroyBuffer(b->dev, b->buf, NULL);
	if (b->buf_mem)
		vkFreeMemory(b->dev, b->buf_mem, NULL);
	if (b->fence)
		vkDestroyFence(b->dev, b->fence, NULL);
	if (b->qp)
		vkDestroyQueryPool(b->dev, b->qp, NULL);
	if (b->pool)
		vkDestroyCommandPool(b->dev, b->pool, NULL);
	vkDestroyDevice(b->dev, NULL);
}

/*
 * the rows on queue family @fam (@tag its name in them, "" for the one
 * libgpuopt picks), with libgpuopt's steps when @ctx
 */
static void vk_one(struct gpo_ctx *ctx, VkPhysicalDevice phys, uint32_t fam,
		   const char *tag, int reps)
{
	VkPhysicalDeviceProperties props;
	struct vk_bench b = { 0 };
	struct vk_row rows[2 * NVARIANT + 2];
	char name[300];
	int nvar, nrow = 0, r, i, k, failed;
	double dt;

	vkGetPhysicalDeviceProperties(phys, &props);
	nvar = vk_setup(phys, fam, &b);
	if (nvar < 0) {
		fprintf(stderr, "bench_submit: %s: Vulkan setup failed\n",
			props.deviceName);
		goto out;
	}
	for (i = 0; i < 2 * nvar; i++) {
		rows[nrow].v = i / 2;
		rows[nrow].wait = i % 2;
		rows[nrow].opt = NULL;
		snprintf(rows[nrow].what, sizeof(rows[nrow].what), "%s/%s%s",
			 vk_what[i / 2], i % 2 ? "wait" : "poll", tag);
		nrow++;
	}
	if (ctx) {
		rows[nrow].opt = gpo_opt(ctx, props.deviceName, "adamw",
					 N_ADAMW);
		if (rows[nrow].opt)
			snprintf(rows[nrow++].what, sizeof(rows[0].what),
				 "gpuopt_adamw_10k");
		rows[nrow].opt = gpo_opt(ctx, props.deviceName, "sgd", 4);
		if (rows[nrow].opt)
			snprintf(rows[nrow++].what, sizeof(rows[0].what),
				 "gpuopt_sgd_4");
	}
	for (r = 0; r < nrow; r++) {
		if (rows[r].opt)
			rows[r].v = -1;
		rows[r].t = calloc(reps, sizeof(double));
		if (!rows[r].t)
			nrow = r;
	}
	/* warm-up, then turns of TURN submissions a row, the rows in turn */
	failed = 0;
	for (r = 0; r < nrow && !failed; r++)
		for (i = 0; i < WARMUP && !failed; i++)
			failed = vk_iter(&b, &rows[r]) < 0;
	for (k = 0; k < reps && !failed; k += TURN)
		for (r = 0; r < nrow && !failed; r++)
			for (i = k; i < k + TURN && i < reps; i++) {
				dt = vk_iter(&b, &rows[r]);
				if (dt < 0) {
					failed = 1;
					break;
				}
				rows[r].t[i] = dt;
			}
	if (failed)
		fprintf(stderr, "bench_submit: %s: a submission failed (%s)\n",
			props.deviceName, gpo_errmsg());
	for (r = 0; r < nrow; r++) {
		if (!failed) {
			snprintf(name, sizeof(name), "%.200s, %.47s",
				 props.deviceName, rows[r].what);
			print_row("vulkan", name, median(rows[r].t, reps));
		}
		free(rows[r].t);
		gpo_optim_free(rows[r].opt);
	}
out:
	vk_teardown(&b);
}

static void vk_all(int reps, int all, int lib)
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
	VkQueueFamilyProperties qf[16];
	struct gpo_ctx *ctx = NULL;
	uint32_t n = 16, nqf, fam, f, i;
	VkInstance inst;
	char tag[32];

	if (lib && gpo_ctx_new(&ctx, 0)) {
		fprintf(stderr, "bench_submit: libgpuopt: %s\n", gpo_errmsg());
		ctx = NULL;
	}
	if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS)
		goto out_ctx;
	if (vkEnumeratePhysicalDevices(inst, &n, phys) < 0)
		n = 0;
	for (i = 0; i < n; i++) {
		vkGetPhysicalDeviceProperties(phys[i], &props);
		if (!all && props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU)
			continue;
		nqf = 16;
		vkGetPhysicalDeviceQueueFamilyProperties(phys[i], &nqf, qf);
		/* libgpuopt's: the first compute family with timestamps */
		for (fam = 0; fam < nqf; fam++)
			if ((qf[fam].queueFlags & VK_QUEUE_COMPUTE_BIT) &&
			    qf[fam].queueCount && qf[fam].timestampValidBits)
				break;
		if (fam < nqf)
			vk_one(ctx, phys[i], fam, "", reps);
		/* a compute-only family (NVIDIA's async compute) answers too */
		for (f = 0; f < nqf; f++)
			if (f != fam && qf[f].queueCount &&
			    qf[f].timestampValidBits &&
			    (qf[f].queueFlags & (VK_QUEUE_COMPUTE_BIT |
						 VK_QUEUE_GRAPHICS_BIT)) ==
			    VK_QUEUE_COMPUTE_BIT)
				break;
		if (f < nqf) {
			snprintf(tag, sizeof(tag), ", queue family %u", f);
			vk_one(NULL, phys[i], f, tag, reps);
		}
	}
	vkDestroyInstance(inst, NULL);
out_ctx:
	if (ctx)
		gpo_ctx_free(ctx);
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
	int reps = 2000, all = 0, lib = 1, c;
	double *t;

	while ((c = getopt(argc, argv, "r:an")) != -1) {
		switch (c) {
		case 'r':
			reps = atoi(optarg);
			break;
		case 'a':
			all = 1;
			break;
		case 'n':
			lib = 0;
			break;
		default:
			fprintf(stderr, "usage: %s [-r REPS] [-a] [-n]\n",
				argv[0]);
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
	printf("# bench_submit: one submission and its wait through the driver alone (gpuopt_*: through libgpuopt), median of %d\n",
	       reps);
	printf("%-7s %-64s %9s\n", "api", "device, what", "floor_us");
#ifdef GPO_HAVE_VULKAN
	vk_all(reps, all, lib);
#endif
#ifdef GPO_HAVE_OPENCL
	cl_all(reps, all, t);
#endif
	free(t);
	return 0;
}
