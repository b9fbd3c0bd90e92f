// SPDX-License-Identifier: MIT
/*
 * submit.c - the Vulkan backend's batch: commands are recorded into one
 * command buffer, with a barrier between two that touch overlapping
 * ranges (one of them writing), and submitted together at wait() or at a
 * read, timed by a pair of timestamps. submit() starts a batch without
 * waiting for it; the next batch is recorded into the next of VK_SLOTS
 * command buffers meanwhile, ordered after it by a barrier.
 */
#include <string.h>
#include <time.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"


static void barrier(struct vk_dev *vd, VkPipelineStageFlags dst_stage,
		    VkAccessFlags dst_access);

int gpo__vk_batch_begin(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
		.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
	};
	VkResult r;
	int s;

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
	/*
	 * batches still running (gpo__vk_submit()) wrote what this one may
	 * read or overwrite: a barrier orders it after everything before
	 */
	for (s = 0; s < VK_SLOTS; s++)
		if (vd->busy[s]) {
			barrier(vd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
				VK_PIPELINE_STAGE_TRANSFER_BIT,
				VK_ACCESS_SHADER_READ_BIT |
				VK_ACCESS_SHADER_WRITE_BIT |
				VK_ACCESS_TRANSFER_READ_BIT |
				VK_ACCESS_TRANSFER_WRITE_BIT);
			break;
		}
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


/* the nanoseconds between two timestamps */
static uint64_t ts_ns(const struct vk_dev *vd, const uint64_t *ts)
{
	uint64_t mask = vd->ts_bits >= 64 ? UINT64_MAX :
			(1ull << vd->ts_bits) - 1;

	return (uint64_t)((double)((ts[1] - ts[0]) & mask) *
			  vd->props.limits.timestampPeriod);
}

/*
 * gpo__vk_barrier_all - every earlier command's writes before every
 * later command (graph.c: a recorded step after whatever came before)
 */
void gpo__vk_barrier_all(VkCommandBuffer cmd)
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

/*
 * fence_wait - wait for @fence. A blocking wait wakes 30-60 us late on
 * NVIDIA, so on GPUs: sleep through most of a batch as long as the last
 * one (steps repeat), then poll the fence for vd->spin_ns, then block.
 */
static VkResult fence_wait(struct vk_dev *vd, VkFence fence)
{
	uint64_t start = gpo__now_ns(), end;
	VkResult r;

	if (vd->spin_ns) {
		if (vd->last_batch_ns > 2 * vd->spin_ns) {
			r = vkWaitForFences(vd->device, 1, &fence, VK_TRUE,
					    vd->last_batch_ns - vd->spin_ns);
			if (r != VK_TIMEOUT)
				return r;
		}
		/* the timed wait may return early: poll to the expected end */
		end = start + vd->last_batch_ns + vd->spin_ns;
		do {
			r = vkGetFenceStatus(vd->device, fence);
			if (r != VK_NOT_READY)
				return r;
		} while (gpo__now_ns() < end);
	}
	return vkWaitForFences(vd->device, 1, &fence, VK_TRUE, UINT64_MAX);
}

/*
 * gpo__vk_retire - wait for the batch of slot @s and free the slot; the
 * device time between its timestamps (and a recorded step's) is added
 * to vd->ns. The slot is freed whatever happens.
 */
int gpo__vk_retire(struct gpo_device *dev, int s)
{
	struct vk_dev *vd = dev->priv;
	uint64_t ts[2], ns = 0;
	VkResult r;
	int ret = 0;

	r = fence_wait(vd, vd->fences[s]);
	if (r != VK_SUCCESS)
		ret = gpo__vk_fail(dev, r, "vkWaitForFences");
	if (!ret && vd->timed[s] &&
	    vkGetQueryPoolResults(vd->device, vd->query_pool, 2 * s, 2,
				  sizeof(ts), ts, sizeof(ts[0]),
				  VK_QUERY_RESULT_64_BIT) == VK_SUCCESS)
		ns = ts_ns(vd, ts);
	if (!ret && vd->slot_graph[s])
		ns += gpo__vk_graph_ns(vd, vd->slot_graph[s], vd->slot_copy[s]);
	if (!ret && (vd->timed[s] || vd->slot_graph[s])) {
		vd->last_batch_ns = ns;
		vd->ns += ns;
	}
	vkResetFences(vd->device, 1, &vd->fences[s]);
	if (vd->used[s])
		vkResetCommandBuffer(vd->cmds[s], 0);
	vd->used[s] = 0;
	vd->busy[s] = 0;
	vd->timed[s] = 0;
	vd->slot_graph[s] = NULL;
	return ret;
}

/*
 * submit_slot - end the open batch and submit it, then @extra (a
 * recorded step of graph @g, its copy @copy; may be NULL) in the same
 * submission, without waiting; the next batch goes into the next slot,
 * whose previous batch is waited for first. *@slot (may be NULL): the
 * slot submitted. On failure the batch is dropped.
 */
static int submit_slot(struct gpo_device *dev, VkCommandBuffer extra,
		       struct dev_graph *g, int copy, int *slot)
{
	struct vk_dev *vd = dev->priv;
	VkCommandBuffer bufs[2];
	VkSubmitInfo si = {
		.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
		.pCommandBuffers = bufs,
	};
	const VkPipelineStageFlagBits bottom =
		VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
	int s = vd->cur, ret = 0;
	VkResult r = VK_SUCCESS;

	if (vd->recording) {
		if (vd->ts_started)
			vkCmdWriteTimestamp(vd->cmd, bottom, vd->query_pool,
					    2 * s + 1);
		/* device writes must be made visible to the host */
		barrier(vd, VK_PIPELINE_STAGE_HOST_BIT,
			VK_ACCESS_HOST_READ_BIT);
		gpo__vk_interop_end(vd, vd->cmd);
		r = vkEndCommandBuffer(vd->cmd);
		bufs[si.commandBufferCount++] = vd->cmd;
	}
	if (extra)
		bufs[si.commandBufferCount++] = extra;
	if (!si.commandBufferCount)
		return 0;
	if (r == VK_SUCCESS)
		r = vkQueueSubmit(vd->queue, 1, &si, vd->fences[s]);
	vd->recording = 0;
	vd->nacc = 0;
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkQueueSubmit");
		vkResetCommandBuffer(vd->cmd, 0);
		vd->ts_started = 0;
		return ret;
	}
	vd->busy[s] = 1;
	vd->used[s] = bufs[0] == vd->cmd;
	vd->timed[s] = vd->ts_started;
	vd->slot_graph[s] = g;
	vd->slot_copy[s] = copy;
	vd->seq[s] = vd->nsubmit++;
	vd->ts_started = 0;
	if (slot)
		*slot = s;
	vd->cur = (s + 1) % VK_SLOTS;
	vd->cmd = vd->cmds[vd->cur];
	if (vd->busy[vd->cur])
		ret = gpo__vk_retire(dev, vd->cur);
	return ret;
}

static int submit_open(struct gpo_device *dev)
{
	return submit_slot(dev, VK_NULL_HANDLE, NULL, 0, NULL);
}

/*
 * gpo__vk_submit_graph - submit the open batch and then @cmd, copy @copy
 * of the recorded step @g, as one submission; *@slot: its slot
 */
int gpo__vk_submit_graph(struct gpo_device *dev, VkCommandBuffer cmd,
			 struct dev_graph *g, int copy, int *slot)
{
	return submit_slot(dev, cmd, g, copy, slot);
}

/*
 * gpo__vk_batch_flush - submit the open batch and wait for it and for
 * every batch submitted before it. The staging buffer is free again
 * after it, so the next launch starts a fresh batch at its start.
 */
int gpo__vk_batch_flush(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int ret, err, s, oldest;

	ret = submit_open(dev);
	for (;;) {
		oldest = -1;
		for (s = 0; s < VK_SLOTS; s++)
			if (vd->busy[s] &&
			    (oldest < 0 || vd->seq[s] < vd->seq[oldest]))
				oldest = s;
		if (oldest < 0)
			break;
		err = gpo__vk_retire(dev, oldest);
		if (!ret)
			ret = err;
	}
	vd->staging_pos = 0;
	vd->nacc = 0;
	return ret;
}

/*
 * gpo__vk_submit - start the open batch on the device and return without
 * waiting; what is launched next is ordered after it (batch_begin()).
 */
int gpo__vk_submit(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	pthread_mutex_lock(&vd->lock);
	ret = vd->lost ? gpo__vk_lost(dev) : submit_open(dev);
	pthread_mutex_unlock(&vd->lock);
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
	vkCmdResetQueryPool(vd->cmd, vd->query_pool, 2 * vd->cur, 2);
	vkCmdWriteTimestamp(vd->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
			    vd->query_pool, 2 * vd->cur);
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
		.commandBufferCount = VK_SLOTS,
	};
	VkFenceCreateInfo fci = {
		.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO,
	};
	VkQueryPoolCreateInfo qpci = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2 * VK_SLOTS,
	};
	VkResult r;
	int s;

	r = vkCreateCommandPool(vd->device, &cpci, NULL, &vd->cmd_pool);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateCommandPool");
	cbai.commandPool = vd->cmd_pool;
	r = vkAllocateCommandBuffers(vd->device, &cbai, vd->cmds);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkAllocateCommandBuffers");
	vd->cur = 0;
	vd->cmd = vd->cmds[0];
	for (s = 0; s < VK_SLOTS; s++) {
		r = vkCreateFence(vd->device, &fci, NULL, &vd->fences[s]);
		if (r != VK_SUCCESS)
			return gpo__vk_fail(dev, r, "vkCreateFence");
	}
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
	int s;

	if (vd->query_pool)
		vkDestroyQueryPool(vd->device, vd->query_pool, NULL);
	for (s = 0; s < VK_SLOTS; s++)
		if (vd->fences[s])
			vkDestroyFence(vd->device, vd->fences[s], NULL);
	if (vd->cmd_pool)
		vkDestroyCommandPool(vd->device, vd->cmd_pool, NULL);
}
