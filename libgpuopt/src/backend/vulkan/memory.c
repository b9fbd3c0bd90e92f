// SPDX-License-Identifier: MIT
/*
 * memory.c - the Vulkan backend's memory: the memory types of pool blocks
 * and staging, blocks, the dummy buffer bound for absent buffers, host
 * transfers, pinned host memory, the heap budget
 *
 * Transfers (transfer()): memory gpo_host_alloc() gave is one buffer
 * copy, by DMA. Other host memory goes through the staging buffer: up to
 * a quarter of it in the batch, more in VK_XFER_SLOTS slots with their
 * own command buffers and fences, so that the host's memcpy of one chunk
 * overlaps the device's copies of the others.
 */
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"

/* four slots of 16 MiB: a chunk's submission and fence cost little beside
 * its copy at PCIe speed */
#define STAGING_BYTES		(64ull << 20)

/* pinned writes up to this size (or a slot) are queued through staging */
#define PINNED_QUEUED		(1ull << 20)

#define POOL_USAGE (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | \
		    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | \
		    VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/* The largest DEVICE_LOCAL heap: the device's memory. */
int gpo__vk_main_heap(const VkPhysicalDeviceMemoryProperties *mp)
{
	uint32_t i;
	int best = -1;

	for (i = 0; i < mp->memoryHeapCount; i++) {
		const VkMemoryHeap *h = &mp->memoryHeaps[i];

		if (!(h->flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT))
			continue;
		if (best < 0 || h->size > mp->memoryHeaps[best].size)
			best = (int)i;
	}
	return best;
}


static int find_type(const struct vk_dev *vd, uint32_t bits,
		     VkMemoryPropertyFlags need, int heap)
{
	uint32_t i;

	for (i = 0; i < vd->memprops.memoryTypeCount; i++) {
		const VkMemoryType *t = &vd->memprops.memoryTypes[i];

		if (!(bits & (1u << i)) || (t->propertyFlags & need) != need)
			continue;
		if (heap >= 0 && t->heapIndex != (uint32_t)heap)
			continue;
		return (int)i;
	}
	return -1;
}

static void mem_destroy(struct vk_dev *vd, struct dev_mem *mem)
{
	if (mem->map)
		vkUnmapMemory(vd->device, mem->memory);
	if (mem->buffer)
		vkDestroyBuffer(vd->device, mem->buffer, NULL);
	if (mem->memory)
		vkFreeMemory(vd->device, mem->memory, NULL);
	memset(mem, 0, sizeof(*mem));
}

/* buffer_create - a buffer of @bytes, no memory yet, and what it needs */
static int buffer_create(struct gpo_device *dev, uint64_t bytes,
			 VkBufferUsageFlags usage, VkBuffer *buf,
			 VkMemoryRequirements *req)
{
	struct vk_dev *vd = dev->priv;
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.size = bytes,
		.usage = usage,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkResult r;

	r = vkCreateBuffer(vd->device, &bci, NULL, buf);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateBuffer");
	vkGetBufferMemoryRequirements(vd->device, *buf, req);
	return 0;
}

/*
 * mem_create - a buffer of @bytes over its own allocation of memory type
 * @type (-1: the pool's), mapped if @map
 */
static int mem_create(struct gpo_device *dev, uint64_t bytes,
		      VkBufferUsageFlags usage, int type, int map,
		      struct dev_mem *mem)
{
	struct vk_dev *vd = dev->priv;
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
	};

	VkMemoryRequirements req;
	void *p;
	VkResult r;
	int ret;

	memset(mem, 0, sizeof(*mem));
	ret = buffer_create(dev, bytes, usage, &mem->buffer, &req);
	if (ret)
		return ret;
	if (type < 0)
		type = (int)vd->pool_type;
	if (!(req.memoryTypeBits & (1u << type))) {
		ret = gpo__err(-EIO, "%s (%s): memory type %d cannot hold a buffer",
			      dev->info.id, dev->info.name, type);
		goto out_destroy;
	}
	mai.allocationSize = req.size;
	mai.memoryTypeIndex = (uint32_t)type;

	r = vkAllocateMemory(vd->device, &mai, NULL, &mem->memory);
	if (r == VK_SUCCESS)
		r = vkBindBufferMemory(vd->device, mem->buffer, mem->memory, 0);
	if (r == VK_SUCCESS && map) {
		r = vkMapMemory(vd->device, mem->memory, 0, VK_WHOLE_SIZE, 0,
				&p);
		if (r == VK_SUCCESS)
			mem->map = p;
	}
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkAllocateMemory");
		goto out_destroy;
	}
	mem->size = bytes;
	return 0;

out_destroy:
	mem_destroy(vd, mem);
	return ret;
}

/*
 * choose_memory - the memory types of pool blocks and of the staging
 * buffer. @bits: the types a pool buffer may use.
 */
static int choose_memory(struct gpo_device *dev, uint32_t bits, int nomap)
{
	struct vk_dev *vd = dev->priv;
	const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	const VkMemoryPropertyFlags dl = VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT;
	int heap = gpo__vk_main_heap(&vd->memprops), t;

	/* unmapped blocks: device-local memory the host need not see */
	t = heap < 0 ? -1 : find_type(vd, bits, dl, heap);
	if (t < 0)
		t = find_type(vd, bits, dl, -1);
	if (t < 0)
		t = find_type(vd, bits, 0, -1);
	if (t < 0)
		return gpo__err(-ENODEV, "%s (%s): no memory type for storage buffers",
			       dev->info.id, dev->info.name);
	vd->plain_type = (uint32_t)t;
	/* the whole device-local heap mappable: resizable BAR or UMA */
	t = heap < 0 ? -1 : find_type(vd, bits, dl | vis, heap);
	if (t >= 0 && !nomap) {
		vd->pool_type = (uint32_t)t;
		vd->pool_mapped = 1;
		vd->direct_read = !!(vd->memprops.memoryTypes[t].propertyFlags &
				     VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
	} else {
		vd->pool_type = vd->plain_type;
	}
	/* readbacks want host-cached memory; uploads do not mind */
	t = find_type(vd, ~0u, vis | VK_MEMORY_PROPERTY_HOST_CACHED_BIT, -1);
	if (t < 0)
		t = find_type(vd, ~0u, vis, -1);
	if (t < 0)
		return gpo__err(-ENODEV, "%s (%s): no host-visible coherent memory",
			       dev->info.id, dev->info.name);
	vd->staging_type = (uint32_t)t;
	return 0;
}

/*
 * gpo__vk_mem_mapped - a small mapped buffer of its own for graph.c (the
 * parameters of recorded steps and their readback): host-visible and
 * coherent, device-local too when @local and the device has such memory
 * (what a shader reads every step should not cross PCIe), else
 * host-cached when it has that (what the host reads back).
 */
int gpo__vk_mem_mapped(struct gpo_device *dev, uint64_t bytes, int local,
		       struct dev_mem *out)
{
	struct vk_dev *vd = dev->priv;
	const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	int t = -1;

	if (local)
		t = find_type(vd, ~0u,
			      vis | VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, -1);
	if (t < 0)
		t = (int)vd->staging_type;
	return mem_create(dev, bytes, POOL_USAGE, t, 1, out);
}

void gpo__vk_mem_unmapped(struct vk_dev *vd, struct dev_mem *mem)
{
	mem_destroy(vd, mem);
}

/* ---- transfers ----------------------------------------------------------- */

static int check_range(struct gpo_device *dev, const struct dev_buf *b,
		       uint64_t off, uint64_t bytes)
{
	if (!b->mem || off > b->size || bytes > b->size - off)
		return gpo__err(-EINVAL, "%s: %llu bytes at %llu outside a buffer of %llu",
			       dev->info.id, (unsigned long long)bytes,
			       (unsigned long long)off,
			       (unsigned long long)b->size);
	return 0;
}

/* ---- the staging slots: large transfers, several chunks in flight -------- */

/* slot_wait - wait for @s's copy, if one is queued; the fence is reset */
static int slot_wait(struct gpo_device *dev, struct vk_slot *s)
{
	struct vk_dev *vd = dev->priv;
	VkResult r;

	if (!s->busy)
		return 0;
	r = vkWaitForFences(vd->device, 1, &s->fence, VK_TRUE, UINT64_MAX);
	s->busy = 0;
	vkResetFences(vd->device, 1, &s->fence);
	return r == VK_SUCCESS ? 0 : gpo__vk_fail(dev, r, "vkWaitForFences");
}

/* Every slot idle again: the staging buffer is free. The first error. */
static int slots_drain(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int i, ret = 0, r;

	for (i = 0; i < VK_XFER_SLOTS; i++) {
		r = slot_wait(dev, &vd->slot[i]);
		if (!ret)
			ret = r;
	}
	return ret;
}

/*
 * slot_copy - submit one buffer copy on slot @s. The barrier before it
 * makes the writes of earlier submissions (kernels) visible to the copy;
 * the one after makes the copy visible to the host and to later commands.
 */
static int slot_copy(struct gpo_device *dev, struct vk_slot *s, VkBuffer src,
		     uint64_t soff, VkBuffer dst, uint64_t doff, uint64_t bytes)
{
	struct vk_dev *vd = dev->priv;
	const VkAccessFlags any = VK_ACCESS_SHADER_READ_BIT |
				  VK_ACCESS_SHADER_WRITE_BIT |
				  VK_ACCESS_TRANSFER_READ_BIT |
				  VK_ACCESS_TRANSFER_WRITE_BIT;
	const VkPipelineStageFlags work = VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
					  VK_PIPELINE_STAGE_TRANSFER_BIT;
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkMemoryBarrier before = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
	}, after = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = any | VK_ACCESS_HOST_READ_BIT,
	};
	VkBufferCopy region = {
		.srcOffset = soff,
		.dstOffset = doff,
		.size = bytes,
	};
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &s->cmd,
	};
	VkResult r;

	r = vkBeginCommandBuffer(s->cmd, &bi);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkBeginCommandBuffer");
	/* an adopted device's barriers, memory shared by fd acquired */
	gpo__vk_interop_begin(vd, s->cmd);
	vkCmdPipelineBarrier(s->cmd, work, VK_PIPELINE_STAGE_TRANSFER_BIT, 0,
			     1, &before, 0, NULL, 0, NULL);
	vkCmdCopyBuffer(s->cmd, src, dst, 1, &region);
	vkCmdPipelineBarrier(s->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT,
			     work | VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &after,
			     0, NULL, 0, NULL);
	gpo__vk_interop_end(vd, s->cmd);
	r = vkEndCommandBuffer(s->cmd);
	if (r == VK_SUCCESS)
		r = vkQueueSubmit(vd->queue, 1, &si, s->fence);
	if (r != VK_SUCCESS) {
		vkResetCommandBuffer(s->cmd, 0);
		return gpo__vk_fail(dev, r, "vkQueueSubmit");
	}
	s->busy = 1;
	return 0;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * transfer_slots - a transfer larger than a slot: chunk k goes through
 * slot k % VK_XFER_SLOTS, so that the host copies one chunk into or out
 * of staging while the device copies the others. The batch goes first
 * (its kernels may write what is read, or read what is replaced); every
 * slot is idle again on return.
 */
static int transfer_slots(struct gpo_device *dev, const struct dev_buf *b,
			  uint64_t off, unsigned char *host, uint64_t bytes,
			  int write)
{
	struct vk_dev *vd = dev->priv;
	const uint64_t size = vd->slot_size, n = (bytes + size - 1) / size;
	VkBuffer pool = b->mem->buffer, stg = vd->staging.buffer;
	uint64_t k, next = 0, dpos = b->off + off;
	int ret, r;

	ret = gpo__vk_batch_flush(dev);
	for (k = 0; k < n && !ret; k++) {
		struct vk_slot *s = &vd->slot[k % VK_XFER_SLOTS];
		unsigned char *map = vd->staging.map +
				     (k % VK_XFER_SLOTS) * size;
		uint64_t pos = k * size, len = min_u64(size, bytes - pos);

		if (write) {
			ret = slot_wait(dev, s);
			if (ret)
				break;
			gpo__host_copy(map, host + pos, len);
			ret = slot_copy(dev, s, stg, (k % VK_XFER_SLOTS) * size,
					pool, dpos + pos, len);
			continue;
		}
		/* reads: every slot busy ahead of the host's copy */
		for (; !ret && next < n && next < k + VK_XFER_SLOTS; next++)
			ret = slot_copy(dev, &vd->slot[next % VK_XFER_SLOTS],
					pool, dpos + next * size, stg,
					(next % VK_XFER_SLOTS) * size,
					min_u64(size, bytes - next * size));
		if (!ret)
			ret = slot_wait(dev, s);
		if (!ret)
			gpo__host_copy(host + pos, map, len);
	}
	r = slots_drain(dev);
	return ret ? ret : r;
}

/*
 * transfer_pinned - one copy between pinned memory (gpo_host_alloc) and
 * the pool, in the batch after its kernels; waited for, so that a write's
 * source may be reused on return
 */
static int transfer_pinned(struct gpo_device *dev, const struct dev_buf *b,
			   uint64_t off, const struct host_mem *hm,
			   unsigned char *host, uint64_t bytes, int write)
{
	const struct dev_mem *pm = hm->priv;
	uint64_t hoff = (uint64_t)(host - hm->ptr);
	int ret;

	if (write)
		ret = gpo__vk_record_copy(dev, pm->buffer, hoff, b->mem->buffer,
					  b->off + off, bytes);
	else
		ret = gpo__vk_record_copy(dev, b->mem->buffer, b->off + off,
					  pm->buffer, hoff, bytes);
	return ret ? ret : gpo__vk_batch_flush(dev);
}

/*
 * transfer - copy @bytes between @host and @b at @off: into @b if @write,
 * else out of it. Mapped memory is copied directly once the kernels
 * launched so far are done (they may read what a write replaces); a read
 * only where that memory is host-cached; not from or to pinned memory on
 * a discrete GPU, where a DMA copy outruns the CPU's over the bus. Pinned
 * memory is otherwise one DMA copy, but for small writes. Otherwise
 * through staging: more than a slot goes through the slots, several
 * chunks in flight; less goes in the batch, a write's copy queued, a
 * read's in the same submission as the kernels before it, so a small read
 * (scal) costs one fence wait.
 */
static int staging_create(struct gpo_device *dev);

static int transfer(struct gpo_device *dev, const struct dev_buf *b,
		    uint64_t off, unsigned char *host, uint64_t bytes,
		    int write)
{
	struct vk_dev *vd = dev->priv;
	uint64_t chunk, pos;
	struct host_mem hm;
	unsigned char *map;
	int ret, pinned;

	ret = check_range(dev, b, off, bytes);
	if (ret || !bytes)
		return ret;
	pthread_mutex_lock(&vd->lock);
	if (vd->lost) {
		ret = gpo__vk_lost(dev);
		goto out_unlock;
	}
	/* under vd->lock: host_free() waits for it before freeing */
	pinned = gpo__host_find(dev, host, bytes, &hm);
	/*
	 * A small write stays queued in the batch, as from any memory: its
	 * memcpy costs less than the submission and wait a DMA copy needs
	 * before the source may be reused (a step's gradients)
	 */
	if (pinned && write && bytes <= min_u64(PINNED_QUEUED, vd->slot_size))
		pinned = 0;
	if (b->mem->map && (write || vd->direct_read) &&
	    !(pinned && vd->props.deviceType ==
			VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU)) {
		ret = gpo__vk_batch_flush(dev);
		map = b->mem->map + b->off + off;
		if (!ret)
			gpo__host_copy(write ? map : host, write ? host : map,
				       bytes);
		goto out_unlock;
	}
	if (pinned) {
		ret = transfer_pinned(dev, b, off, &hm, host, bytes, write);
		goto out_unlock;
	}
	/* an unmapped block where the others are mapped: staging now */
	ret = staging_create(dev);
	if (ret)
		goto out_unlock;
	if (vd->slot_size && bytes > vd->slot_size) {
		ret = transfer_slots(dev, b, off, host, bytes, write);
		goto out_unlock;
	}
	while (bytes) {
		chunk = bytes < vd->staging_size ? bytes : vd->staging_size;
		if (vd->staging_pos + chunk > vd->staging_size) {
			ret = gpo__vk_batch_flush(dev);
			if (ret)
				break;
		}
		pos = vd->staging_pos;
		if (write) {
			memcpy(vd->staging.map + pos, host, chunk);
			ret = gpo__vk_record_copy(dev, vd->staging.buffer, pos,
					  b->mem->buffer, b->off + off, chunk);
			if (!ret)
				vd->staging_pos += (chunk + 15) & ~15ull;
		} else {
			ret = gpo__vk_record_copy(dev, b->mem->buffer, b->off + off,
					  vd->staging.buffer, pos, chunk);
			if (!ret)
				ret = gpo__vk_batch_flush(dev);
			if (!ret)
				memcpy(host, vd->staging.map + pos, chunk);
		}
		if (ret)
			break;
		host += chunk;
		off += chunk;
		bytes -= chunk;
	}
out_unlock:
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

int gpo__vk_write(struct gpo_device *dev, const struct dev_buf *dst,
		  uint64_t off, const void *src, uint64_t bytes)
{
	/* transfer() only reads @src when it writes */
	return transfer(dev, dst, off, (unsigned char *)src, bytes, 1);
}

int gpo__vk_read(struct gpo_device *dev, const struct dev_buf *src,
		 uint64_t off, void *dst, uint64_t bytes)
{
	return transfer(dev, src, off, dst, bytes, 0);
}

int gpo__vk_alloc(struct gpo_device *dev, uint64_t bytes,
		  struct dev_mem **out)
{
	struct vk_dev *vd = dev->priv;
	struct dev_mem *mem;
	int ret;

	if (vd->lost)
		return gpo__vk_lost(dev);
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	ret = -ENOMEM;
	if (vd->pool_mapped && vd->mapped_bytes + bytes <= vd->maplimit)
		ret = mem_create(dev, bytes, POOL_USAGE, -1, 1, mem);
	if (!ret) {
		vd->mapped_bytes += bytes;
	} else if (!vd->pool_mapped || ret == -ENOMEM) {
		/*
		 * Mapped device memory (ReBAR) runs out before the device
		 * does where several processes map theirs: NVIDIA refuses it
		 * with device memory to spare. A block the host cannot map
		 * works as well; its transfers go through staging.
		 */
		ret = mem_create(dev, bytes, POOL_USAGE, (int)vd->plain_type,
				 0, mem);
	}
	if (ret) {
		free(mem);
		return ret;
	}
	gpo__err_clear();
	*out = mem;
	return 0;
}

/*
 * gpo__vk_forget - before a buffer goes (ours, or the caller's let go):
 * nothing queued may still use it, and as a buffer made next may get its
 * handle, no cached descriptor set or recorded step (graph.c) may name
 * it. Under vd->lock.
 */
void gpo__vk_forget(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;

	gpo__vk_batch_flush(dev);
	gpo__vk_desc_cache_clear(vd);
	vd->free_gen++;
}

void gpo__vk_free(struct gpo_device *dev, struct dev_mem *mem)
{
	struct vk_dev *vd = dev->priv;

	if (!mem)
		return;
	pthread_mutex_lock(&vd->lock);
	gpo__vk_forget(dev);
	if (mem->map && vd->mapped_bytes >= mem->size)
		vd->mapped_bytes -= mem->size;
	mem_destroy(vd, mem);
	pthread_mutex_unlock(&vd->lock);
	free(mem);
}

/*
 * Pinned memory: host-visible, host-cached where the device has it (the
 * staging buffer's type), mapped for its life, wrapped in a buffer that
 * copies go from and to.
 */
int gpo__vk_host_alloc(struct gpo_device *dev, struct host_mem *hm)
{
	struct vk_dev *vd = dev->priv;
	struct dev_mem *mem;
	int ret;

	if (vd->lost)
		return gpo__vk_lost(dev);
	if (vd->max_alloc && hm->size > vd->max_alloc)
		return gpo__err(-ENOMEM, "%s (%s): %llu bytes of pinned memory: more than one allocation may hold (%llu)",
			       dev->info.id, dev->info.name,
			       (unsigned long long)hm->size,
			       (unsigned long long)vd->max_alloc);
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	ret = mem_create(dev, hm->size, VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
			 (int)vd->staging_type, 1, mem);
	if (ret) {
		free(mem);
		return ret;
	}
	hm->ptr = mem->map;
	hm->priv = mem;
	return 0;
}

void gpo__vk_host_free(struct gpo_device *dev, struct host_mem *hm)
{
	struct vk_dev *vd = dev->priv;
	struct dev_mem *mem = hm->priv;

	pthread_mutex_lock(&vd->lock);
	/* a copy from or to it may still be queued in the batch */
	gpo__vk_batch_flush(dev);
	mem_destroy(vd, mem);
	pthread_mutex_unlock(&vd->lock);
	free(mem);
}

uint64_t gpo__vk_mem_free(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkPhysicalDeviceMemoryBudgetPropertiesEXT budget = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT,
	};
	VkPhysicalDeviceMemoryProperties2 mp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2,
		.pNext = &budget,
	};
	int heap;

	if (!vd || !vd->has_budget)
		return 0;
	vkGetPhysicalDeviceMemoryProperties2(vd->phys, &mp);
	heap = gpo__vk_main_heap(&mp.memoryProperties);
	if (heap < 0 || budget.heapBudget[heap] < budget.heapUsage[heap])
		return 0;
	return budget.heapBudget[heap] - budget.heapUsage[heap];
}

/* The slots' command buffers (from the batch's pool) and fences. */
static int create_slots(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkCommandBufferAllocateInfo cbai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = vd->cmd_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkFenceCreateInfo fci = {
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	};
	VkResult r = VK_SUCCESS;
	int i;

	for (i = 0; i < VK_XFER_SLOTS && r == VK_SUCCESS; i++) {
		r = vkAllocateCommandBuffers(vd->device, &cbai,
					     &vd->slot[i].cmd);
		if (r == VK_SUCCESS)
			r = vkCreateFence(vd->device, &fci, NULL,
					  &vd->slot[i].fence);
	}
	return r == VK_SUCCESS ? 0 : gpo__vk_fail(dev, r, "transfer slots");
}

/* the staging buffer and its slots, once (under vd->lock, or at open) */
static int staging_create(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	if (vd->staging.buffer)
		return 0;
	ret = mem_create(dev, vd->staging_want,
			 VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
			 (int)vd->staging_type, 1, &vd->staging);
	if (!ret) {
		vd->staging_size = vd->staging_want;
		vd->slot_size = vd->staging_size / VK_XFER_SLOTS;
		ret = create_slots(dev);
	}
	return ret;
}

/* The dummy buffer (zeroed) and, where transfers need it, staging. */
int gpo__vk_create_buffers(struct gpo_device *dev,
			   const struct vk_debug *dbg)
{
	struct vk_dev *vd = dev->priv;
	VkMemoryRequirements req;
	VkBuffer probe;
	int ret;

	/*
	 * Buffers of one usage accept the same memory types whatever their
	 * size (the spec says so): one small buffer tells for the pool.
	 */
	ret = buffer_create(dev, VK_DUMMY_BYTES, POOL_USAGE, &probe, &req);
	if (ret)
		return ret;
	vkDestroyBuffer(vd->device, probe, NULL);
	ret = choose_memory(dev, req.memoryTypeBits, dbg->nomap);
	if (ret)
		return ret;
	ret = mem_create(dev, VK_DUMMY_BYTES, POOL_USAGE, -1, 0, &vd->dummy);
	if (ret)
		return ret;

	vd->maplimit = dbg->maplimit;
	vd->staging_want = dbg->staging >= 4096 ? dbg->staging & ~63ull :
						  STAGING_BYTES;
	/*
	 * the caller's buffers (interop.c) are never mapped: staging; else
	 * it is made when an unmapped pool block first needs it
	 */
	if (vd->pool_mapped && vd->direct_read && !vd->adopted)
		return 0;
	return staging_create(dev);
}

void gpo__vk_destroy_buffers(struct vk_dev *vd)
{
	int i;

	for (i = 0; i < VK_XFER_SLOTS; i++) {
		if (vd->slot[i].fence)
			vkDestroyFence(vd->device, vd->slot[i].fence, NULL);
		if (vd->slot[i].cmd)
			vkFreeCommandBuffers(vd->device, vd->cmd_pool, 1,
					     &vd->slot[i].cmd);
	}
	memset(vd->slot, 0, sizeof(vd->slot));
	mem_destroy(vd, &vd->staging);
	mem_destroy(vd, &vd->dummy);
}
