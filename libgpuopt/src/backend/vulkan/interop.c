// SPDX-License-Identifier: MIT
/*
 * interop.c - the caller's own Vulkan objects: the barriers that order an
 * adopted device's batches among the caller's work on the same queue and
 * hand memory shared by fd to and from the other device, and the
 * caller's buffers bound to an optimizer (gpo_optim_bind): a VkBuffer
 * of an adopted device, used as it is, or memory another VkDevice of the
 * same physical device exported as an opaque fd, imported into a
 * VkDeviceMemory of ours with a VkBuffer over it.
 *
 * Either way the dev_mem is one the launches, reads and writes take like a
 * pool block. Its memory handle says whose it is: VK_NULL_HANDLE for the
 * caller's VkBuffer (release destroys nothing of it), ours for an import.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"

#define IMPORT_USAGE (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | \
		      VK_BUFFER_USAGE_TRANSFER_SRC_BIT | \
		      VK_BUFFER_USAGE_TRANSFER_DST_BIT)

/*
 * Every write of the queue so far made visible to every command after. A
 * pipeline barrier's first scope holds all the commands submitted to the
 * queue before it and its second all those after, other submissions
 * included: at a batch's start it orders the batch after the caller's
 * earlier submissions (gradients its kernels wrote), at the end the
 * caller's later ones after the batch (parameters the step wrote), with
 * no semaphore.
 */
static void full_barrier(VkCommandBuffer cmd)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
		.dstAccessMask = VK_ACCESS_MEMORY_READ_BIT |
				 VK_ACCESS_MEMORY_WRITE_BIT,
	};

	vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
			     VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0,
			     NULL, 0, NULL);
}

/*
 * Memory shared with another VkDevice belongs to VK_QUEUE_FAMILY_EXTERNAL
 * between our batches: each batch acquires it first and releases it last
 * (a queue family ownership transfer, which Vulkan asks of an exclusive
 * buffer used by two devices; the other side releases and acquires too)
 */
static void transfer_fd_bufs(struct vk_dev *vd, VkCommandBuffer cmd,
			     int acquire)
{
	enum { CHUNK = 16 };
	const VkPipelineStageFlags all = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
	VkBufferMemoryBarrier bb[CHUNK];
	uint32_t i, k;

	for (i = 0; i < vd->n_fd_bufs; i += k) {
		for (k = 0; k < CHUNK && i + k < vd->n_fd_bufs; k++) {
			bb[k] = (VkBufferMemoryBarrier) {
				.sType = VK_STRUCTURE_TYPE_BUFFER_MEMORY_BARRIER,
				.srcAccessMask = acquire ? 0 :
						 VK_ACCESS_MEMORY_WRITE_BIT,
				.dstAccessMask = acquire ?
					VK_ACCESS_MEMORY_READ_BIT |
					VK_ACCESS_MEMORY_WRITE_BIT : 0,
				.srcQueueFamilyIndex = acquire ?
					VK_QUEUE_FAMILY_EXTERNAL : vd->qfam,
				.dstQueueFamilyIndex = acquire ? vd->qfam :
					VK_QUEUE_FAMILY_EXTERNAL,
				.buffer = vd->fd_bufs[i + k],
				.size = VK_WHOLE_SIZE,
			};
		}
		vkCmdPipelineBarrier(cmd, acquire ?
				     VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT : all,
				     acquire ? all :
				     VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0,
				     NULL, k, bb, 0, NULL);
	}
}

/*
 * gpo__vk_interop_begin - the first commands of every command buffer we
 * submit (@cmd), gpo__vk_interop_end the last: on an adopted device a
 * full barrier each, where memory is shared by fd its acquisition and
 * release; nothing otherwise
 */
void gpo__vk_interop_begin(struct vk_dev *vd, VkCommandBuffer cmd)
{
	if (vd->adopted)
		full_barrier(cmd);
	transfer_fd_bufs(vd, cmd, 1);
}

void gpo__vk_interop_end(struct vk_dev *vd, VkCommandBuffer cmd)
{
	if (vd->adopted)
		full_barrier(cmd);
	transfer_fd_bufs(vd, cmd, 0);
}

/* note @buf among those a batch acquires and releases; vd->lock held */
static int fd_buf_add(struct vk_dev *vd, VkBuffer buf)
{
	VkBuffer *b;

	b = realloc(vd->fd_bufs, (vd->n_fd_bufs + 1) * sizeof(*b));
	if (!b)
		return gpo__err(-ENOMEM, "out of memory");
	vd->fd_bufs = b;
	vd->fd_bufs[vd->n_fd_bufs++] = buf;
	return 0;
}

static void fd_buf_remove(struct vk_dev *vd, VkBuffer buf)
{
	uint32_t i;

	for (i = 0; i < vd->n_fd_bufs; i++)
		if (vd->fd_bufs[i] == buf) {
			vd->fd_bufs[i] = vd->fd_bufs[--vd->n_fd_bufs];
			return;
		}
}

/* the caller's VkBuffer, of the adopted device, as it is */
static int import_buffer(struct gpo_device *dev, const struct gpo_extbuf *eb,
			 struct dev_mem **out)
{
	struct vk_dev *vd = dev->priv;
	uint64_t align = vd->props.limits.minStorageBufferOffsetAlignment;
	VkMemoryRequirements req;
	struct dev_mem *mem;

	if (!vd->adopted)
		return gpo__err(-EINVAL, "%s: a VkBuffer needs the device adopted from its VkDevice (gpo_device_adopt_vulkan)",
			       dev->info.id);
	if (!eb->handle)
		return gpo__err(-EINVAL, "%s: a NULL VkBuffer", dev->info.id);
	if (align && eb->offset % align)
		return gpo__err(-EINVAL, "%s: offset %llu is not a multiple of minStorageBufferOffsetAlignment (%llu)",
			       dev->info.id, (unsigned long long)eb->offset,
			       (unsigned long long)align);
	/*
	 * Vulkan cannot tell a buffer's size; its memory requirements are
	 * at least that and say when the caller's claim is impossible
	 */
	vkGetBufferMemoryRequirements(vd->device, (VkBuffer)eb->handle, &req);
	if (eb->size > req.size)
		return gpo__err(-EINVAL, "%s: the VkBuffer holds at most %llu bytes, not %llu",
			       dev->info.id, (unsigned long long)req.size,
			       (unsigned long long)eb->size);
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	mem->buffer = (VkBuffer)eb->handle;
	mem->size = eb->size;
	mem->imported = 1;
	*out = mem;
	return 0;
}

/*
 * Memory another VkDevice exported as an opaque fd: allocationSize and
 * memoryTypeIndex must be the exporter's (the spec's rule for opaque fds).
 * A duplicate of the fd is imported, so that every failure leaves the
 * caller's fd as it was; the caller's is closed once the import holds.
 */
static int import_fd(struct gpo_device *dev, const struct gpo_extbuf *eb,
		     struct dev_mem **out)
{
	struct vk_dev *vd = dev->priv;
	const VkMemoryPropertyFlags vis = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	VkExternalMemoryBufferCreateInfo ebci = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = &ebci,
		.size = eb->size,
		.usage = IMPORT_USAGE,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkImportMemoryFdInfoKHR ifd = {
		.sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_FD_INFO_KHR,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = &ifd,
		.allocationSize = eb->size,
		.memoryTypeIndex = eb->vk_memory_type,
	};
	VkMemoryPropertyFlags flags;
	VkMemoryRequirements req;
	struct dev_mem *mem;
	void *map;
	VkResult r;
	int ret;

	if (!vd->ext_fd)
		return gpo__err(-ENOSYS, vd->adopted ?
			       "%s: an adopted device takes VkBuffers, not fds" :
			       "%s: no VK_KHR_external_memory_fd to import an fd",
			       dev->info.id);
	if (eb->fd < 0)
		return gpo__err(-EINVAL, "%s: fd %d", dev->info.id, eb->fd);
	if (!eb->size)
		return gpo__err(-EINVAL, "%s: memory of 0 bytes", dev->info.id);
	if (eb->vk_memory_type >= vd->memprops.memoryTypeCount)
		return gpo__err(-EINVAL, "%s: memory type %u of %u",
			       dev->info.id, eb->vk_memory_type,
			       vd->memprops.memoryTypeCount);
	flags = vd->memprops.memoryTypes[eb->vk_memory_type].propertyFlags;

	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	r = vkCreateBuffer(vd->device, &bci, NULL, &mem->buffer);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkCreateBuffer");
		goto out_free;
	}
	vkGetBufferMemoryRequirements(vd->device, mem->buffer, &req);
	if (req.size > eb->size) {
		ret = gpo__err(-EINVAL, "%s: a buffer of %llu bytes needs %llu bytes of memory",
			      dev->info.id, (unsigned long long)eb->size,
			      (unsigned long long)req.size);
		goto out_destroy;
	}
	if (!(req.memoryTypeBits & (1u << eb->vk_memory_type))) {
		ret = gpo__err(-EINVAL, "%s: memory type %u cannot hold a storage buffer",
			      dev->info.id, eb->vk_memory_type);
		goto out_destroy;
	}
	/*
	 * No staging on a device whose pool is host-cached (memory.c):
	 * transfers to this memory then map it, or cannot be done
	 */
	if (!vd->staging.buffer && (flags & vis) != vis) {
		ret = gpo__err(-EINVAL, "%s: memory type %u is not host-visible, which this device's transfers need",
			      dev->info.id, eb->vk_memory_type);
		goto out_destroy;
	}

	ifd.fd = dup(eb->fd);
	if (ifd.fd < 0) {
		ret = gpo__err(-errno, "%s: dup(%d): %s", dev->info.id, eb->fd,
			      strerror(errno));
		goto out_destroy;
	}
	r = vkAllocateMemory(vd->device, &mai, NULL, &mem->memory);
	if (r != VK_SUCCESS) {
		/* a failed import leaves the fd ours */
		close(ifd.fd);
		ret = r == VK_ERROR_INVALID_EXTERNAL_HANDLE ?
		      gpo__err(-EINVAL, "%s: fd %d: not memory this device can import (%s)",
			       dev->info.id, eb->fd, gpo__vk_result_name(r)) :
		      gpo__vk_fail(dev, r, "vkAllocateMemory (import)");
		goto out_destroy;
	}
	r = vkBindBufferMemory(vd->device, mem->buffer, mem->memory, 0);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkBindBufferMemory");
		goto out_destroy;
	}
	/* as the pool's blocks are: mapped where theirs are, or no staging */
	if ((flags & vis) == vis && (vd->pool_mapped || !vd->staging.buffer)) {
		r = vkMapMemory(vd->device, mem->memory, 0, VK_WHOLE_SIZE, 0,
				&map);
		if (r != VK_SUCCESS) {
			ret = gpo__vk_fail(dev, r, "vkMapMemory");
			goto out_destroy;
		}
		mem->map = map;
	}
	/* an open batch acquired the others only: it goes first */
	pthread_mutex_lock(&vd->lock);
	ret = gpo__vk_batch_flush(dev);
	if (!ret)
		ret = fd_buf_add(vd, mem->buffer);
	pthread_mutex_unlock(&vd->lock);
	if (ret)
		goto out_unmap;
	mem->size = eb->size;
	mem->imported = 1;
	close(eb->fd);
	*out = mem;
	return 0;

out_unmap:
	if (mem->map)
		vkUnmapMemory(vd->device, mem->memory);
out_destroy:
	if (mem->buffer)
		vkDestroyBuffer(vd->device, mem->buffer, NULL);
	if (mem->memory)
		vkFreeMemory(vd->device, mem->memory, NULL);
out_free:
	free(mem);
	return ret;
}

int gpo__vk_import(struct gpo_device *dev, const struct gpo_extbuf *eb,
		   struct dev_mem **out)
{
	struct vk_dev *vd = dev->priv;

	if (vd->lost)
		return gpo__vk_lost(dev);
	switch (eb->kind) {
	case GPO_EXTBUF_VK_BUFFER:
		return import_buffer(dev, eb, out);
	case GPO_EXTBUF_VK_FD:
		return import_fd(dev, eb, out);
	default:
		return gpo__err(-EINVAL, "%s: a Vulkan device takes a VkBuffer or an fd, not buffer kind %d",
			       dev->info.id, (int)eb->kind);
	}
}

/*
 * gpo__vk_interop_write - write() as memory.c does it, then, where the
 * caller may look next (its own memory, or any buffer of an adopted
 * device, whose queue the caller uses after the call), submit the copies
 * the write queued: a write must be done before the caller's next
 * command, not at gpuopt's next wait.
 */
int gpo__vk_interop_write(struct gpo_device *dev, const struct dev_buf *dst,
			  uint64_t off, const void *src, uint64_t bytes)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	ret = gpo__vk_write(dev, dst, off, src, bytes);
	if (ret || !(vd->adopted || (dst->mem && dst->mem->imported)))
		return ret;
	pthread_mutex_lock(&vd->lock);
	ret = gpo__vk_batch_flush(dev);
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

void gpo__vk_release(struct gpo_device *dev, struct dev_mem *mem)
{
	struct vk_dev *vd = dev->priv;

	if (!mem)
		return;
	pthread_mutex_lock(&vd->lock);
	gpo__vk_forget(dev);
	if (mem->memory) {
		fd_buf_remove(vd, mem->buffer);
		if (mem->map)
			vkUnmapMemory(vd->device, mem->memory);
		vkDestroyBuffer(vd->device, mem->buffer, NULL);
		vkFreeMemory(vd->device, mem->memory, NULL);
	}
	pthread_mutex_unlock(&vd->lock);
	free(mem);
}
