// SPDX-License-Identifier: MIT
/*
 * submit.c - the Vulkan backend's batch: commands are recorded into one
 * command buffer, with a barrier between two that touch overlapping
 * ranges (one of them writing), and submitted together at wait() or at a
 * read, timed by a pair of timestamps
 */
#include <string.h>
#include <time.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"


int gpo__vk_batch_begin(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkResult r;

	if (vd->recording)
		return 0;
	r = vkBeginCommandBuffer(vd->cmd, &bi);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkBeginCommandBuffer");
	gpo__vk_interop_begin(vd, vd->cmd);
	vd->recording = 1;
	vd->ts_started = 0;
	vd->bound = VK_NULL_HANDLE;
	vd->nacc = 0;
	return 0;
}

static void barrier(struct vk_dev *vd, VkPipelineStageFlags dst_stage,
		    VkAccessFlags dst_access)
{
	VkMemoryBarrier mb = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
		.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
				 VK_ACCESS_TRANSFER_WRITE_BIT,
		.dstAccessMask = dst_access,
	};

	vkCmdPipelineBarrier(vd->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
			     VK_PIPELINE_STAGE_TRANSFER_BIT, dst_stage, 0, 1,
			     &mb, 0, NULL, 0, NULL);
}

/*
 * gpo__vk_track - note what the next command reads and writes; a
 * barrier goes in first if it overlaps a range an earlier command of the
 * batch wrote (or writes one that was read). Disjoint updates (parameter
 * groups) run without one.
 */
void gpo__vk_track(struct vk_dev *vd, const struct vk_access *acc, int n)
{
	int i, j, conflict = vd->nacc + n > VK_MAX_ACCESS;

	for (i = 0; i < n && !conflict; i++)
		for (j = 0; j < vd->nacc; j++) {
			const struct vk_access *o = &vd->acc[j];

			if (o->buffer == acc[i].buffer && o->lo < acc[i].hi &&
			    acc[i].lo < o->hi && (o->write || acc[i].write)) {
				conflict = 1;
				break;
			}
		}
	if (conflict) {
		barrier(vd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
			VK_PIPELINE_STAGE_TRANSFER_BIT,
			VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
			VK_ACCESS_TRANSFER_READ_BIT |
			VK_ACCESS_TRANSFER_WRITE_BIT);
		vd->nacc = 0;
	}
	memcpy(&vd->acc[vd->nacc], acc, n * sizeof(*acc));
	vd->nacc += n;
}


/*
 * fence_wait - wait for the batch. A blocking wait wakes 30-60 us late on
 * NVIDIA, so on GPUs: sleep through most of a batch as long as the last
 * one (steps repeat), then poll the fence for vd->spin_ns, then block.
 */
static VkResult fence_wait(struct vk_dev *vd)
{
	uint64_t start = gpo__now_ns(), end;
	VkResult r;

	if (vd->spin_ns) {
		if (vd->last_batch_ns > 2 * vd->spin_ns) {
			r = vkWaitForFences(vd->device, 1, &vd->fence, VK_TRUE,
					    vd->last_batch_ns - vd->spin_ns);
			if (r != VK_TIMEOUT)
				return r;
		}
		/* the timed wait may return early: poll to the expected end */
		end = start + vd->last_batch_ns + vd->spin_ns;
		do {
			r = vkGetFenceStatus(vd->device, vd->fence);
			if (r != VK_NOT_READY)
				return r;
		} while (gpo__now_ns() < end);
	}
	return vkWaitForFences(vd->device, 1, &vd->fence, VK_TRUE,
			       UINT64_MAX);
}

/*
 * gpo__vk_batch_flush - submit the batch and wait for it; the device
 * time between its timestamps is added to vd->ns. The command buffer is reset whatever
 * happens, so the next launch starts a fresh batch.
 */
int gpo__vk_batch_flush(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.commandBufferCount = 1,
		.pCommandBuffers = &vd->cmd,
	};
	uint64_t ts[2];
	VkResult r;
	int ret = 0, submitted = 0;

	if (!vd->recording)
		return 0;
	if (vd->ts_started)
		vkCmdWriteTimestamp(vd->cmd,
				    VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
				    vd->query_pool, 1);
	/* device writes must be made visible to the host that reads them */
	barrier(vd, VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
	gpo__vk_interop_end(vd, vd->cmd);
	r = vkEndCommandBuffer(vd->cmd);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkEndCommandBuffer");
		goto out_reset;
	}
	r = vkQueueSubmit(vd->queue, 1, &si, vd->fence);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkQueueSubmit");
		goto out_reset;
	}
	submitted = 1;
	r = fence_wait(vd);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkWaitForFences");
		goto out_reset;
	}
	if (vd->ts_started &&
	    vkGetQueryPoolResults(vd->device, vd->query_pool, 0, 2,
				  sizeof(ts), ts, sizeof(ts[0]),
				  VK_QUERY_RESULT_64_BIT) == VK_SUCCESS) {
		uint64_t mask = vd->ts_bits >= 64 ? UINT64_MAX :
				(1ull << vd->ts_bits) - 1;

		vd->last_batch_ns = (uint64_t)((double)((ts[1] - ts[0]) &
						       mask) *
					    vd->props.limits.timestampPeriod);
		vd->ns += vd->last_batch_ns;
	}
out_reset:
	if (submitted)
		vkResetFences(vd->device, 1, &vd->fence);
	vkResetCommandBuffer(vd->cmd, 0);
	vd->recording = 0;
	vd->ts_started = 0;
	vd->staging_pos = 0;
	vd->nacc = 0;
	return ret;
}

/* gpo__vk_record_copy - queue a buffer copy into the batch */
int gpo__vk_record_copy(struct gpo_device *dev, VkBuffer src, uint64_t soff,
			VkBuffer dst, uint64_t doff, uint64_t bytes)
{
	struct vk_dev *vd = dev->priv;
	VkBufferCopy region = {
		.srcOffset = soff,
		.dstOffset = doff,
		.size = bytes,
	};
	struct vk_access acc[2] = {
		{ src, soff, soff + bytes, 0 },
		{ dst, doff, doff + bytes, 1 },
	};
	int ret;

	ret = gpo__vk_batch_begin(dev);
	if (ret)
		return ret;
	gpo__vk_track(vd, acc, 2);
	vkCmdCopyBuffer(vd->cmd, src, dst, 1, &region);
	return 0;
}

/*
 * The first command of a batch starts its clock; batch_flush() reads it.
 */
void gpo__vk_timestamp_start(struct vk_dev *vd)
{
	if (!vd->query_pool || vd->ts_started)
		return;
	vkCmdResetQueryPool(vd->cmd, vd->query_pool, 0, 2);
	vkCmdWriteTimestamp(vd->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
			    vd->query_pool, 0);
	vd->ts_started = 1;
}

int gpo__vk_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	pthread_mutex_lock(&vd->lock);
	ret = vd->lost ? gpo__vk_lost(dev) : gpo__vk_batch_flush(dev);
	if (device_ns)
		*device_ns = ret ? 0 : vd->ns;
	vd->ns = 0;
	/* pipelines built during the step go to disk once it is done */
	if (!ret && vd->cache_dirty)
		gpo__vk_cache_save(dev);
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

int gpo__vk_create_commands(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkCommandPoolCreateInfo cpci = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
		.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
		.queueFamilyIndex = vd->qfam,
	};
	VkCommandBufferAllocateInfo cbai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	VkFenceCreateInfo fci = {
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	};
	VkQueryPoolCreateInfo qpci = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2,
	};
	VkResult r;

	r = vkCreateCommandPool(vd->device, &cpci, NULL, &vd->cmd_pool);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateCommandPool");
	cbai.commandPool = vd->cmd_pool;
	r = vkAllocateCommandBuffers(vd->device, &cbai, &vd->cmd);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkAllocateCommandBuffers");
	r = vkCreateFence(vd->device, &fci, NULL, &vd->fence);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateFence");
	if (vd->ts_bits) {
		r = vkCreateQueryPool(vd->device, &qpci, NULL,
				      &vd->query_pool);
		if (r != VK_SUCCESS)
			return gpo__vk_fail(dev, r, "vkCreateQueryPool");
	}
	return 0;
}

void gpo__vk_destroy_commands(struct vk_dev *vd)
{
	if (vd->query_pool)
		vkDestroyQueryPool(vd->device, vd->query_pool, NULL);
	if (vd->fence)
		vkDestroyFence(vd->device, vd->fence, NULL);
	if (vd->cmd_pool)
		vkDestroyCommandPool(vd->device, vd->cmd_pool, NULL);
}
