// SPDX-License-Identifier: MIT
/*
 * launch.c - one op into the batch, from its descriptor alone: which
 * buffers it reads and writes (the barriers), which are element views
 * (OP_VEC4, cut into windows where a view is longer than one binding may
 * span), which may be absent (the dummy is bound), and its grid.
 */
#include <string.h>
#include "core/gpuopt_i.h"
#include "backend/vulkan/vulkan_i.h"

/*
 * bind_buf - the descriptor for buffer @i of @call seen from byte @off for
 * @range bytes; an absent buffer gets the dummy.
 */
static int bind_buf(struct gpo_device *dev, const struct op_call *call,
		    unsigned int i, uint64_t off, uint64_t range,
		    VkDescriptorBufferInfo *out)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	const struct dev_buf *b = &call->buf[i];
	uint64_t align = vd->props.limits.minStorageBufferOffsetAlignment;

	if (!b->mem || !range) {
		out->buffer = vd->dummy.buffer;
		out->offset = 0;
		out->range = VK_DUMMY_BYTES;
		return 0;
	}
	off += b->off;
	if (align && off % align)
		return gpo__err(-EINVAL, "%s: %s buffer %s at offset %llu, not a multiple of %llu",
				dev->info.id, op->name, op->buf[i].name,
				(unsigned long long)off,
				(unsigned long long)align);
	if (off + range > b->mem->size)
		return gpo__err(-EINVAL, "%s: %s buffer %s: %llu bytes at %llu overrun its block",
				dev->info.id, op->name, op->buf[i].name,
				(unsigned long long)range,
				(unsigned long long)off);
	if (range > vd->max_range)
		return gpo__err(-ENOSYS, "%s (%s): %s buffer %s over %llu bytes: more than one binding may span (maxStorageBufferRange %llu)",
				dev->info.id, dev->info.name, op->name,
				op->buf[i].name, (unsigned long long)range,
				(unsigned long long)vd->max_range);
	out->buffer = b->mem->buffer;
	out->offset = off;
	out->range = range;
	return 0;
}

/* a whole view's range: its size, in whole 4-byte words */
static uint64_t whole(const struct dev_buf *b)
{
	return (b->size + 3) & ~3ull;
}

/*
 * record_bind - everything before a dispatch of @call over the bindings
 * @bi with push constants @pc: the barrier its accesses need (its
 * descriptor's OP_W buffers are written, the others read), the pipeline,
 * the descriptors and the op's parameter struct.
 */
static int record_bind(struct gpo_device *dev, const struct op_call *call,
		       VkPipeline pipe, const VkDescriptorBufferInfo *bi,
		       const void *pc)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	struct vk_access acc[OP_MAX_BUF];
	VkDescriptorSet set = VK_NULL_HANDLE;
	unsigned int i;
	int n = 0, ret;

	/* a set-cache miss may flush the batch: before recording starts */
	if (!vd->push_desc) {
		ret = gpo__vk_desc_set(dev, bi, op->nbuf, &set);
		if (ret)
			return ret;
	}
	ret = gpo__vk_batch_begin(dev);
	if (ret)
		return ret;
	for (i = 0; i < op->nbuf; i++) {
		if (bi[i].buffer == vd->dummy.buffer)
			continue;
		acc[n].buffer = bi[i].buffer;
		acc[n].lo = bi[i].offset;
		acc[n].hi = bi[i].offset + bi[i].range;
		acc[n].write = !!(op->buf[i].role & OP_W);
		n++;
	}
	gpo__vk_track(vd, acc, n);
	gpo__vk_timestamp_start(vd);
	if (vd->bound != pipe) {
		vkCmdBindPipeline(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				  pipe);
		vd->bound = pipe;
	}
	gpo__vk_desc_bind(vd, bi, op->nbuf, set);
	if (op->args_size)
		vkCmdPushConstants(vd->cmd, vd->pipe_layout,
				   VK_SHADER_STAGE_COMPUTE_BIT, 0,
				   op->args_size, pc);
	return 0;
}

/*
 * GRID_ELEMENTS: one invocation per 4 elements, the dispatch capped (the
 * shaders loop). The element views (OP_VEC4) are bound from their start
 * for @work elements; a view longer than one binding may span is cut into
 * windows of whole 256-byte units, each its own dispatch whose parameter
 * struct says the window's elements. Every parameter struct of an element
 * op begins with n, its element count (kernels/abi/), which is how a
 * window tells its shader; other buffers (scal) are bound whole.
 */
/*
 * The bytes of one element of element view @b of @n elements: the
 * launch dtype's @es, or fewer for a state view of half-precision elements
 * (an optimizer's bf16 state beside f32 parameters), whose view is then
 * shorter than @n * @es; it covers @n rounded up to 4 of them.
 */
static uint64_t view_esize(const struct dev_buf *b, uint64_t n, uint64_t es)
{
	if (!b->mem || !n || b->size >= n * es)
		return es;
	return b->size / n;
}

/*
 * The bytes to bind of the last window of element view @b, @range from
 * byte @off of the view on: whole 16-byte words where its block has
 * them. A shader reads a view of half-precision elements (1 to 3 bf16
 * state elements, which view_esize() cannot tell from f32 ones) a
 * float4's worth at a time, and a robust driver (NVIDIA's) reads 0 for a
 * word that pokes out of the binding. Nothing is written past the view.
 */
static uint64_t last_range(const struct vk_dev *vd, const struct dev_buf *b,
			   uint64_t off, uint64_t range)
{
	uint64_t want = (range + 15) & ~15ull, room;

	if (!b->mem || b->off + off > b->mem->size)
		return range;
	room = b->mem->size - b->off - off;
	want = want < room ? want : room;
	return want > range && want <= vd->max_range ? want : range;
}

static int launch_elements(struct gpo_device *dev, const struct op_call *call,
			   VkPipeline pipe)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	uint64_t es = gpo__vk_dtype_size(call->dtype), n = call->work;
	uint64_t chunk = (vd->max_range & ~255ull) / es, first, cnt, groups;
	VkDescriptorBufferInfo bi[OP_MAX_BUF];
	uint32_t pc[GPO_ARGS_MAX / 4];
	unsigned int i;
	int ret;

	if (!es || op->args_size < 4 || op->args_size > sizeof(pc))
		return gpo__err(-EINVAL, "%s: %s: dtype %d, a %u-byte parameter struct",
				dev->info.id, op->name, call->dtype,
				op->args_size);
	memcpy(pc, call->args, op->args_size);
	if (pc[0] != n)
		return gpo__err(-EINVAL, "%s: %s: n = %u in the parameters, %llu elements launched",
				dev->info.id, op->name, pc[0],
				(unsigned long long)n);
	for (i = 0; i < op->nbuf; i++) {
		const struct dev_buf *b = &call->buf[i];

		if ((op->buf[i].role & OP_VEC4) && b->mem &&
		    view_esize(b, n, es) < 2)
			return gpo__err(-EINVAL, "%s: %s buffer %s holds %llu bytes, %llu elements need %llu",
					dev->info.id, op->name, op->buf[i].name,
					(unsigned long long)b->size,
					(unsigned long long)n,
					(unsigned long long)(n * es));
	}
	if (!chunk)
		return gpo__err(-ENOSYS, "%s (%s): maxStorageBufferRange %llu",
				dev->info.id, dev->info.name,
				(unsigned long long)vd->max_range);
	for (first = 0; first < n; first += cnt) {
		cnt = n - first < chunk ? n - first : chunk;
		for (i = 0; i < op->nbuf; i++) {
			const struct dev_buf *b = &call->buf[i];
			uint64_t bes = view_esize(b, n, es);
			uint64_t range = cnt * bes;

			if (first + cnt == n)
				range = last_range(vd, b, first * bes, range);
			if (op->buf[i].role & OP_VEC4)
				ret = bind_buf(dev, call, i, first * bes,
					       range, &bi[i]);
			else
				ret = bind_buf(dev, call, i, 0,
					       whole(&call->buf[i]), &bi[i]);
			if (ret)
				return ret;
		}
		groups = ((cnt + 3) / 4 + GPO_WG_SIZE - 1) / GPO_WG_SIZE;
		if (groups > vd->max_groups)
			groups = vd->max_groups;
		pc[0] = (uint32_t)cnt;
		/* element indices that key random bits are global (abi.h) */
		if (op->base_word)
			pc[op->base_word] = ((const uint32_t *)call->args)
					    [op->base_word] + (uint32_t)first;
		ret = record_bind(dev, call, pipe, bi, pc);
		if (ret)
			return ret;
		vkCmdDispatch(vd->cmd, (uint32_t)groups, 1, 1);
	}
	return 0;
}

/*
 * GRID_GROUPS: exactly @work workgroups over whole views. Past one
 * dimension's limit they run as rows of vd->group_row groups (the
 * shaders' GPO_GROUP_ROW, group.glsl): the full rows in one dispatch, the
 * last partial row in a second one based at the next row, so no surplus
 * group runs and the shaders need not know @work.
 */
static void dispatch_groups(VkCommandBuffer cmd, uint32_t work, uint32_t row)
{
	uint32_t rows = work / row, rest = work % row;

	if (!rows) {
		vkCmdDispatch(cmd, rest, 1, 1);
		return;
	}
	vkCmdDispatch(cmd, row, rows, 1);
	if (rest)
		vkCmdDispatchBase(cmd, 0, rows, 0, rest, 1, 1);
}

static int launch_groups(struct gpo_device *dev, const struct op_call *call,
			 VkPipeline pipe)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	uint32_t work = (uint32_t)call->work, row = vd->group_row;
	uint32_t rows = work / row, rest = work % row;
	VkDescriptorBufferInfo bi[OP_MAX_BUF];
	unsigned int i;
	int ret;

	if (rows + (rest ? 1 : 0) >
	    vd->props.limits.maxComputeWorkGroupCount[1])
		return gpo__err(-ENOSYS, "%s: %s: %u workgroups are more than the device can dispatch",
				dev->info.id, op->name, work);
	for (i = 0; i < op->nbuf; i++) {
		ret = bind_buf(dev, call, i, 0, whole(&call->buf[i]), &bi[i]);
		if (ret)
			return ret;
	}
	ret = record_bind(dev, call, pipe, bi, call->args);
	if (ret)
		return ret;
	dispatch_groups(vd->cmd, work, row);
	return 0;
}

/* launch() under vd->lock, into the batch */
int gpo__vk_launch_locked(struct gpo_device *dev, const struct op_call *call)
{
	VkPipeline pipe;
	int ret;

	ret = gpo__vk_pipeline(dev, call, &pipe);
	if (ret)
		return ret;
	if (gpo__ops[call->op].grid == GRID_ELEMENTS)
		return launch_elements(dev, call, pipe);
	return launch_groups(dev, call, pipe);
}

int gpo__vk_launch(struct gpo_device *dev, const struct op_call *call)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	if (!call->work)
		return 0;
	pthread_mutex_lock(&vd->lock);
	if (vd->lost)
		ret = gpo__vk_lost(dev);
	else if (vd->collect)
		ret = gpo__vk_graph_add(dev, call);
	else
		ret = gpo__vk_launch_locked(dev, call);
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

/*
 * gpo__vk_recordable - can @call go into a recorded step? It needs push
 * descriptors (the recording names its bindings), an ".ab" shader, and,
 * for an element op, one window: its parameter struct is written once per
 * step, so no window can have its own n.
 */
int gpo__vk_recordable(struct gpo_device *dev, const struct op_call *call)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	uint64_t es = gpo__vk_dtype_size(call->dtype);

	if (!vd->push_desc || !gpo__vk_has_ab(call->op, call->dtype) ||
	    op->args_size < 4 || op->args_size > GPO_ARGS_MAX)
		return 0;
	if (op->grid == GRID_ELEMENTS)
		return es && call->work * es <= (vd->max_range & ~255ull);
	return 1;
}

/*
 * gpo__vk_record_ab - record @call (gpo__vk_recordable()) into vd->cmd
 * with its ".ab" pipeline, its parameter struct bound from @args, and the
 * barrier its accesses need; with @args NULL, with its plain pipeline and
 * call->args as push constants, fixed in the recording (shaders read
 * push constants faster than a buffer: a recorded step keeps the
 * buffer for the launches whose parameters change from step to step)
 */
int gpo__vk_record_ab(struct gpo_device *dev, const struct op_call *call,
		      const VkDescriptorBufferInfo *args)
{
	struct vk_dev *vd = dev->priv;
	const struct gpo__op *op = &gpo__ops[call->op];
	uint64_t es = gpo__vk_dtype_size(call->dtype), n = call->work;
	VkDescriptorBufferInfo bi[OP_MAX_BUF + 1];
	VkWriteDescriptorSet w[OP_MAX_BUF + 1];
	struct vk_access acc[OP_MAX_BUF];
	uint32_t work = (uint32_t)call->work, row = vd->group_row;
	uint32_t rows = work / row, rest = work % row, groups;
	VkPipeline pipe;
	unsigned int i;
	int nacc = 0, ret;

	if (args)
		ret = gpo__vk_pipeline_ab(dev, call, &pipe);
	else
		ret = gpo__vk_pipeline(dev, call, &pipe);
	if (ret)
		return ret;
	if (op->grid == GRID_GROUPS &&
	    rows + (rest ? 1 : 0) >
	    vd->props.limits.maxComputeWorkGroupCount[1])
		return gpo__err(-ENOSYS, "%s: %s: %u workgroups are more than the device can dispatch",
				dev->info.id, op->name, work);
	for (i = 0; i < op->nbuf; i++) {
		if (op->grid == GRID_ELEMENTS && (op->buf[i].role & OP_VEC4))
			ret = bind_buf(dev, call, i, 0,
				       last_range(vd, &call->buf[i], 0, n *
						  view_esize(&call->buf[i], n,
							     es)),
				       &bi[i]);
		else
			ret = bind_buf(dev, call, i, 0, whole(&call->buf[i]),
				       &bi[i]);
		if (ret)
			return ret;
		if (bi[i].buffer == vd->dummy.buffer)
			continue;
		acc[nacc].buffer = bi[i].buffer;
		acc[nacc].lo = bi[i].offset;
		acc[nacc].hi = bi[i].offset + bi[i].range;
		acc[nacc].write = !!(op->buf[i].role & OP_W);
		nacc++;
	}
	if (args)
		bi[op->nbuf] = *args;
	for (i = 0; i <= op->nbuf; i++)
		w[i] = (VkWriteDescriptorSet) {
			.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
			.dstBinding = i < op->nbuf ? i : GPO_ARGS_BINDING,
			.descriptorCount = 1,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.pBufferInfo = &bi[i],
		};
	gpo__vk_track(vd, acc, nacc);
	if (vd->bound != pipe) {
		vkCmdBindPipeline(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				  pipe);
		vd->bound = pipe;
	}
	vd->push_desc(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, vd->pipe_layout,
		      0, op->nbuf + (args ? 1 : 0), w);
	if (!args)
		vkCmdPushConstants(vd->cmd, vd->pipe_layout,
				   VK_SHADER_STAGE_COMPUTE_BIT, 0,
				   op->args_size, call->args);
	if (op->grid == GRID_ELEMENTS) {
		groups = (uint32_t)(((n + 3) / 4 + GPO_WG_SIZE - 1) /
				    GPO_WG_SIZE);
		if (groups > vd->max_groups)
			groups = vd->max_groups;
		vkCmdDispatch(vd->cmd, groups, 1, 1);
		return 0;
	}
	dispatch_groups(vd->cmd, work, row);
	return 0;
}
