/* SPDX-License-Identifier: MIT */
/*
 * vulkan_i.h - the Vulkan backend's private state and what its files
 * share:
 *
 *   device.c      errors, the instance, probe, open and close, the ops table
 *   memory.c      memory types, pool blocks, staging, transfers, budget
 *   submit.c      the batch: access tracking and barriers, submission,
 *                 fences, timestamps, wait
 *   descriptor.c  the set and pipeline layouts, push descriptors and the
 *                 descriptor-set cache
 *   pipeline.c    shader modules, pipelines on first use, the pipeline
 *                 cache on disk, supports()
 *   launch.c      an op's bindings, windows and grid: launch()
 *   graph.c       recorded steps: launches collected, recorded once into
 *                 a command buffer and replayed (graph_begin/end)
 *   interop.c     adopting the caller's VkDevice, importing its VkBuffers
 *                 and external-memory fds
 *
 * Everything below is under vd->lock once the device is open, except what
 * probe sets.
 */
#ifndef GPUOPT_VULKAN_I_H
#define GPUOPT_VULKAN_I_H

#include <pthread.h>
#include <stdint.h>
#include <vulkan/vulkan.h>
#include "backend/backend_i.h"

#define VK_DUMMY_BYTES		256

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
	int imported;			/* the caller's memory (interop.c) */
};

/* A range a command of the open batch reads or writes. */
struct vk_access {
	VkBuffer buffer;
	uint64_t lo, hi;
	int write;
};

#define VK_MAX_ACCESS	64

/*
 * Command buffers in turn (submit.c): an asynchronous submit leaves its
 * batch running and records the next one into the following buffer; a
 * buffer is waited for only when its turn comes again or at wait().
 */
#define VK_SLOTS	4

/*
 * A slot of the staging buffer for transfers of many chunks (memory.c):
 * its own command buffer and fence, so that the host copies one chunk
 * while the device copies others.
 */
#define VK_XFER_SLOTS	4

struct vk_slot {
	VkCommandBuffer cmd;
	VkFence fence;
	int busy;			/* submitted, fence not yet waited */
};

/* The descriptor-set cache, without VK_KHR_push_descriptor. */
struct vk_desc_key {
	VkBuffer buffer[OP_MAX_BUF];
	VkDeviceSize off[OP_MAX_BUF];
	VkDeviceSize range[OP_MAX_BUF];
};

struct vk_desc_entry {
	struct vk_desc_key key;
	VkDescriptorSet set;		/* VK_NULL_HANDLE: slot free */
};

#define VK_DESC_CACHE	256	/* sets; the table has twice the slots */

/*
 * matmul_coop's cooperative matrices: none, VK_NV_cooperative_matrix
 * (the modules as glslc builds them), or VK_KHR_cooperative_matrix (the
 * same modules rewritten by coopkhr.c), which the device prefers
 */
enum { VK_COOP_NONE, VK_COOP_NV, VK_COOP_KHR };

/* GPUOPT_VULKAN_DEBUG, parsed at open (device.c says what each does) */
struct vk_debug {
	int nopush;
	int nomap;
	uint64_t staging;
	uint64_t range;
	uint64_t groups;
	int64_t spin_us;
	int nograph;
	uint64_t maplimit;	/* mapped pool bytes beyond it refused */
	int nofma;		/* PREC_FMA off where the device has it */
	uint32_t shared;	/* less shared memory than the limit, bytes */
	int coop_nv;		/* matmul_coop by NV matrices where KHR ones
				 * would do */
	/* spv=DIR: read by pipeline.c's spv_find(), for the whole process */
};

/* matmul_big's pipelines: one for each set of its flags (pipeline.c) */
#define VK_MM_BIG_VARIANTS	16
/*
 * matmul_coop's: one for each set of a whole product's flags, and one
 * for the rest, in each of the tile's two shapes
 */
#define VK_MM_COOP_VARIANTS	34

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
	int has_ext_fd;			/* VK_KHR_external_memory_fd */
	int coop;			/* matmul_coop's VK_COOP_*: the kind
					 * probe prefers, then the one
					 * create_device() enabled */
	int coop_kinds;			/* 1 << VK_COOP_* the device has */
	int fma_fused;			/* fma() rounds once (describe) */
	VkBool32 u8_sg;			/* spec constant 2: GPO_U8_SG */
	/*
	 * adopted (gpo_device_adopt_vulkan): open uses the caller's device
	 * and queue, close leaves them; a batch starts and ends with a full
	 * barrier, ordering it after and before the caller's own work
	 */
	int adopted;
	VkDevice adopted_device;
	VkQueue adopted_queue;
	pthread_mutex_t lock;		/* the batch and pipelines, against free() */

	/* from open, on: all zero while closed */
	int opened;
	VkDevice device;
	VkQueue queue;
	int ext_fd;			/* VK_KHR_external_memory_fd enabled */
	VkBuffer *fd_bufs;		/* over memory imported from fds */
	uint32_t n_fd_bufs;
	VkCommandPool cmd_pool;
	VkCommandBuffer cmd;		/* the open batch's: cmds[cur] */
	VkCommandBuffer cmds[VK_SLOTS];
	VkFence fences[VK_SLOTS];
	int busy[VK_SLOTS];		/* submitted, not yet waited for */
	int timed[VK_SLOTS];		/* ... with its two timestamps */
	int used[VK_SLOTS];		/* ... with cmds[s] in it */
	uint64_t seq[VK_SLOTS];		/* submission order of busy slots */
	uint64_t nsubmit;
	int cur;
	/* a slot that ran a recorded step: whose timestamps to read */
	struct dev_graph *slot_graph[VK_SLOTS];
	int slot_copy[VK_SLOTS];
	VkQueryPool query_pool;		/* 2 timestamps a slot */
	VkDescriptorSetLayout set_layout;
	VkPipelineLayout pipe_layout;
	PFN_vkCmdPushDescriptorSetKHR push_desc;	/* NULL: set cache */
	VkDescriptorPool desc_pool;
	struct vk_desc_entry *desc_tab;	/* 2 * VK_DESC_CACHE slots */
	uint32_t desc_used;

	/* pipelines, built on first use (pipeline.c) */
	/*
	 * [1]: an attention kernel's with specialization constant 3 false
	 * (pipeline.c's narrow()), an 8-bit update's with 6 true (quads())
	 */
	VkPipeline pipes[OP_COUNT][GPO_DTYPES][2];
	VkPipeline pipes_ab[OP_COUNT][GPO_DTYPES][2];	/* ".ab": graph.c */
	/* matmul_big's specialized ones, [ab][flags] (pipeline.c) */
	VkPipeline mm_big[2][VK_MM_BIG_VARIANTS];
	/* matmul_coop's, [ab][shape, whole and flags] */
	VkPipeline mm_coop[2][VK_MM_COOP_VARIANTS];
	VkPipelineCache pipe_cache;	/* made with the first pipeline */
	uint64_t cache_key;		/* its disk-cache entry */
	uint64_t cache_hash;		/* of the data on disk, 0: none */
	int cache_dirty;		/* pipelines built since the last save */

	uint32_t pool_type;		/* memory type of pool blocks */
	int pool_mapped;		/* blocks are mapped (ReBAR, UMA) */
	int direct_read;		/* ... and host-cached: read them */
	uint32_t plain_type;		/* device-local, for unmapped blocks */
	uint64_t mapped_bytes;		/* of pool blocks, now */
	uint64_t maplimit;		/* debug: more mapped is refused */
	uint32_t staging_type;
	struct dev_mem dummy;		/* bound for absent buffers */
	struct dev_mem staging;		/* uploads and readbacks */
	uint64_t staging_want;		/* the bytes staging gets when made */
	uint64_t staging_size;
	struct vk_slot slot[VK_XFER_SLOTS];	/* staging in slots */
	uint64_t slot_size;		/* staging_size / VK_XFER_SLOTS */

	uint64_t max_range;		/* bytes one descriptor may span */
	uint32_t max_groups;		/* element ops' dispatch cap */
	uint32_t group_row;		/* group ops' groups a grid row */
	VkBool32 fma;			/* spec constant 1: PREC_FMA (open) */
	uint32_t shared_max;		/* compute shared memory, bytes (open:
					 * the limit, or debug shared=) */
	uint32_t attn_ks;		/* attention's step that fits (0: none) */
	uint64_t spin_ns;		/* poll the fence this long first */
	uint64_t last_batch_ns;		/* device time of the last batch */
	int lost;
	int nograph;			/* GPUOPT_VULKAN_DEBUG=nograph */

	/* recorded steps (graph.c) */
	struct dev_graph *collect;	/* launches go here, not to the batch */
	uint64_t free_gen;		/* buffers freed (recordings name them) */

	/* the open batch */
	int recording;
	int ts_started;
	VkPipeline bound;
	uint64_t staging_pos;
	struct vk_access acc[VK_MAX_ACCESS];
	int nacc;
	uint64_t ns;			/* device time since last wait */
};

/* "f32", "i32", ...: the suffix of an op's SPIR-V name ("copy.i32") */
static inline const char *gpo__vk_dtype_name(enum gpo_dtype t)
{
	static const char *const names[GPO_DTYPES] = {
		[GPO_F32] = "f32", [GPO_F16] = "f16", [GPO_BF16] = "bf16",
		[GPO_U8] = "u8", [GPO_I32] = "i32", [GPO_I64] = "i64",
	};

	return (unsigned int)t < GPO_DTYPES ? names[t] : "?";
}

static inline unsigned int gpo__vk_dtype_size(enum gpo_dtype t)
{
	static const unsigned char size[GPO_DTYPES] = {
		[GPO_F32] = 4, [GPO_F16] = 2, [GPO_BF16] = 2,
		[GPO_U8] = 1, [GPO_I32] = 4, [GPO_I64] = 8,
	};

	return (unsigned int)t < GPO_DTYPES ? size[t] : 0;
}

/* device.c */
const char *gpo__vk_result_name(VkResult r);
int gpo__vk_errno(VkResult r);
int gpo__vk_fail(struct gpo_device *dev, VkResult r, const char *what);
int gpo__vk_lost(struct gpo_device *dev);

/* memory.c */
int gpo__vk_main_heap(const VkPhysicalDeviceMemoryProperties *mp);
int gpo__vk_create_buffers(struct gpo_device *dev,
			   const struct vk_debug *dbg);
void gpo__vk_destroy_buffers(struct vk_dev *vd);
int gpo__vk_mem_mapped(struct gpo_device *dev, uint64_t bytes, int local,
		       struct dev_mem *out);
void gpo__vk_mem_unmapped(struct vk_dev *vd, struct dev_mem *mem);
int gpo__vk_alloc(struct gpo_device *dev, uint64_t bytes,
		  struct dev_mem **out);
void gpo__vk_free(struct gpo_device *dev, struct dev_mem *mem);
void gpo__vk_forget(struct gpo_device *dev);
int gpo__vk_write(struct gpo_device *dev, const struct dev_buf *dst,
		  uint64_t off, const void *src, uint64_t bytes);
int gpo__vk_read(struct gpo_device *dev, const struct dev_buf *src,
		 uint64_t off, void *dst, uint64_t bytes);
uint64_t gpo__vk_mem_free(struct gpo_device *dev);
int gpo__vk_host_alloc(struct gpo_device *dev, struct host_mem *hm);
void gpo__vk_host_free(struct gpo_device *dev, struct host_mem *hm);

/* submit.c */
int gpo__vk_create_commands(struct gpo_device *dev);
void gpo__vk_destroy_commands(struct vk_dev *vd);
int gpo__vk_batch_begin(struct gpo_device *dev);
void gpo__vk_track(struct vk_dev *vd, const struct vk_access *acc, int n);
void gpo__vk_timestamp_start(struct vk_dev *vd);
int gpo__vk_batch_flush(struct gpo_device *dev);
int gpo__vk_submit(struct gpo_device *dev);
int gpo__vk_retire(struct gpo_device *dev, int s);
int gpo__vk_submit_graph(struct gpo_device *dev, VkCommandBuffer cmd,
			 struct dev_graph *g, int copy, int *slot);
void gpo__vk_barrier_all(VkCommandBuffer cmd);
int gpo__vk_record_copy(struct gpo_device *dev, VkBuffer src, uint64_t soff,
			VkBuffer dst, uint64_t doff, uint64_t bytes);
int gpo__vk_wait(struct gpo_device *dev, uint64_t *device_ns);

/* descriptor.c */
int gpo__vk_create_layout(struct gpo_device *dev);
void gpo__vk_destroy_layout(struct vk_dev *vd);
int gpo__vk_desc_set(struct gpo_device *dev, const VkDescriptorBufferInfo *bi,
		     uint32_t nbuf, VkDescriptorSet *out);
void gpo__vk_desc_bind(struct vk_dev *vd, const VkDescriptorBufferInfo *bi,
		       uint32_t nbuf, VkDescriptorSet set);
void gpo__vk_desc_cache_clear(struct vk_dev *vd);

/* coopkhr.c */
int gpo__spv_coop_khr(const uint32_t *in, size_t n, uint32_t **out,
		      size_t *out_n);

/* pipeline.c */
int gpo__vk_pipeline(struct gpo_device *dev, const struct op_call *call,
		     VkPipeline *out);
int gpo__vk_pipeline_ab(struct gpo_device *dev, const struct op_call *call,
			VkPipeline *out);
int gpo__vk_has_ab(enum gpo__op_id op, enum gpo_dtype dtype);
uint32_t gpo__vk_pipeline_key(const struct op_call *call);
void gpo__vk_cache_save(struct gpo_device *dev);
void gpo__vk_destroy_pipelines(struct gpo_device *dev);
int gpo__vk_supports(struct gpo_device *dev, enum gpo__op_id op,
		     enum gpo_dtype dtype);

/* launch.c */
int gpo__vk_launch(struct gpo_device *dev, const struct op_call *call);
int gpo__vk_launch_locked(struct gpo_device *dev, const struct op_call *call);
int gpo__vk_recordable(struct gpo_device *dev, const struct op_call *call);
int gpo__vk_record_ab(struct gpo_device *dev, const struct op_call *call,
		      const VkDescriptorBufferInfo *args);

/* graph.c */
int gpo__vk_graph_begin(struct gpo_device *dev, struct dev_graph **g);
int gpo__vk_graph_end(struct gpo_device *dev, struct dev_graph *g,
		      int abort, const struct dev_buf *rb, unsigned int nrb,
		      const void **host);
void gpo__vk_graph_free(struct gpo_device *dev, struct dev_graph *g);
int gpo__vk_graph_add(struct gpo_device *dev, const struct op_call *call);
uint64_t gpo__vk_graph_ns(struct vk_dev *vd, struct dev_graph *g, int copy);

/* interop.c */
void gpo__vk_interop_begin(struct vk_dev *vd, VkCommandBuffer cmd);
void gpo__vk_interop_end(struct vk_dev *vd, VkCommandBuffer cmd);
int gpo__vk_import(struct gpo_device *dev, const struct gpo_extbuf *eb,
		   struct dev_mem **out);
void gpo__vk_release(struct gpo_device *dev, struct dev_mem *mem);
int gpo__vk_interop_write(struct gpo_device *dev, const struct dev_buf *dst,
			  uint64_t off, const void *src, uint64_t bytes);

#endif /* GPUOPT_VULKAN_I_H */
