// SPDX-License-Identifier: MIT
/*
 * pipeline.c - the Vulkan backend's pipelines: one per (op, dtype), built
 * on first use from the embedded SPIR-V module "<op>.<dtype>", through
 * one pipeline cache per device that lives on disk (diskcache "vulkan").
 *
 * The cache is read from disk with the first pipeline, so a device that
 * runs nothing reads nothing, and written back at the wait() after
 * pipelines were built (once per step that built any) and at close, when
 * the driver's data differs from what is on disk. Its key covers the
 * device, the driver and every embedded module, and the data's header is
 * checked against the device before the driver sees it.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/gpuopt_i.h"
#include "core/diskcache_i.h"
#include "backend/embedded_i.h"
#include "backend/vulkan/vulkan_i.h"
#include "abi/attention.h"
#include "abi/matmul.h"

/*
 * GPUOPT_VULKAN_DEBUG=spv=DIR: a module DIR/<name>.spv, where there is
 * one, replaces the embedded "<name>" for the whole process: kernel
 * variants are timed without a rebuild (the pipeline cache's key covers
 * the embedded modules only, and the driver keys its entries by the
 * module's own bytes). A developer's knob: the files are trusted as the
 * embedded ones are, and kept until the process ends.
 */
static const struct embedded_file *spv_override(const char *name)
{
	const char *env = getenv("GPUOPT_VULKAN_DEBUG"), *d, *e;
	struct embedded_file *f;
	unsigned char *data;
	char path[4096];
	FILE *fp;
	long size;

	d = env ? strstr(env, "spv=") : NULL;
	if (!d || (d != env && d[-1] != ','))
		return NULL;
	d += 4;
	e = strchrnul(d, ',');
	if (snprintf(path, sizeof(path), "%.*s/%s.spv", (int)(e - d), d,
		     name) >= (int)sizeof(path))
		return NULL;
	fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	f = calloc(1, sizeof(*f));
	data = NULL;
	if (f && !fseek(fp, 0, SEEK_END) && (size = ftell(fp)) > 0 &&
	    !(size % 4) && !fseek(fp, 0, SEEK_SET)) {
		data = malloc(size);
		if (data && fread(data, 1, size, fp) == (size_t)size) {
			f->name = name;
			f->data = data;
			f->size = size;
			fclose(fp);
			return f;
		}
	}
	free(data);
	free(f);
	fclose(fp);
	return NULL;
}

/*
 * @ab: the variant that reads its parameters from a buffer (graph.c).
 * Every launch asks (supports(), recordable()): the answer is kept, as
 * the table never changes. Of threads that race, the first to store wins.
 */
static const struct embedded_file *spv_find(enum gpo__op_id op,
					    enum gpo_dtype dtype, int ab)
{
	static const struct embedded_file none;
	static const struct embedded_file *known[OP_COUNT][GPO_DTYPES][2];
	const struct embedded_file *f, *o, *seen = NULL;
	char name[64];

	if ((unsigned int)op >= OP_COUNT || (unsigned int)dtype >= GPO_DTYPES)
		return NULL;
	f = __atomic_load_n(&known[op][dtype][!!ab], __ATOMIC_ACQUIRE);
	if (f)
		return f == &none ? NULL : f;
	snprintf(name, sizeof(name), "%s.%s%s", gpo__ops[op].name,
		 gpo__vk_dtype_name(dtype), ab ? ".ab" : "");
	f = gpo__embedded_find(gpo__embedded_spv, name);
	o = f ? spv_override(f->name) : NULL;
	if (o)
		f = o;
	if (!__atomic_compare_exchange_n(&known[op][dtype][!!ab], &seen,
					 f ? f : &none, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		/* another thread was first: its answer, and ours goes */
		if (o) {
			free((void *)o->data);
			free((void *)o);
		}
		return seen == &none ? NULL : seen;
	}
	return f;
}

/*
 * The dtypes whose shaders need nothing beyond Vulkan 1.1. The only f16
 * and bf16 modules are the 8-bit update kernels' for half parameters,
 * which keep their half words in 32-bit ones; u8 (8-bit storage) and i64
 * (shaderInt64) wait for probe to ask the device for those features.
 */
static int dtype_usable(const struct vk_dev *vd, enum gpo_dtype dtype)
{
	return dtype == GPO_F32 || dtype == GPO_I32 || dtype == GPO_F16 ||
	       dtype == GPO_BF16;
}

int gpo__vk_supports(struct gpo_device *dev, enum gpo__op_id op,
		     enum gpo_dtype dtype)
{
	const struct embedded_file *f;

	if ((unsigned int)op >= OP_COUNT || (unsigned int)dtype >= GPO_DTYPES)
		return 0;
	if (!dtype_usable(dev->priv, dtype))
		return 0;
	/* tensor cores: where the probe found and enabled them */
	if (op == OP_MATMUL_COOP && !((struct vk_dev *)dev->priv)->coop)
		return 0;
	f = spv_find(op, dtype, 0);
	return f && f->size && !(f->size % 4);
}

static uint64_t cache_key(const struct vk_dev *vd)
{
	const VkPhysicalDeviceProperties *p = &vd->props;
	uint64_t key = gpo__diskcache_key_str(0, "gpuopt vulkan pipelines 2");
	const struct embedded_file *f;
	int push = vd->push_desc != NULL;

	key = gpo__diskcache_key(key, &p->vendorID, sizeof(p->vendorID));
	key = gpo__diskcache_key(key, &p->deviceID, sizeof(p->deviceID));
	key = gpo__diskcache_key(key, &p->driverVersion,
				 sizeof(p->driverVersion));
	key = gpo__diskcache_key(key, p->pipelineCacheUUID, VK_UUID_SIZE);
	key = gpo__diskcache_key(key, &push, sizeof(push));
	for (f = gpo__embedded_spv; f->name; f++) {
		key = gpo__diskcache_key_str(key, f->name);
		key = gpo__diskcache_key(key, f->data, f->size);
	}
	return key;
}

/*
 * Is @data a pipeline cache this device wrote? Its header is little-endian
 * whatever the host (the spec says so); gpuopt runs on little-endian hosts.
 */
static int cache_header_ok(const struct vk_dev *vd, const void *data,
			   size_t size)
{
	VkPipelineCacheHeaderVersionOne h;

	if (size < sizeof(h))
		return 0;
	memcpy(&h, data, sizeof(h));
	return h.headerSize >= sizeof(h) && h.headerSize <= size &&
	       h.headerVersion == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
	       h.vendorID == vd->props.vendorID &&
	       h.deviceID == vd->props.deviceID &&
	       !memcmp(h.pipelineCacheUUID, vd->props.pipelineCacheUUID,
		       VK_UUID_SIZE);
}

/* cache_open - the pipeline cache, from the disk entry when it is valid */
static int cache_open(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkPipelineCacheCreateInfo pcci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
	};
	void *old = NULL;
	size_t old_size = 0;
	VkResult r;

	vd->cache_key = cache_key(vd);
	vd->cache_hash = 0;
	if (!gpo__diskcache_load("vulkan", vd->cache_key, &old, &old_size) &&
	    cache_header_ok(vd, old, old_size)) {
		pcci.initialDataSize = old_size;
		pcci.pInitialData = old;
	}
	r = vkCreatePipelineCache(vd->device, &pcci, NULL, &vd->pipe_cache);
	if (r != VK_SUCCESS && pcci.initialDataSize) {
		/* a driver that refuses the data: start empty */
		pcci.initialDataSize = 0;
		pcci.pInitialData = NULL;
		r = vkCreatePipelineCache(vd->device, &pcci, NULL,
					  &vd->pipe_cache);
	}
	if (r == VK_SUCCESS && pcci.initialDataSize)
		vd->cache_hash = gpo__diskcache_key(0, old, old_size);
	free(old);
	if (r != VK_SUCCESS) {
		vd->pipe_cache = VK_NULL_HANDLE;
		return gpo__vk_fail(dev, r, "vkCreatePipelineCache");
	}
	return 0;
}

/*
 * gpo__vk_cache_save - write the pipeline cache to disk if pipelines were
 * built since the last save and what the driver has differs from what is
 * there. A failure only costs the next process the compile time.
 */
void gpo__vk_cache_save(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	void *data = NULL;
	size_t size = 0;
	uint64_t h;

	if (!vd->pipe_cache || !vd->cache_dirty)
		return;
	vd->cache_dirty = 0;
	if (vkGetPipelineCacheData(vd->device, vd->pipe_cache, &size,
				   NULL) != VK_SUCCESS || !size)
		return;
	data = malloc(size);
	if (data && vkGetPipelineCacheData(vd->device, vd->pipe_cache, &size,
					   data) == VK_SUCCESS) {
		h = gpo__diskcache_key(0, data, size);
		if (h != vd->cache_hash &&
		    !gpo__diskcache_store("vulkan", vd->cache_key, data, size))
			vd->cache_hash = h;
	}
	free(data);
}

/* is @op one of the attention kernels that stage blocks (attention.glsl)? */
static int attn_blocked(enum gpo__op_id op)
{
	return op == OP_ATTN_FWD || op == OP_ATTN_BWD_DQ ||
	       op == OP_ATTN_BWD_DKDV;
}

/*
 * narrow - does @call take its op's pipeline with specialization constant
 * 3 false? An attention kernel's for heads of 64 or fewer
 * (attention.glsl's GPO_ATTN_WIDE): its code for the columns past 64 is
 * then dead, and its registers free
 */
static int narrow(const struct op_call *call)
{
	const struct gpo_attn_args *a = call->args;

	return attn_blocked(call->op) && a && a->hd <= 64;
}

/*
 * quads - does @call take its op's pipeline with specialization constant
 * 6 true? A blockwise 8-bit update's whose every quad is whole (its n a
 * multiple of 4: update.glsl's GPO_U8_QUADS), which then has no
 * element-by-element loads and stores. Their structs start with n
 * (backend/ops.c's U8_ARGS_LAYOUT() checks)
 */
static int quads(const struct op_call *call)
{
	switch (call->op) {
	case OP_ADAM8:
	case OP_RMSPROP8:
	case OP_ADAGRAD8:
	case OP_LION8:
		return call->args && !(*(const uint32_t *)call->args % 4);
	default:
		return 0;
	}
}

/*
 * The flags a matmul_big pipeline may take as specialization constant 4
 * (matmul_big.comp's GPO_MM_FLAGS), with GPO_MM_SPEC to say it does.
 * Only products with GPO_MM_TRANS_A get such a pipeline: on an H200
 * (2026-11-29, bench/results/issue11-h200-2026-11-29.txt, calls 41-42)
 * the byte GPT's weight gradients ran 6-10 % faster so, but its products
 * without it 2-25 % slower and SGEMM 4096 3 % slower (NVIDIA's compiler
 * made worse code of their specialized modules). With the weight
 * gradients' alone the GPT's step went from 49.4-49.6 to 48.5-49.0 ms.
 */
#define MM_BIG_SPEC	(GPO_T_ACCUM | GPO_MM_TRANS_A | GPO_MM_TRANS_B | \
			 GPO_MM_VEC_A | GPO_MM_VEC_B)

/*
 * matmul_coop's flags in a whole product's constant (matmul_coop.comp);
 * the tile's shape is in every product's
 */
#define MM_COOP_SPEC	(GPO_MM_TRANS_A | GPO_MM_TRANS_B | GPO_MM_F16_A | \
			 GPO_MM_F16_B | GPO_MM_COOP_TALL)

/*
 * do an operand's chunks start on 16 bytes (matmul_coop's vec_a; C's
 * rows as f32)?
 */
static int coop_aligned(uint32_t off, uint32_t ld, uint32_t bs,
			uint32_t batch, int f16)
{
	uint32_t q = f16 ? GPO_MM_COOP_ALIGN_F16 : GPO_MM_COOP_ALIGN_F32;

	return !(off % q) && !(ld % q) && (batch < 2 || !(bs % q));
}

/* is @mm a whole product for matmul_coop (abi/matmul.h's GPO_MM_WHOLE)? */
static int coop_whole(const struct gpo_matmul_args *mm)
{
	return !(mm->flags & GPO_T_ACCUM) && mm->k &&
	       !(mm->m % GPO_MM_COOP_TILE_M(mm->flags)) &&
	       !(mm->n % GPO_MM_COOP_TILE_N(mm->flags)) &&
	       !(mm->k % GPO_MM_COOP_WHOLE_K(mm->flags)) &&
	       coop_aligned(mm->off_a, mm->lda, mm->bsa, mm->batch,
			    !!(mm->flags & GPO_MM_F16_A)) &&
	       coop_aligned(mm->off_b, mm->ldb, mm->bsb, mm->batch,
			    !!(mm->flags & GPO_MM_F16_B)) &&
	       coop_aligned(mm->off_c, mm->ldc, mm->bsc, mm->batch, 0);
}

/* the flags @call's pipeline is specialized for (GPO_MM_SPEC), or 0 */
static uint32_t mm_spec(const struct op_call *call)
{
	const struct gpo_matmul_args *mm = call->args;

	if (!mm)
		return 0;
	if (call->op == OP_MATMUL_COOP)
		return GPO_MM_SPEC | (coop_whole(mm) ? GPO_MM_WHOLE |
				      (mm->flags & MM_COOP_SPEC) :
				      mm->flags & GPO_MM_COOP_TALL);
	if (call->op != OP_MATMUL_BIG || !(mm->flags & GPO_MM_TRANS_A))
		return 0;
	return GPO_MM_SPEC | (mm->flags & MM_BIG_SPEC);
}

/*
 * gpo__vk_pipeline_key - which of its op's pipelines @call takes, from
 * its parameters: the specialization constants that depend on them
 * (mm_spec(), narrow(), quads()) in one word. A recorded step is replayed
 * only while every launch's key is the one recorded (graph.c), so that
 * new parameters never run in a pipeline specialized for others.
 */
uint32_t gpo__vk_pipeline_key(const struct op_call *call)
{
	return mm_spec(call) | (uint32_t)narrow(call) << 28 |
	       (uint32_t)quads(call) << 29;
}

/*
 * a specialized pipeline's slot: vd->mm_coop's for @op matmul_coop (a
 * whole product's 16 sets of flags, then the rest, in each shape), else
 * vd->mm_big's
 */
_Static_assert(VK_MM_COOP_VARIANTS == 2 * 16 + 2,
	       "matmul_coop: 16 sets of whole flags and a general one, twice");

static VkPipeline *mm_slot(struct vk_dev *vd, enum gpo__op_id op,
			   uint32_t spec, int ab)
{
	int tall = !!(spec & GPO_MM_COOP_TALL);

	if (op == OP_MATMUL_COOP && !(spec & GPO_MM_WHOLE))
		return &vd->mm_coop[!!ab][32 + tall];
	if (op == OP_MATMUL_COOP)
		return &vd->mm_coop[!!ab][(!!(spec & GPO_MM_TRANS_A)) |
					  (!!(spec & GPO_MM_TRANS_B)) << 1 |
					  (!!(spec & GPO_MM_F16_A)) << 2 |
					  (!!(spec & GPO_MM_F16_B)) << 3 |
					  tall << 4];
	return &vd->mm_big[!!ab][(!!(spec & GPO_T_ACCUM)) |
				 (!!(spec & GPO_MM_TRANS_B)) << 1 |
				 (!!(spec & GPO_MM_VEC_A)) << 2 |
				 (!!(spec & GPO_MM_VEC_B)) << 3];
}

/*
 * pipeline - the pipeline of @call's op in its dtype (its ".ab" variant
 * if @ab), built on its first use. Called under vd->lock. Group ops get
 * the device's grid row width as specialization constant 0 and may be
 * dispatched with a base (launch.c); element ops ignore both. Constant 1
 * is precision.glsl's PREC_FMA (device.c's fma_fused()), 2 update.glsl's
 * GPO_U8_SG (device.c's u8_subgroups()), 3 attention.glsl's
 * GPO_ATTN_WIDE (false where narrow()), 4 matmul_big's and matmul_coop's
 * flags where mm_spec() gives them (a pipeline for each set: its loads
 * and stores are then the driver's constants, not branches on its
 * arguments; matmul_coop's always has at least its tile's shape), 5
 * attention.glsl's GPO_ATTN_KS (device.c's attn_ks() where narrow(),
 * else the smaller step: with heads past 64 the larger took an
 * H200's attention backward from 0.65 to 2.3 ms), 6 update.glsl's
 * GPO_U8_QUADS (quads()), for every module (one that does not declare
 * them ignores them). An op's pipes[][][1] is its narrow() or quads()
 * one (no op has both).
 */
static int pipeline(struct gpo_device *dev, const struct op_call *call,
		    int ab, VkPipeline *out)
{
	struct vk_dev *vd = dev->priv;
	enum gpo__op_id op = call->op;
	enum gpo_dtype dtype = call->dtype;
	const struct gpo__op *o = &gpo__ops[op];
	uint32_t mm = mm_spec(call);
	int nar = narrow(call), q = quads(call);
	const struct embedded_file *f;
	VkShaderModuleCreateInfo smci = {
		.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
	};
	const struct {
		uint32_t group_row;
		VkBool32 fma;
		VkBool32 u8_sg;
		VkBool32 wide;
		uint32_t mm_flags;
		uint32_t attn_ks;
		VkBool32 quads;
	} data = { vd->group_row, vd->fma, vd->u8_sg, !nar, mm,
		   nar && vd->attn_ks ? vd->attn_ks : GPO_ATTN_KS_SMALL, q };
	const VkSpecializationMapEntry map[7] = {
		{
			.constantID = 0,
			.offset = offsetof(__typeof__(data), group_row),
			.size = sizeof(data.group_row),
		}, {
			.constantID = 1,
			.offset = offsetof(__typeof__(data), fma),
			.size = sizeof(data.fma),
		}, {
			.constantID = 2,
			.offset = offsetof(__typeof__(data), u8_sg),
			.size = sizeof(data.u8_sg),
		}, {
			.constantID = 3,
			.offset = offsetof(__typeof__(data), wide),
			.size = sizeof(data.wide),
		}, {
			.constantID = 4,
			.offset = offsetof(__typeof__(data), mm_flags),
			.size = sizeof(data.mm_flags),
		}, {
			.constantID = 5,
			.offset = offsetof(__typeof__(data), attn_ks),
			.size = sizeof(data.attn_ks),
		}, {
			.constantID = 6,
			.offset = offsetof(__typeof__(data), quads),
			.size = sizeof(data.quads),
		},
	};
	/*
	 * constant 7 is matmul_coop's GPO_FRAG_KB, left at its 16: never
	 * set it (coopkhr.c needs B's fragments to be a type of their own)
	 */
	const VkSpecializationInfo spec = {
		.mapEntryCount = 7,
		.pMapEntries = map,
		.dataSize = sizeof(data),
		.pData = &data,
	};
	VkComputePipelineCreateInfo ci = {
		.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
		.flags = o->grid == GRID_GROUPS ?
			 VK_PIPELINE_CREATE_DISPATCH_BASE_BIT : 0,
		.stage = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
			.stage = VK_SHADER_STAGE_COMPUTE_BIT,
			.pName = "main",
			.pSpecializationInfo = &spec,
		},
		.layout = vd->pipe_layout,
	};
	VkPipeline pipe, *slot;
	uint32_t *khr = NULL;
	size_t nw;
	VkResult r;
	int ret;

	if (attn_blocked(op) && !vd->attn_ks)
		return gpo__err(-ENODEV, "%s (%s): %s needs %d bytes of shared memory, the device has %u",
				dev->info.id, dev->info.name, o->name,
				GPO_ATTN_LOCAL(GPO_ATTN_KS_SMALL),
				vd->shared_max);
	if (mm)
		slot = mm_slot(vd, op, mm, ab);
	else
		slot = ab ? &vd->pipes_ab[op][dtype][nar || q] :
			    &vd->pipes[op][dtype][nar || q];
	if (*slot) {
		*out = *slot;
		return 0;
	}
	f = spv_find(op, dtype, ab);
	if (!f || !f->size || f->size % 4)
		return gpo__err(-ENOSYS, "%s: no SPIR-V for %s.%s%s",
				dev->info.id, o->name,
				gpo__vk_dtype_name(dtype), ab ? ".ab" : "");
	if (!vd->pipe_cache) {
		ret = cache_open(dev);
		if (ret)
			return ret;
	}
	smci.codeSize = f->size;
	smci.pCode = (const uint32_t *)f->data;
	if (op == OP_MATMUL_COOP && vd->coop == VK_COOP_KHR) {
		ret = gpo__spv_coop_khr(smci.pCode, f->size / 4, &khr, &nw);
		if (ret)
			return gpo__err(ret, "%s: %s.%s%s: no KHR cooperative matrix form of its module",
					dev->info.id, o->name,
					gpo__vk_dtype_name(dtype),
					ab ? ".ab" : "");
		smci.codeSize = nw * 4;
		smci.pCode = khr;
	}
	r = vkCreateShaderModule(vd->device, &smci, NULL, &ci.stage.module);
	free(khr);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateShaderModule");
	r = vkCreateComputePipelines(vd->device, vd->pipe_cache, 1, &ci, NULL,
				     &pipe);
	vkDestroyShaderModule(vd->device, ci.stage.module, NULL);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateComputePipelines");
	*slot = pipe;
	vd->cache_dirty = 1;
	*out = pipe;
	return 0;
}

int gpo__vk_pipeline(struct gpo_device *dev, const struct op_call *call,
		     VkPipeline *out)
{
	return pipeline(dev, call, 0, out);
}

int gpo__vk_pipeline_ab(struct gpo_device *dev, const struct op_call *call,
			VkPipeline *out)
{
	return pipeline(dev, call, 1, out);
}

/* has @op in @dtype an ".ab" variant? (without building it) */
int gpo__vk_has_ab(enum gpo__op_id op, enum gpo_dtype dtype)
{
	const struct embedded_file *f = spv_find(op, dtype, 1);

	return f && f->size && !(f->size % 4);
}

/* Save the cache, then destroy every pipeline and the cache. */
void gpo__vk_destroy_pipelines(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int op, t, nar, v;

	gpo__vk_cache_save(dev);
	for (t = 0; t < 2; t++)
		for (v = 0; v < VK_MM_BIG_VARIANTS; v++)
			if (vd->mm_big[t][v])
				vkDestroyPipeline(vd->device, vd->mm_big[t][v],
						  NULL);
	for (t = 0; t < 2; t++)
		for (v = 0; v < VK_MM_COOP_VARIANTS; v++)
			if (vd->mm_coop[t][v])
				vkDestroyPipeline(vd->device,
						  vd->mm_coop[t][v], NULL);
	for (op = 0; op < OP_COUNT; op++)
		for (t = 0; t < GPO_DTYPES; t++)
			for (nar = 0; nar < 2; nar++) {
				if (vd->pipes[op][t][nar])
					vkDestroyPipeline(vd->device,
						vd->pipes[op][t][nar], NULL);
				if (vd->pipes_ab[op][t][nar])
					vkDestroyPipeline(vd->device,
						vd->pipes_ab[op][t][nar], NULL);
			}
	if (vd->pipe_cache)
		vkDestroyPipelineCache(vd->device, vd->pipe_cache, NULL);
}
