/* SPDX-License-Identifier: MIT */
/*
 * vulkan_i.h - the Vulkan backend's private state (backend_vulkan.c)
 */
#ifndef GPUOPT_VULKAN_I_H
#define GPUOPT_VULKAN_I_H

#include <pthread.h>
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "backend/backend_i.h"

/* One instance per context, shared by its Vulkan devices. */
struct vk_inst {
	VkInstance instance;
	int refs;			/* devices holding it */
};

/* A pool block: one buffer over one allocation, mapped when possible. */
struct dev_mem {
	VkBuffer buffer;
	VkDeviceMemory memory;
	uint64_t size;
	unsigned char *map;		/* NULL unless host-visible */
};

/* A range a command of the open batch reads or writes. */
struct vk_access {
	VkBuffer buffer;
	uint64_t lo, hi;
	int write;
};

#define VK_MAX_ACCESS	64

/* The descriptor-set cache, without VK_KHR_push_descriptor. */
struct vk_desc_key {
	VkBuffer buffer[KARG_NBUF];
	VkDeviceSize off[KARG_NBUF];
	VkDeviceSize range[KARG_NBUF];
};

struct vk_desc_entry {
	struct vk_desc_key key;
	VkDescriptorSet set;		/* VK_NULL_HANDLE: slot free */
};

#define VK_DESC_CACHE	256	/* sets; the table has twice the slots */

struct vk_dev {
	/* from probe */
	struct vk_inst *inst;
	VkPhysicalDevice phys;
	VkPhysicalDeviceProperties props;
	VkPhysicalDeviceMemoryProperties memprops;
	uint32_t qfam;
	uint32_t ts_bits;		/* timestampValidBits, 0: none */
	uint64_t max_alloc;		/* maxMemoryAllocationSize or 0 */
	int has_push_desc;
	int has_budget;
	pthread_mutex_t lock;		/* the batch, against free() */

	/* from open, on: all zero while closed */
	int opened;
	VkDevice device;
	VkQueue queue;
	VkCommandPool cmd_pool;
	VkCommandBuffer cmd;
	VkFence fence;
	VkQueryPool query_pool;
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout pipe_layout;
	VkPipelineCache pipe_cache;
	VkPipeline pipes[K_COUNT];
	PFN_vkCmdPushDescriptorSetKHR push_desc;	/* NULL: set cache */
	VkDescriptorPool desc_pool;
	struct vk_desc_entry *desc_tab;	/* 2 * VK_DESC_CACHE slots */
	uint32_t desc_used;

	uint32_t pool_type;		/* memory type of pool blocks */
	int pool_mapped;		/* blocks are mapped (ReBAR, UMA) */
	int direct_read;		/* ... and host-cached: read them */
	uint32_t staging_type;
	struct dev_mem dummy;		/* bound for unused buffers */
	struct dev_mem staging;		/* uploads and readbacks */
	uint64_t staging_size;

	uint64_t max_range;		/* bytes one descriptor may span */
	uint32_t max_groups;		/* element kernels' dispatch cap */
	uint64_t spin_ns;		/* poll the fence this long first */
	uint64_t last_batch_ns;		/* device time of the last batch */
	int lost;

	/* the open batch */
	int recording;
	int ts_started;
	VkPipeline bound;
	uint64_t staging_pos;
	struct vk_access acc[VK_MAX_ACCESS];
	int nacc;
	uint64_t ns;			/* device time since last wait */
};

#endif /* GPUOPT_VULKAN_I_H */
