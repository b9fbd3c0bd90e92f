// SPDX-License-Identifier: MIT
/*
 * graph.c - recorded steps. The launches of one optimizer step, made
 * between graph_begin() and graph_end(), are collected instead of
 * recorded into the batch. The first time, they are recorded into a
 * command buffer of their own with the ".ab" pipelines, which read the
 * parameter struct from a small mapped buffer (binding GPO_ARGS_BINDING)
 * instead of push constants; after that a step only copies its parameter
 * structs there and submits the recorded buffer: no recording, no
 * descriptor pushes. A step's scalars (lr, bias corrections) so come from
 * device memory, written before each submit.
 *
 * A recording is replayed while the step launches the same ops in the
 * same dtypes over the same work and buffers, each in the pipeline it was
 * recorded with (parameters that choose another, pipeline.c's
 * gpo__vk_pipeline_key(), record again), and no buffer was freed
 * since (a recording names VkBuffers; a new one may get a freed handle).
 * Anything else records again. Launches it cannot record (no ".ab" shader,
 * windows, no push descriptors, too many) send the whole step to the
 * batch as before; a recording the driver refuses sends every later step
 * there too.
 *
 * Four copies of the recording are used in turn, each with its own
 * parameter structs and readback, so that steps queued without waiting
 * (gpo_optim_step_async()) do not overwrite what a running one reads; a
 * copy is waited for before it is written again.
 *
 * A launch whose parameter struct has not changed since the recording
 * keeps it as push constants in the recording, with the plain pipeline:
 * shaders read push constants faster than a buffer, and most launches of
 * a training step (the matmuls' sizes, strides) never change. The first
 * recording has every launch so; a launch seen with new parameters turns
 * to the ".ab" form for good, and the step is recorded again.
 *
 * A step holds as many launches as it brings, up to GRAPH_CALLS_MAX: an
 * optimizer step a few, a training step of the tensor engine (load,
 * forward, backward, update) hundreds. The parameter structs' memory
 * grows with the largest step seen, after the copies using it are done.
 */
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"

_Static_assert(GPO_ARGS_BINDING == OP_MAX_BUF,
	       "the parameter binding follows the op's buffers");

#define GRAPH_CALLS_MAX	8192		/* launches a recorded step may hold */
#define GRAPH_COPIES	VK_SLOTS
#define READBACK_MAX	GPO_RB_MAX	/* bytes: each copy's readbacks */

struct graph_call {
	enum gpo__op_id op;
	enum gpo_dtype dtype;
	int dyn;			/* rec[]: parameters from g->args */
	uint32_t key;			/* gpo__vk_pipeline_key() */
	uint64_t work;
	struct dev_buf buf[OP_MAX_BUF];
	uint32_t args[GPO_ARGS_MAX / 4];
};

struct graph_copy {
	VkCommandBuffer cmd;
	int recorded;			/* holds dev_graph.rec */
	int slot;			/* the batch slot of its last submit */
	uint64_t seq;			/* ... that submission; slot -1: none */
};

struct dev_graph {
	struct graph_call *calls;	/* this step's */
	int ncalls;
	int cap;			/* calls[] and rec[] hold this many */
	int spilled;			/* they went to the batch instead */
	/* what the recordings hold (their parameter structs aside) */
	struct graph_call *rec;
	int nrec;
	int args_cap;			/* launches @args has room for */
	struct dev_buf rb[GPO_RB_COUNT];	/* readback sources */
	unsigned int nrb;
	uint64_t gen;			/* vd->free_gen at recording */
	uint64_t fd_sig;		/* fd_sig() at recording */
	struct graph_copy copy[GRAPH_COPIES];
	int next;			/* the copy the next step uses */
	uint64_t stride;		/* bytes between parameter structs */
	struct dev_mem args;		/* GRAPH_COPIES * args_cap structs */
	struct dev_mem back;		/* GRAPH_COPIES * READBACK_MAX */
	VkQueryPool qpool;		/* 2 timestamps a copy */
};

static int graph_new(struct gpo_device *dev, struct dev_graph **out)
{
	struct vk_dev *vd = dev->priv;
	VkQueryPoolCreateInfo qpci = {
		.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
		.queryType = VK_QUERY_TYPE_TIMESTAMP,
		.queryCount = 2 * GRAPH_COPIES,
	};
	VkCommandBufferAllocateInfo cbai = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
		.commandPool = vd->cmd_pool,
		.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
		.commandBufferCount = 1,
	};
	uint64_t align = vd->props.limits.minStorageBufferOffsetAlignment;
	struct dev_graph *g;
	VkResult r;
	int i, ret;

	g = calloc(1, sizeof(*g));
	if (!g)
		return gpo__err(-ENOMEM, "out of memory");
	g->stride = align > GPO_ARGS_MAX ? align : GPO_ARGS_MAX;
	g->stride = (g->stride + align - 1) / align * align;
	ret = gpo__vk_mem_mapped(dev, READBACK_MAX * GRAPH_COPIES, 0,
				 &g->back);
	if (ret)
		goto out_free;
	for (i = 0; i < GRAPH_COPIES; i++) {
		g->copy[i].slot = -1;
		r = vkAllocateCommandBuffers(vd->device, &cbai,
					     &g->copy[i].cmd);
		if (r != VK_SUCCESS) {
			ret = gpo__vk_fail(dev, r, "vkAllocateCommandBuffers");
			goto out_cmds;
		}
	}
	if (vd->ts_bits) {
		r = vkCreateQueryPool(vd->device, &qpci, NULL, &g->qpool);
		if (r != VK_SUCCESS) {
			ret = gpo__vk_fail(dev, r, "vkCreateQueryPool");
			goto out_cmds;
		}
	}
	*out = g;
	return 0;

out_cmds:
	for (i = 0; i < GRAPH_COPIES; i++)
		if (g->copy[i].cmd)
			vkFreeCommandBuffers(vd->device, vd->cmd_pool, 1,
					     &g->copy[i].cmd);
	gpo__vk_mem_unmapped(vd, &g->back);
out_free:
	free(g);
	return ret;
}

void gpo__vk_graph_free(struct gpo_device *dev, struct dev_graph *g)
{
	struct vk_dev *vd = dev->priv;
	int i;

	if (!g)
		return;
	pthread_mutex_lock(&vd->lock);
	/* no running batch may refer to it any more */
	gpo__vk_batch_flush(dev);
	if (vd->collect == g)
		vd->collect = NULL;
	for (i = 0; i < GRAPH_COPIES; i++)
		vkFreeCommandBuffers(vd->device, vd->cmd_pool, 1,
				     &g->copy[i].cmd);
	if (g->qpool)
		vkDestroyQueryPool(vd->device, g->qpool, NULL);
	gpo__vk_mem_unmapped(vd, &g->back);
	if (g->args_cap)
		gpo__vk_mem_unmapped(vd, &g->args);
	pthread_mutex_unlock(&vd->lock);
	free(g->calls);
	free(g->rec);
	free(g);
}

int gpo__vk_graph_begin(struct gpo_device *dev, struct dev_graph **g)
{
	struct vk_dev *vd = dev->priv;
	int ret = 0;

	pthread_mutex_lock(&vd->lock);
	if (vd->lost) {
		ret = gpo__vk_lost(dev);
		goto out_unlock;
	}
	if (vd->nograph || !vd->push_desc) {
		ret = 1;	/* launches go to the batch */
		goto out_unlock;
	}
	if (!*g && graph_new(dev, g)) {
		/* steps still run, launched into the batch as before */
		vd->nograph = 1;
		gpo__err_clear();
		goto out_unlock;
	}
	(*g)->ncalls = 0;
	(*g)->spilled = 0;
	vd->collect = *g;
out_unlock:
	pthread_mutex_unlock(&vd->lock);
	return ret > 0 ? 0 : ret;
}

/* the collected launches go to the batch, in order; collection ends */
static int spill(struct gpo_device *dev, struct dev_graph *g)
{
	struct vk_dev *vd = dev->priv;
	struct op_call call;
	int i, b, ret = 0;

	vd->collect = NULL;
	g->spilled = 1;
	for (i = 0; i < g->ncalls && !ret; i++) {
		memset(&call, 0, sizeof(call));
		call.op = g->calls[i].op;
		call.dtype = g->calls[i].dtype;
		call.work = g->calls[i].work;
		for (b = 0; b < OP_MAX_BUF; b++)
			call.buf[b] = g->calls[i].buf[b];
		call.args = g->calls[i].args;
		ret = gpo__vk_launch_locked(dev, &call);
	}
	g->ncalls = 0;
	return ret;
}

/* a launch while collecting (vd->lock held) */
int gpo__vk_graph_add(struct gpo_device *dev, const struct op_call *call)
{
	struct vk_dev *vd = dev->priv;
	struct dev_graph *g = vd->collect;
	const struct gpo__op *op = &gpo__ops[call->op];
	struct graph_call *c;
	int ret;

	if (g->ncalls == g->cap && g->cap < GRAPH_CALLS_MAX) {
		int cap = g->cap ? 2 * g->cap : 16;
		struct graph_call *c2, *r2;

		c2 = realloc(g->calls, cap * sizeof(*c2));
		if (c2)
			g->calls = c2;
		r2 = c2 ? realloc(g->rec, cap * sizeof(*r2)) : NULL;
		if (r2) {
			g->rec = r2;
			g->cap = cap;
		}
	}
	if (g->ncalls == g->cap || !gpo__vk_recordable(dev, call)) {
		ret = spill(dev, g);
		return ret ? ret : gpo__vk_launch_locked(dev, call);
	}
	/* what launch_elements() checks: n is the launch's element count */
	if (op->grid == GRID_ELEMENTS && *(const uint32_t *)call->args !=
	    call->work)
		return gpo__err(-EINVAL, "%s: %s: n = %u in the parameters, %llu elements launched",
				dev->info.id, op->name,
				*(const uint32_t *)call->args,
				(unsigned long long)call->work);
	c = &g->calls[g->ncalls++];
	memset(c, 0, sizeof(*c));
	c->op = call->op;
	c->dtype = call->dtype;
	c->work = call->work;
	c->key = gpo__vk_pipeline_key(call);
	memcpy(c->buf, call->buf, sizeof(c->buf));
	memcpy(c->args, call->args, op->args_size);
	return 0;
}

/*
 * the buffers over memory imported from fds, which each submission
 * acquires and releases (interop.c): a recording holds those barriers
 */
static uint64_t fd_sig(const struct vk_dev *vd)
{
	uint64_t h = 0xcbf29ce484222325ull ^ vd->n_fd_bufs;
	uint32_t i;

	for (i = 0; i < vd->n_fd_bufs; i++)
		h = (h ^ (uint64_t)(uintptr_t)vd->fd_bufs[i]) *
		    0x100000001b3ull;
	return h;
}

/* do the collected launches match the recording, parameters aside? */
static int same_launches(const struct vk_dev *vd, const struct dev_graph *g,
			 const struct dev_buf *rb, unsigned int nrb)
{
	int i;

	if (g->nrec != g->ncalls || g->gen != vd->free_gen ||
	    g->fd_sig != fd_sig(vd) || g->nrb != nrb ||
	    (nrb && memcmp(g->rb, rb, nrb * sizeof(*rb))))
		return 0;
	for (i = 0; i < g->ncalls; i++) {
		const struct graph_call *a = &g->calls[i], *b = &g->rec[i];

		if (a->op != b->op || a->dtype != b->dtype ||
		    a->work != b->work || a->key != b->key ||
		    memcmp(a->buf, b->buf, sizeof(a->buf)))
			return 0;
	}
	return 1;
}

/*
 * new_params - the launches match the recording: do any that have their
 * parameters fixed in it come with new ones? They take them from the
 * parameter buffer from now on (and the step is recorded again).
 */
static int new_params(struct dev_graph *g)
{
	int i, changed = 0;

	for (i = 0; i < g->ncalls; i++) {
		struct graph_call *r = &g->rec[i];

		if (r->dyn || !memcmp(r->args, g->calls[i].args,
				      gpo__ops[r->op].args_size))
			continue;
		r->dyn = 1;
		changed = 1;
	}
	return changed;
}

/*
 * record - record copy @k: a barrier after whatever ran before, the
 * launches with their parameters at copy @k's structs, the readback,
 * timestamps around it all. Uses the batch's access tracking on the
 * copy's command buffer, the open batch's saved and put back.
 */
static int record(struct gpo_device *dev, struct dev_graph *g, int k)
{
	struct vk_dev *vd = dev->priv;
	VkCommandBufferBeginInfo bi = {
		.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
	};
	VkCommandBuffer cmd = g->copy[k].cmd, saved_cmd = vd->cmd;
	VkPipeline saved_bound = vd->bound;
	struct vk_access *saved_acc;
	int saved_nacc = vd->nacc, i, ret = 0;
	unsigned int j;
	VkResult r;

	saved_acc = malloc(sizeof(vd->acc));
	if (!saved_acc)
		return gpo__err(-ENOMEM, "out of memory");
	memcpy(saved_acc, vd->acc, sizeof(vd->acc));
	vkResetCommandBuffer(cmd, 0);
	r = vkBeginCommandBuffer(cmd, &bi);
	if (r != VK_SUCCESS) {
		ret = gpo__vk_fail(dev, r, "vkBeginCommandBuffer");
		goto out_restore;
	}
	vd->cmd = cmd;
	vd->nacc = 0;
	vd->bound = VK_NULL_HANDLE;
	gpo__vk_barrier_all(cmd);
	/* an adopted device's barrier, imported memory acquired */
	gpo__vk_interop_begin(vd, cmd);
	if (g->qpool) {
		vkCmdResetQueryPool(cmd, g->qpool, 2 * k, 2);
		vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
				    g->qpool, 2 * k);
	}
	for (i = 0; i < g->ncalls && !ret; i++) {
		const struct graph_call *c = &g->rec[i];
		VkDescriptorBufferInfo args = {
			.buffer = g->args.buffer,
			.offset = ((uint64_t)k * g->args_cap + i) * g->stride,
			.range = gpo__ops[c->op].args_size,
		};
		struct op_call call = {
			.op = c->op, .dtype = c->dtype, .work = c->work,
			.args = c->args,
		};

		memcpy(call.buf, c->buf, sizeof(call.buf));
		ret = gpo__vk_record_ab(dev, &call, c->dyn ? &args : NULL);
	}
	for (j = 0; !ret && j < g->nrb; j++) {
		uint64_t to = (uint64_t)k * READBACK_MAX +
			      gpo__rb_offset(g->rb, j);
		const struct dev_buf *rb = &g->rb[j];
		struct vk_access acc[2] = {
			{ rb->mem->buffer, rb->off, rb->off + rb->size, 0 },
			{ g->back.buffer, to, to + rb->size, 1 },
		};
		VkBufferCopy region = {
			.srcOffset = rb->off,
			.dstOffset = to,
			.size = rb->size,
		};

		gpo__vk_track(vd, acc, 2);
		vkCmdCopyBuffer(cmd, rb->mem->buffer, g->back.buffer, 1,
				&region);
	}
	if (!ret) {
		const VkPipelineStageFlagBits bottom =
			VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT;
		VkMemoryBarrier mb = {
			.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
			.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
					 VK_ACCESS_TRANSFER_WRITE_BIT,
			.dstAccessMask = VK_ACCESS_HOST_READ_BIT,
		};

		if (g->qpool)
			vkCmdWriteTimestamp(cmd, bottom, g->qpool, 2 * k + 1);
		vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT |
				     VK_PIPELINE_STAGE_TRANSFER_BIT,
				     VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0,
				     NULL, 0, NULL);
		gpo__vk_interop_end(vd, cmd);
	}
	r = vkEndCommandBuffer(cmd);
	if (!ret && r != VK_SUCCESS)
		ret = gpo__vk_fail(dev, r, "vkEndCommandBuffer");
	g->copy[k].recorded = !ret;
out_restore:
	vd->cmd = saved_cmd;
	vd->bound = saved_bound;
	vd->nacc = saved_nacc;
	memcpy(vd->acc, saved_acc, sizeof(vd->acc));
	free(saved_acc);
	return ret;
}

/*
 * room for @g's parameter structs of @n launches in every copy: a larger
 * buffer once the copies using the old one are done (their recordings
 * name it, so they are recorded again)
 */
static int args_room(struct gpo_device *dev, struct dev_graph *g, int n)
{
	struct vk_dev *vd = dev->priv;
	int i, ret;

	if (n <= g->args_cap)
		return 0;
	if (g->args_cap) {
		ret = gpo__vk_batch_flush(dev);
		if (ret)
			return ret;
		gpo__vk_mem_unmapped(vd, &g->args);
		g->args_cap = 0;
	}
	for (i = 0; i < GRAPH_COPIES; i++) {
		g->copy[i].recorded = 0;
		g->copy[i].slot = -1;
	}
	ret = gpo__vk_mem_mapped(dev, g->stride * g->cap * GRAPH_COPIES, 1,
				 &g->args);
	if (ret)
		return ret;
	g->args_cap = g->cap;
	return 0;
}

int gpo__vk_graph_end(struct gpo_device *dev, struct dev_graph *g,
		      int abort, const struct dev_buf *rb, unsigned int nrb,
		      const void **host)
{
	struct vk_dev *vd = dev->priv;
	struct graph_copy *c;
	unsigned int j;
	int i, k, ret = 0;

	if (!g)
		return 0;
	pthread_mutex_lock(&vd->lock);
	if (vd->collect != g || g->spilled || !g->ncalls || abort) {
		vd->collect = NULL;
		g->ncalls = 0;
		goto out_unlock;
	}
	vd->collect = NULL;
	if (!rb)
		nrb = 0;
	for (j = 0; j < nrb; j++)
		if (!rb[j].mem || !rb[j].size)
			break;
	if (j < nrb || nrb > GPO_RB_COUNT ||
	    gpo__rb_offset(rb, nrb) > READBACK_MAX) {
		ret = spill(dev, g);
		goto out_unlock;
	}
	/* parameter structs that find no room: the step goes to the batch */
	if (args_room(dev, g, g->ncalls)) {
		gpo__err_clear();
		ret = spill(dev, g);
		goto out_unlock;
	}
	if (!same_launches(vd, g, rb, nrb)) {
		memcpy(g->rec, g->calls, g->ncalls * sizeof(*g->calls));
		g->nrec = g->ncalls;
		g->gen = vd->free_gen;
		g->fd_sig = fd_sig(vd);
		g->nrb = nrb;
		memset(g->rb, 0, sizeof(g->rb));
		if (nrb)
			memcpy(g->rb, rb, nrb * sizeof(*rb));
		for (i = 0; i < GRAPH_COPIES; i++)
			g->copy[i].recorded = 0;
	} else if (new_params(g)) {
		for (i = 0; i < GRAPH_COPIES; i++)
			g->copy[i].recorded = 0;
	}
	k = g->next;
	c = &g->copy[k];
	/* its last submission may still read its structs: wait for it */
	if (c->slot >= 0 && vd->busy[c->slot] && vd->seq[c->slot] == c->seq)
		ret = gpo__vk_retire(dev, c->slot);
	c->slot = -1;
	if (ret)
		goto out_unlock;
	for (i = 0; i < g->ncalls; i++) {
		uint64_t at = ((uint64_t)k * g->args_cap + i) * g->stride;

		if (!g->rec[i].dyn)
			continue;
		memcpy(g->args.map + at, g->calls[i].args,
		       gpo__ops[g->calls[i].op].args_size);
	}
	/*
	 * A recording the driver refuses (a pipeline, a command buffer) is
	 * no reason to fail the step: it and every later one go to the batch
	 */
	if (!c->recorded && record(dev, g, k)) {
		vd->nograph = 1;
		gpo__err_clear();
		for (i = 0; i < GRAPH_COPIES; i++)
			g->copy[i].recorded = 0;
		ret = spill(dev, g);
		goto out_unlock;
	}
	ret = gpo__vk_submit_graph(dev, c->cmd, g, k, &c->slot);
	if (ret) {
		c->slot = -1;
		goto out_unlock;
	}
	c->seq = vd->seq[c->slot];
	g->next = (k + 1) % GRAPH_COPIES;
	if (host)
		*host = nrb ? g->back.map + (uint64_t)k * READBACK_MAX : NULL;
	ret = 1;
out_unlock:
	g->ncalls = 0;
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

/* the device time of copy @copy of @g's last run (vd->lock held) */
uint64_t gpo__vk_graph_ns(struct vk_dev *vd, struct dev_graph *g, int copy)
{
	uint64_t ts[2], mask;

	if (!g->qpool ||
	    vkGetQueryPoolResults(vd->device, g->qpool, 2 * copy, 2,
				  sizeof(ts), ts, sizeof(ts[0]),
				  VK_QUERY_RESULT_64_BIT) != VK_SUCCESS)
		return 0;
	mask = vd->ts_bits >= 64 ? UINT64_MAX : (1ull << vd->ts_bits) - 1;
	return (uint64_t)((double)((ts[1] - ts[0]) & mask) *
			  vd->props.limits.timestampPeriod);
}
