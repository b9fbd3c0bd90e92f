// SPDX-License-Identifier: MIT
/*
 * interop_vulkan.c - a Vulkan program that computes its gradients in its
 * own compute shader and steps AdamW with gpuopt on its own buffers, with
 * no copy of parameters or gradients through the host.
 *
 *   interop_vulkan [-d N] [-n PARAMS] [-s STEPS] [-c] [-x]
 *
 * It makes its own instance, device and queue (physical device N, else
 * the first discrete GPU, else the first), buffers for the parameters,
 * the gradients and the data of a quadratic loss 1/2 sum a_i (w_i - t_i)^2
 * (interop_vulkan_grad.comp), and hands them to gpuopt:
 *
 *   by default, its VkDevice and queue (gpo_device_adopt_vulkan) and its
 *   VkBuffers (gpo_optim_bind, GPO_EXTBUF_VK_BUFFER). A step is its
 *   gradient kernel submitted to the queue, then gpo_optim_step(), which
 *   submits behind it on the same queue: the queue orders them, nothing
 *   waits in between.
 *
 *   -x: its memory, exported as opaque fds (VK_KHR_external_memory_fd) and
 *   imported by gpuopt's own device of the same GPU (GPO_EXTBUF_VK_FD).
 *   Two VkDevices: the program waits for its kernel before the step.
 *
 * -c runs the same steps again the way a program without interop must:
 * gradients copied to the host, gpo_optim_write(), the step on gpuopt's
 * own device of the same GPU, gpo_optim_read(), parameters copied back.
 * It prints the time a step takes each way and whether the final
 * parameters are the same bytes (exit 1 if not).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include <gpuopt.h>

#define WG		256	/* the shader's local_size_x */
#define SETTINGS	"lr=0.01 weight_decay=0.01"

/* the gradient kernel's SPIR-V, made by glslc -mfmt=c at build time */
static const uint32_t grad_spv[] =
#include "interop_vulkan_grad.spv.h"
;

struct buf {
	VkBuffer buf;
	VkDeviceMemory mem;
	uint64_t size;		/* allocationSize */
	uint32_t type;
	void *map;		/* staging only */
};

struct app {
	VkInstance inst;
	VkPhysicalDevice phys;
	VkPhysicalDeviceMemoryProperties mp;
	char name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
	char uuid[2 * VK_UUID_SIZE + 1];
	VkDevice dev;
	VkQueue queue;
	uint32_t qfam;
	int export;		/* -x: memory exported as fds */
	VkCommandPool pool;
	VkCommandBuffer cmd;	/* one-off transfers */
	VkCommandBuffer step;	/* the gradient kernel, recorded once */
	VkCommandBuffer hstep;	/* -c: the same with copies to the host */
	VkFence fence;
	VkShaderModule shader;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout layout;
	VkPipeline pipe;
	VkDescriptorPool dpool;
	VkDescriptorSet set;
	struct buf p, g, d, s;	/* params, grads, data, staging */
	uint64_t n;
	const float *data;	/* (a_i, t_i) on the host */
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int vk_fail(const char *what, VkResult r)
{
	fprintf(stderr, "interop_vulkan: %s: VkResult %d\n", what, (int)r);
	return 1;
}

static int gpo_fail(const char *what, int err)
{
	fprintf(stderr, "interop_vulkan: %s: %s (%s)\n", what, gpo_errmsg(),
		strerror(-err));
	return 1;
}

/* ---- the program's own Vulkan objects ------------------------------------ */

static int pick_device(struct app *a, int want)
{
	VkPhysicalDevice phys[16];
	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceIDProperties idp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
	};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &idp,
	};
	uint32_t n = 16, i;
	int k;

	if (vkEnumeratePhysicalDevices(a->inst, &n, phys) < 0 || !n) {
		fprintf(stderr, "interop_vulkan: no Vulkan device\n");
		return 1;
	}
	k = want;
	if (k < 0) {
		k = 0;
		for (i = n; i-- > 0;) {
			vkGetPhysicalDeviceProperties(phys[i], &props);
			if (props.deviceType ==
			    VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)
				k = (int)i;
		}
	}
	if (k >= (int)n) {
		fprintf(stderr, "interop_vulkan: -d %d: %u devices\n", k, n);
		return 1;
	}
	a->phys = phys[k];
	vkGetPhysicalDeviceProperties2(a->phys, &p2);
	if (p2.properties.apiVersion < VK_API_VERSION_1_1) {
		fprintf(stderr, "interop_vulkan: %s: Vulkan 1.1 needed\n",
			p2.properties.deviceName);
		return 1;
	}
	snprintf(a->name, sizeof(a->name), "%s", p2.properties.deviceName);
	for (i = 0; i < VK_UUID_SIZE; i++)
		snprintf(a->uuid + 2 * i, 3, "%02x", idp.deviceUUID[i]);
	vkGetPhysicalDeviceMemoryProperties(a->phys, &a->mp);
	return 0;
}

static int make_device(struct app *a)
{
	VkQueueFamilyProperties qf[32];
	uint32_t nq = 32, i;
	const float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	const char *ext = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.enabledExtensionCount = a->export,
		.ppEnabledExtensionNames = &ext,
	};
	VkCommandPoolCreateInfo cpci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
	};
	VkCommandBufferAllocateInfo cbai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 3,
	};
	VkFenceCreateInfo fci = {
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	};
	VkCommandBuffer cmds[3];
	VkResult r;

	vkGetPhysicalDeviceQueueFamilyProperties(a->phys, &nq, qf);
	a->qfam = UINT32_MAX;
	for (i = 0; i < nq && a->qfam == UINT32_MAX; i++)
		if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			a->qfam = i;
	if (a->qfam == UINT32_MAX) {
		fprintf(stderr, "interop_vulkan: %s: no compute queue\n",
			a->name);
		return 1;
	}
	qci.queueFamilyIndex = a->qfam;
	r = vkCreateDevice(a->phys, &dci, NULL, &a->dev);
	if (r != VK_SUCCESS)
		return vk_fail(a->export ? "vkCreateDevice (with VK_KHR_external_memory_fd)" :
			       "vkCreateDevice", r);
	vkGetDeviceQueue(a->dev, a->qfam, 0, &a->queue);
	cpci.queueFamilyIndex = a->qfam;
	r = vkCreateCommandPool(a->dev, &cpci, NULL, &a->pool);
	if (r != VK_SUCCESS)
		return vk_fail("vkCreateCommandPool", r);
	cbai.commandPool = a->pool;
	r = vkAllocateCommandBuffers(a->dev, &cbai, cmds);
	if (r != VK_SUCCESS)
		return vk_fail("vkAllocateCommandBuffers", r);
	a->cmd = cmds[0];
	a->step = cmds[1];
	a->hstep = cmds[2];
	r = vkCreateFence(a->dev, &fci, NULL, &a->fence);
	return r == VK_SUCCESS ? 0 : vk_fail("vkCreateFence", r);
}

/*
 * a buffer of @bytes in memory with @want (device-local for the program's
 * data, host-visible for staging), exportable as an fd if @export
 */
static int make_buf(struct app *a, struct buf *b, uint64_t bytes,
		    VkBufferUsageFlags usage, VkMemoryPropertyFlags want,
		    int export)
{
	VkExternalMemoryBufferCreateInfo ebci = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = export ? &ebci : NULL,
		.size = bytes,
		.usage = usage,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkExportMemoryAllocateInfo emai = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = export ? &emai : NULL,
	};
	VkMemoryRequirements req;
	uint32_t i, type = UINT32_MAX;
	VkResult r;

	r = vkCreateBuffer(a->dev, &bci, NULL, &b->buf);
	if (r != VK_SUCCESS)
		return vk_fail("vkCreateBuffer", r);
	vkGetBufferMemoryRequirements(a->dev, b->buf, &req);
	mai.allocationSize = req.size;
	/*
	 * the first type with @want that takes it (and exports it); for
	 * device-local memory any type next, more slowly
	 */
	r = VK_ERROR_OUT_OF_DEVICE_MEMORY;
	for (i = 0; i < 2 * a->mp.memoryTypeCount && type == UINT32_MAX; i++) {
		uint32_t t = i % a->mp.memoryTypeCount;
		VkMemoryPropertyFlags f = a->mp.memoryTypes[t].propertyFlags;

		if (!(req.memoryTypeBits & (1u << t)) ||
		    (i < a->mp.memoryTypeCount ? (f & want) != want :
		     !!(want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)))
			continue;
		mai.memoryTypeIndex = t;
		r = vkAllocateMemory(a->dev, &mai, NULL, &b->mem);
		if (r == VK_SUCCESS)
			type = t;
	}
	if (type == UINT32_MAX)
		return vk_fail("no memory type takes a buffer", r);
	r = vkBindBufferMemory(a->dev, b->buf, b->mem, 0);
	if (r == VK_SUCCESS && (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT))
		r = vkMapMemory(a->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &b->map);
	if (r != VK_SUCCESS)
		return vk_fail("vkAllocateMemory", r);
	b->size = req.size;
	b->type = type;
	return 0;
}

static void free_buf(struct app *a, struct buf *b)
{
	if (b->buf)
		vkDestroyBuffer(a->dev, b->buf, NULL);
	if (b->mem)
		vkFreeMemory(a->dev, b->mem, NULL);
}

static int make_pipeline(struct app *a)
{
	VkShaderModuleCreateInfo smci = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		.codeSize = sizeof(grad_spv),
		.pCode = grad_spv,
	};
	VkDescriptorSetLayoutBinding bind[3];
	VkDescriptorSetLayoutCreateInfo dslci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = 3,
		.pBindings = bind,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = sizeof(uint32_t),
	};
	VkPipelineLayoutCreateInfo plci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &a->dsl,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	VkComputePipelineCreateInfo cpci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.pName = "main",
		},
	};
	VkDescriptorPoolSize ps = {
		.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.descriptorCount = 3,
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
		.pSetLayouts = &a->dsl,
	};
	VkDescriptorBufferInfo bi[3] = {
		{ a->p.buf, 0, VK_WHOLE_SIZE },
		{ a->g.buf, 0, VK_WHOLE_SIZE },
		{ a->d.buf, 0, VK_WHOLE_SIZE },
	};
	VkWriteDescriptorSet w = {
		.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
		.dstBinding = 0,
		.descriptorCount = 3,
		.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.pBufferInfo = bi,
	};
	VkResult r;
	int i;

	for (i = 0; i < 3; i++) {
		memset(&bind[i], 0, sizeof(bind[i]));
		bind[i].binding = (uint32_t)i;
		bind[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
		bind[i].descriptorCount = 1;
		bind[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
	}
	r = vkCreateShaderModule(a->dev, &smci, NULL, &a->shader);
	if (r == VK_SUCCESS)
		r = vkCreateDescriptorSetLayout(a->dev, &dslci, NULL, &a->dsl);
	if (r == VK_SUCCESS)
		r = vkCreatePipelineLayout(a->dev, &plci, NULL, &a->layout);
	if (r != VK_SUCCESS)
		return vk_fail("pipeline layout", r);
	cpci.stage.module = a->shader;
	cpci.layout = a->layout;
	r = vkCreateComputePipelines(a->dev, VK_NULL_HANDLE, 1, &cpci, NULL,
				     &a->pipe);
	if (r == VK_SUCCESS)
		r = vkCreateDescriptorPool(a->dev, &dpci, NULL, &a->dpool);
	if (r != VK_SUCCESS)
		return vk_fail("vkCreateComputePipelines", r);
	dsai.descriptorPool = a->dpool;
	r = vkAllocateDescriptorSets(a->dev, &dsai, &a->set);
	if (r != VK_SUCCESS)
		return vk_fail("vkAllocateDescriptorSets", r);
	w.dstSet = a->set;
	vkUpdateDescriptorSets(a->dev, 1, &w, 0, NULL);
	return 0;
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags dst)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT |
				 VK_ACCESS_MEMORY_WRITE_BIT,
	};

	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, dst, 0,
			     1, &mb, 0, NULL, 0, NULL);
}

/*
 * -x: the parameters and gradients are shared with gpuopt's device, which
 * holds them between the program's command buffers: each acquires them
 * from VK_QUEUE_FAMILY_EXTERNAL first and releases them last (Vulkan's
 * queue family ownership transfer between devices; gpuopt does the same)
 */
static void own(struct app *a, VkCommandBuffer cmd, int acquire)
{
	VkBufferMemoryBarrier bb[2];
	int i;

	if (!a->export)
		return;
	for (i = 0; i < 2; i++)
		bb[i] = (VkBufferMemoryBarrier) {
			.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
			.srcAccessMask = acquire ? 0 :
					 VK_ACCESS_MEMORY_WRITE_BIT,
			.dstAccessMask = acquire ? VK_ACCESS_MEMORY_READ_BIT |
					 VK_ACCESS_MEMORY_WRITE_BIT : 0,
			.srcQueueFamilyIndex = acquire ?
				VK_QUEUE_FAMILY_EXTERNAL : a->qfam,
			.dstQueueFamilyIndex = acquire ? a->qfam :
				VK_QUEUE_FAMILY_EXTERNAL,
			.buffer = i ? a->g.buf : a->p.buf,
			.size = VK_WHOLE_SIZE,
		};
	vkCmdPipelineBarrier(cmd, acquire ? VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT :
			     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
			     acquire ? VK_PIPELINE_STAGE_ALL_COMMANDS_BIT :
			     VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, NULL,
			     2, bb, 0, NULL);
}

static void copy(VkCommandBuffer cmd, VkBuffer src, uint64_t soff,
		 VkBuffer dst, uint64_t doff, uint64_t bytes)
{
	VkBufferCopy region = { soff, doff, bytes };

	vkCmdCopyBuffer(cmd, src, dst, 1, &region);
}

/* the gradient kernel, after whatever wrote the parameters before */
static void record_grad(struct app *a, VkCommandBuffer cmd)
{
	uint32_t n = (uint32_t)a->n;

	barrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
	vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->pipe);
	vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, a->layout,
				0, 1, &a->set, 0, NULL);
	vkCmdPushConstants(cmd, a->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
			   sizeof(n), &n);
	vkCmdDispatch(cmd, (n + WG - 1) / WG, 1, 1);
}

static int begin(VkCommandBuffer cmd, VkCommandBufferUsageFlags flags)
{
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = flags,
	};
	VkResult r = vkBeginCommandBuffer(cmd, &bi);

	return r == VK_SUCCESS ? 0 : vk_fail("vkBeginCommandBuffer", r);
}

/* submit @cmd, signalling the fence */
static int submit(struct app *a, VkCommandBuffer cmd)
{
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &cmd,
	};
	VkResult r;

	r = vkQueueSubmit(a->queue, 1, &si, a->fence);
	return r == VK_SUCCESS ? 0 : vk_fail("vkQueueSubmit", r);
}

static int fence_wait(struct app *a)
{
	VkResult r = vkWaitForFences(a->dev, 1, &a->fence, VK_TRUE, UINT64_MAX);

	if (r != VK_SUCCESS)
		return vk_fail("vkWaitForFences", r);
	vkResetFences(a->dev, 1, &a->fence);
	return 0;
}

/* @bytes of host memory @src into @dst, through staging */
static int upload(struct app *a, const void *src, VkBuffer dst, uint64_t bytes)
{
	int ret;

	memcpy(a->s.map, src, bytes);
	ret = begin(a->cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
	if (ret)
		return ret;
	own(a, a->cmd, 1);
	barrier(a->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT);
	copy(a->cmd, a->s.buf, 0, dst, 0, bytes);
	barrier(a->cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT);
	own(a, a->cmd, 0);
	vkEndCommandBuffer(a->cmd);
	ret = submit(a, a->cmd);
	return ret ? ret : fence_wait(a);
}

static int download(struct app *a, VkBuffer src, void *dst, uint64_t bytes)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
	};
	int ret;

	ret = begin(a->cmd, VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
	if (ret)
		return ret;
	own(a, a->cmd, 1);
	barrier(a->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT);
	copy(a->cmd, src, 0, a->s.buf, 0, bytes);
	vkCmdPipelineBarrier(a->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0,
			     NULL);
	own(a, a->cmd, 0);
	vkEndCommandBuffer(a->cmd);
	ret = submit(a, a->cmd);
	if (!ret)
		ret = fence_wait(a);
	if (!ret)
		memcpy(dst, a->s.map, bytes);
	return ret;
}

static int export_fd(struct app *a, struct buf *b, int *fd)
{
	PFN_vkGetMemoryFdKHR get_fd = (PFN_vkGetMemoryFdKHR)
		vkGetDeviceProcAddr(a->dev, "vkGetMemoryFdKHR");
	VkMemoryGetFdInfoKHR gfi = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
		.memory = b->mem,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkResult r;

	if (!get_fd) {
		fprintf(stderr, "interop_vulkan: no vkGetMemoryFdKHR\n");
		return 1;
	}
	r = get_fd(a->dev, &gfi, fd);
	return r == VK_SUCCESS ? 0 : vk_fail("vkGetMemoryFdKHR", r);
}

/*
 * The buffers (parameters and gradients of @bytes, gpuopt's flat buffers
 * with their padding), the pipeline, the two step command buffers, and
 * the data uploaded
 */
static int setup(struct app *a, uint64_t bytes)
{
	const VkBufferUsageFlags rw = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
				      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
				      VK_BUFFER_USAGE_TRANSFER_DST_BIT;
	const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags local = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	uint64_t vec = a->n * sizeof(float);

	if (make_buf(a, &a->p, bytes, rw, local, a->export) ||
	    make_buf(a, &a->g, bytes, rw, local, a->export) ||
	    make_buf(a, &a->d, 2 * vec, rw, local, 0) ||
	    make_buf(a, &a->s, 2 * vec, VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
		     VK_BUFFER_USAGE_TRANSFER_DST_BIT, vis, 0) ||
	    make_pipeline(a))
		return 1;

	/* the kernel alone; and with the copies of a step through the host */
	if (begin(a->step, 0))
		return 1;
	own(a, a->step, 1);
	record_grad(a, a->step);
	own(a, a->step, 0);
	vkEndCommandBuffer(a->step);
	if (begin(a->hstep, 0))
		return 1;
	own(a, a->hstep, 1);
	barrier(a->hstep, VK_PIPELINE_STAGE_TRANSFER_BIT);
	copy(a->hstep, a->s.buf, 0, a->p.buf, 0, vec);
	record_grad(a, a->hstep);
	barrier(a->hstep, VK_PIPELINE_STAGE_TRANSFER_BIT);
	copy(a->hstep, a->g.buf, 0, a->s.buf, vec, vec);
	barrier(a->hstep, VK_PIPELINE_STAGE_HOST_BIT);
	own(a, a->hstep, 0);
	vkEndCommandBuffer(a->hstep);
	return upload(a, a->data, a->d.buf, 2 * vec);
}

/* ---- gpuopt -------------------------------------------------------------- */

/* gpuopt's own Vulkan device of the program's GPU (not an adopted one) */
static int own_device(struct gpo_ctx *ctx, const char *uuid,
		      struct gpo_device **out)
{
	struct gpo_device_info info;
	int i, ret;

	for (i = 0; i < gpo_device_count(ctx); i++) {
		if (gpo_device_info(ctx, i, &info) ||
		    strcmp(info.backend, "vulkan") || strcmp(info.uuid, uuid) ||
		    strstr(info.driver, "adopted"))
			continue;
		ret = gpo_device_get(ctx, i, out);
		return ret ? gpo_fail(info.id, ret) : 0;
	}
	fprintf(stderr, "interop_vulkan: gpuopt has no Vulkan device of uuid %s\n",
		uuid);
	return 1;
}

static int new_opt(struct gpo_device *dev, uint64_t n, struct gpo_optim **out)
{
	int ret;

	ret = gpo_optim_new(dev, GPO_ADAMW, out);
	if (ret)
		return gpo_fail("gpo_optim_new", ret);
	ret = gpo_optim_configure(*out, 0, SETTINGS);
	if (!ret)
		ret = gpo_optim_add_tensor(*out, "w", 1, &n, 0);
	return ret < 0 ? gpo_fail("the optimizer", ret) : 0;
}

static int bind(struct app *a, struct gpo_optim *opt, const char *slot,
		struct buf *b)
{
	struct gpo_extbuf eb = {
		.kind = GPO_EXTBUF_VK_BUFFER,
		.handle = b->buf,
		.fd = -1,
		.size = b->size,
		.dtype = GPO_F32,
		.vk_memory_type = b->type,
	};
	int ret;

	if (a->export) {
		eb.kind = GPO_EXTBUF_VK_FD;
		eb.handle = NULL;
		if (export_fd(a, b, &eb.fd))
			return 1;
	}
	ret = gpo_optim_bind(opt, slot, &eb);
	if (ret) {
		if (a->export)
			close(eb.fd);
		return gpo_fail(slot, ret);
	}
	return 0;
}

/*
 * The steps with gpuopt on the program's buffers; the final parameters
 * in @w, the seconds each step took in @dt.
 */
static int run_interop(struct app *a, struct gpo_ctx *ctx, uint64_t steps,
		       const float *w0, float *w, double *dt)
{
	struct gpo_vulkan_handles h = {
		.instance = a->inst,
		.physical_device = a->phys,
		.device = a->dev,
		.queue = a->queue,
		.queue_family = a->qfam,
	};
	struct gpo_device_info info;
	struct gpo_step_info si;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	double t0;
	uint64_t s;
	int ret;

	if (a->export)
		ret = own_device(ctx, a->uuid, &dev);
	else if ((ret = gpo_device_adopt_vulkan(ctx, &h, &dev)))
		ret = gpo_fail("gpo_device_adopt_vulkan", ret);
	if (ret)
		return ret;
	gpo_device_info(ctx, gpo_device_index(dev), &info);
	printf("interop: %s %s (%s)\n", a->export ? "memory shared by fd with" :
	       "adopted as", info.id, info.driver);
	ret = new_opt(dev, a->n, &opt);
	if (ret)
		return ret;
	ret = setup(a, gpo_optim_buffer_bytes(opt, "param"));
	if (!ret)
		ret = upload(a, w0, a->p.buf, a->n * sizeof(float));
	if (!ret)
		ret = bind(a, opt, "param", &a->p);
	if (!ret)
		ret = bind(a, opt, "grad", &a->g);
	if (ret)
		goto out_free;

	for (s = 0; s < steps; s++) {
		t0 = now();
		ret = submit(a, a->step);
		/*
		 * one queue: the step's batch waits for the kernel by itself;
		 * two devices (-x): the program waits before gpuopt's step
		 */
		if (!ret && a->export)
			ret = fence_wait(a);
		if (ret)
			goto out_free;
		ret = gpo_optim_step(opt, &si);
		if (ret) {
			ret = gpo_fail("gpo_optim_step", ret);
			goto out_free;
		}
		/* done already (the step came after it): frees a->step */
		if (!a->export && fence_wait(a)) {
			ret = 1;
			goto out_free;
		}
		dt[s] = now() - t0;
	}
	ret = download(a, a->p.buf, w, a->n * sizeof(float));
out_free:
	gpo_optim_free(opt);
	return ret;
}

/*
 * The same steps as a program without interop takes them: gradients to
 * the host, into gpuopt's own device, the step, parameters back
 */
static int run_host(struct app *a, struct gpo_ctx *ctx, uint64_t steps,
		    const float *w0, float *w, double *dt)
{
	uint64_t bytes = a->n * sizeof(float), s;
	unsigned char *sp = a->s.map, *sg = sp + bytes;
	struct gpo_step_info si;
	struct gpo_device *dev;
	struct gpo_optim *opt;
	double t0;
	int ret;

	ret = own_device(ctx, a->uuid, &dev);
	if (ret)
		return ret;
	ret = new_opt(dev, a->n, &opt);
	if (ret)
		return ret;
	ret = gpo_optim_write(opt, "param", "w", w0, bytes);
	if (ret) {
		ret = gpo_fail("gpo_optim_write", ret);
		goto out_free;
	}
	memcpy(sp, w0, bytes);
	for (s = 0; s < steps; s++) {
		t0 = now();
		ret = submit(a, a->hstep);
		if (!ret)
			ret = fence_wait(a);
		if (ret)
			goto out_free;
		ret = gpo_optim_write(opt, "grad", "w", sg, bytes);
		if (!ret)
			ret = gpo_optim_step(opt, &si);
		if (!ret)
			ret = gpo_optim_read(opt, "param", "w", sp, bytes);
		if (ret) {
			ret = gpo_fail("the step through host buffers", ret);
			goto out_free;
		}
		dt[s] = now() - t0;
	}
	memcpy(w, sp, bytes);
out_free:
	gpo_optim_free(opt);
	return ret;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/*
 * The median and mean of @n steps' times in microseconds, the first left
 * out (it builds pipelines); the median stands where others share the
 * machine
 */
static void step_times(double *dt, uint64_t n, double *median, double *mean)
{
	double sum = 0;
	uint64_t i;

	*median = *mean = 0;
	if (n < 2)
		return;
	for (i = 1; i < n; i++)
		sum += dt[i];
	qsort(dt + 1, n - 1, sizeof(*dt), cmp_double);
	*median = dt[1 + (n - 1) / 2] * 1e6;
	*mean = sum / (double)(n - 1) * 1e6;
}

/* the loss, on the host, in double */
static double loss(const float *w, const float *d, uint64_t n)
{
	double l = 0, e;
	uint64_t i;

	for (i = 0; i < n; i++) {
		e = (double)w[i] - d[2 * i + 1];
		l += 0.5 * d[2 * i] * e * e;
	}
	return l;
}

static int usage(const char *prog, int status)
{
	fprintf(status ? stderr : stdout,
		"usage: %s [-d N] [-n PARAMS] [-s STEPS] [-c] [-x]\n"
		"  -d N  Vulkan physical device N (default: the first discrete GPU)\n"
		"  -c    also step through host buffers; compare and time both\n"
		"  -x    share memory by fd with gpuopt's own device, not adopt\n",
		prog);
	return status;
}

int main(int argc, char **argv)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "interop_vulkan",
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	uint64_t steps = 200, seed, i;
	float *w0 = NULL, *w = NULL, *wh = NULL, *d = NULL;
	double *dt = NULL, med, mean, med_host, mean_host;
	struct gpo_ctx *ctx = NULL;
	int c, dev_index = -1, compare = 0, ret, status = 1;
	struct app a;

	memset(&a, 0, sizeof(a));
	a.n = 10000;
	while ((c = getopt(argc, argv, "d:n:s:cxh")) != -1) {
		switch (c) {
		case 'd': dev_index = atoi(optarg); break;
		case 'n': a.n = strtoull(optarg, NULL, 10); break;
		case 's': steps = strtoull(optarg, NULL, 10); break;
		case 'c': compare = 1; break;
		case 'x': a.export = 1; break;
		case 'h': return usage(argv[0], 0);
		default: return usage(argv[0], 2);
		}
	}
	if (optind != argc || !a.n || a.n > (1u << 28) || !steps)
		return usage(argv[0], 2);

	if (vkCreateInstance(&ici, NULL, &a.inst) != VK_SUCCESS) {
		fprintf(stderr, "interop_vulkan: no Vulkan 1.1 instance\n");
		return 1;
	}
	if (pick_device(&a, dev_index) || make_device(&a))
		goto out;
	ret = gpo_ctx_new(&ctx, 0);
	if (ret) {
		gpo_fail("gpo_ctx_new", ret);
		goto out;
	}
	/* random curvatures in [0.5, 2), targets and start in [-1, 1) */
	w0 = malloc(a.n * sizeof(float));
	w = malloc(a.n * sizeof(float));
	wh = malloc(a.n * sizeof(float));
	d = malloc(2 * a.n * sizeof(float));
	dt = malloc(steps * sizeof(*dt));
	if (!w0 || !w || !wh || !d || !dt) {
		fprintf(stderr, "interop_vulkan: out of memory\n");
		goto out;
	}
	seed = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull | 1;
	for (i = 0; i < 2 * a.n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		d[i] = (float)((seed >> 11) * 0x1p-53);
		d[i] = i % 2 ? 2 * d[i] - 1 : 0.5f + 1.5f * d[i];
		if (i % 2 == 0)
			continue;
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		w0[i / 2] = (float)((seed >> 11) * 0x1p-53) * 2 - 1;
	}
	a.data = d;

	printf("device: %s (uuid %s), %llu parameters, %llu steps of AdamW (%s)\n",
	       a.name, a.uuid, (unsigned long long)a.n,
	       (unsigned long long)steps, SETTINGS);
	if (run_interop(&a, ctx, steps, w0, w, dt))
		goto out;
	step_times(dt, steps, &med, &mean);
	printf("interop: %.1f us a step, mean %.1f (its gradient kernel, then gpo_optim_step on %s)\n",
	       med, mean, a.export ? "the buffers shared by fd" : "the same queue");
	printf("loss: %.6g -> %.6g\n", loss(w0, d, a.n), loss(w, d, a.n));
	status = 0;
	if (compare) {
		if (run_host(&a, ctx, steps, w0, wh, dt)) {
			status = 1;
			goto out;
		}
		step_times(dt, steps, &med_host, &mean_host);
		printf("host copies: %.1f us a step, mean %.1f (gradients to the host, gpo_optim_write, gpo_optim_step, gpo_optim_read, parameters back)\n",
		       med_host, mean_host);
		if (med_host > 0)
			printf("interop/host: %.2f\n", med / med_host);
		status = memcmp(w, wh, a.n * sizeof(float)) != 0;
		printf("same bytes: %s\n", status ? "no" : "yes");
		for (i = 0; status && i < a.n; i++)
			if (memcmp(&w[i], &wh[i], sizeof(float))) {
				printf("first difference: w[%llu] %a, through the host %a\n",
				       (unsigned long long)i, w[i], wh[i]);
				break;
			}
	}
out:
	/* gpuopt lets go of the program's objects before they go */
	gpo_ctx_free(ctx);
	if (a.dev) {
		vkDeviceWaitIdle(a.dev);
		if (a.pipe)
			vkDestroyPipeline(a.dev, a.pipe, NULL);
		if (a.layout)
			vkDestroyPipelineLayout(a.dev, a.layout, NULL);
		if (a.dsl)
			vkDestroyDescriptorSetLayout(a.dev, a.dsl, NULL);
		if (a.dpool)
			vkDestroyDescriptorPool(a.dev, a.dpool, NULL);
		if (a.shader)
			vkDestroyShaderModule(a.dev, a.shader, NULL);
		free_buf(&a, &a.p);
		free_buf(&a, &a.g);
		free_buf(&a, &a.d);
		free_buf(&a, &a.s);
		if (a.fence)
			vkDestroyFence(a.dev, a.fence, NULL);
		if (a.pool)
			vkDestroyCommandPool(a.dev, a.pool, NULL);
		vkDestroyDevice(a.dev, NULL);
	}
	vkDestroyInstance(a.inst, NULL);
	free(w0);
	free(w);
	free(wh);
	free(d);
	free(dt);
	return status;
}
