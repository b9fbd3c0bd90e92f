// SPDX-License-Identifier: MIT
/*
 * descriptor.c - the Vulkan backend's one pipeline layout (OP_MAX_BUF
 * storage buffers, GPO_ARGS_MAX bytes of push constants) and the
 * descriptors of a launch: pushed with VK_KHR_push_descriptor, else from
 * a cache of sets keyed by the bound ranges, so that a step allocates
 * nothing either way
 */
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"

/*
 * Every set is emptied when a buffer is freed (a new one may get its
 * handle) or when the cache is full.
 */
void gpo__vk_desc_cache_clear(struct vk_dev *vd)
{
	if (!vd->desc_used)
		return;
	vkResetDescriptorPool(vd->device, vd->desc_pool, 0);
	memset(vd->desc_tab, 0, 2 * VK_DESC_CACHE * sizeof(*vd->desc_tab));
	vd->desc_used = 0;
}

static uint64_t desc_hash(const struct vk_desc_key *key)
{
	const unsigned char *p = (const unsigned char *)key;
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < sizeof(*key); i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

/*
 * gpo__vk_desc_set - the cached descriptor set for these bindings,
 * written on a miss. A full cache is emptied (after the batch that uses
 * it finished).
 */
int gpo__vk_desc_set(struct gpo_device *dev, const VkDescriptorBufferInfo *bi,
		     uint32_t nbuf, VkDescriptorSet *out)
{
	struct vk_dev *vd = dev->priv;
	VkDescriptorSetAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = vd->desc_pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &vd->set_layout,
	};
	VkWriteDescriptorSet w[OP_MAX_BUF];
	struct vk_desc_key key;
	struct vk_desc_entry *e;
	uint32_t i, slot, slots = 2 * VK_DESC_CACHE;
	VkResult r;
	int ret;

	memset(&key, 0, sizeof(key));
	for (i = 0; i < nbuf; i++) {
		key.buffer[i] = bi[i].buffer;
		key.off[i] = bi[i].offset;
		key.range[i] = bi[i].range;
	}
	slot = (uint32_t)(desc_hash(&key) % slots);
	for (;;) {
		e = &vd->desc_tab[slot];
		if (!e->set)
			break;
		if (!memcmp(&e->key, &key, sizeof(key))) {
			*out = e->set;
			return 0;
		}
		slot = (slot + 1) % slots;
	}
	if (vd->desc_used >= VK_DESC_CACHE) {
		ret = gpo__vk_batch_flush(dev);
		if (ret)
			return ret;
		gpo__vk_desc_cache_clear(vd);
		return gpo__vk_desc_set(dev, bi, nbuf, out);
	}
	r = vkAllocateDescriptorSets(vd->device, &ai, &e->set);
	if (r != VK_SUCCESS) {
		e->set = VK_NULL_HANDLE;
		return gpo__vk_fail(dev, r, "vkAllocateDescriptorSets");
	}
	for (i = 0; i < nbuf; i++)
		w[i] = (VkWriteDescriptorSet) {
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstSet = e->set,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
	vkUpdateDescriptorSets(vd->device, nbuf, w, 0, NULL);
	e->key = key;
	vd->desc_used++;
	*out = e->set;
	return 0;
}

int gpo__vk_create_layout(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	/* the op's buffers, then GPO_ARGS_BINDING (recorded steps) */
	VkDescriptorSetLayoutBinding b[OP_MAX_BUF + 1];
	VkDescriptorSetLayoutCreateInfo dslci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.flags = vd->push_desc ?
			VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
		.bindingCount = OP_MAX_BUF + 1,
		.pBindings = b,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = GPO_ARGS_MAX,
	};
	VkPipelineLayoutCreateInfo plci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pSetLayouts = &vd->set_layout,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	VkDescriptorPoolSize ps = {
		.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
		.descriptorCount = VK_DESC_CACHE * (OP_MAX_BUF + 1),
	};
	VkDescriptorPoolCreateInfo dpci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = VK_DESC_CACHE,
		.poolSizeCount = 1,
		.pPoolSizes = &ps,
	};
	uint32_t i;
	VkResult r;

	for (i = 0; i <= OP_MAX_BUF; i++)
		b[i] = (VkDescriptorSetLayoutBinding) {
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	r = vkCreateDescriptorSetLayout(vd->device, &dslci, NULL,
					&vd->set_layout);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateDescriptorSetLayout");
	r = vkCreatePipelineLayout(vd->device, &plci, NULL, &vd->pipe_layout);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreatePipelineLayout");
	if (vd->push_desc)
		return 0;
	r = vkCreateDescriptorPool(vd->device, &dpci, NULL, &vd->desc_pool);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateDescriptorPool");
	vd->desc_tab = calloc(2 * VK_DESC_CACHE, sizeof(*vd->desc_tab));
	if (!vd->desc_tab)
		return gpo__err(-ENOMEM, "out of memory");
	return 0;
}

void gpo__vk_destroy_layout(struct vk_dev *vd)
{
	if (vd->pipe_layout)
		vkDestroyPipelineLayout(vd->device, vd->pipe_layout, NULL);
	if (vd->set_layout)
		vkDestroyDescriptorSetLayout(vd->device, vd->set_layout, NULL);
	if (vd->desc_pool)
		vkDestroyDescriptorPool(vd->device, vd->desc_pool, NULL);
}

/*
 * gpo__vk_desc_bind - record the bindings @bi[0..nbuf) for the next
 * dispatch: pushed, or @set (from gpo__vk_desc_set()) bound
 */
void gpo__vk_desc_bind(struct vk_dev *vd, const VkDescriptorBufferInfo *bi,
		       uint32_t nbuf, VkDescriptorSet set)
{
	VkWriteDescriptorSet w[OP_MAX_BUF];
	uint32_t i;

	if (!vd->push_desc) {
		vkCmdBindDescriptorSets(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
					vd->pipe_layout, 0, 1, &set, 0, NULL);
		return;
	}
	for (i = 0; i < nbuf; i++)
		w[i] = (VkWriteDescriptorSet) {
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstBinding = i,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
	vd->push_desc(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vd->pipe_layout,
		      0, nbuf, w);
}
