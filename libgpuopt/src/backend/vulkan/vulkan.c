// SPDX-License-Identifier: MIT
/*
 * backend_vulkan.c - the Vulkan backend
 *
 * One instance per context (API 1.1), shared by every physical device with
 * a compute queue. A device gets one queue, one command buffer, one fence
 * and one two-entry timestamp query pool, all reused: launches, uploads
 * and readbacks are recorded into the command buffer (the "batch") and
 * submitted together at wait() or read(), so a step is one submission and
 * one fence wait. Dispatches that touch overlapping ranges, one of them
 * writing, are separated by a compute/transfer memory barrier.
 *
 * Kernels are the SPIR-V modules embedded at build time (kernels/vulkan/),
 * one pipeline each, all sharing one pipeline layout: one descriptor set
 * of 8 storage buffers (binding i = args.buf[i]) and 64 bytes of push
 * constants (the scalar tail of struct kernel_args). Descriptors are
 * pushed (VK_KHR_push_descriptor); without that extension, sets come from
 * a cache keyed by the bound ranges. Either way a step allocates nothing.
 *
 * Memory: every pool block is one VkBuffer over one allocation. Where the
 * whole device-local heap is host-visible (resizable BAR, or a unified
 * memory device), blocks are mapped and written directly; reads go
 * through a host-cached staging buffer unless the blocks themselves are
 * host-cached. The staging buffer doubles as the ring for uploads on
 * devices without a mappable heap.
 *
 * The pipeline cache lives on disk (diskcache "vulkan"), keyed by the
 * device, the driver and the SPIR-V, and is checked against the device
 * before use.
 *
 * GPUOPT_VULKAN_DEBUG (comma list) forces the paths that the machine at
 * hand would not take, for tests and measurements: nopush (descriptor-set
 * cache), nomap (staging for every transfer), staging=BYTES, range=BYTES
 * (a smaller maxStorageBufferRange), groups=N (element kernels' dispatch
 * cap, and the group kernels' first grid dimension), spin=US (fence
 * polling before a blocking wait).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/gpuopt_i.h"
#include "core/diskcache_i.h"
#include "backend/embedded_i.h"
#include "backend/vulkan/vulkan_i.h"

#define STAGING_BYTES		(32ull << 20)
#define DUMMY_BYTES		256
/*
 * Element kernels run a grid-stride loop; more groups than this only
 * add scheduling work once every float4 has an invocation per pass.
 */
#define ELEM_MAX_GROUPS		65535u
#define GROUP_DIM_MAX		65535u
#define PUSH_BYTES		64
/*
 * Poll a batch's fence this long before blocking: a blocking wait wakes
 * 30-60 us after a short batch ends (H100, driver 580), which doubled a
 * 2000 x 4096 AdamW step (82 us of kernel). Not on CPU implementations,
 * whose worker threads the polling would take a core from.
 */
#define SPIN_NS			200000

_Static_assert(sizeof(struct kernel_args) -
	       offsetof(struct kernel_args, n) == PUSH_BYTES,
	       "push constants are the scalar tail of kernel_args");

/* Per kernel: buffers indexed by element (windowed), buffers written. */
struct vk_kinfo {
	uint8_t elem;
	uint8_t writes;
};

static const struct vk_kinfo kinfo[K_COUNT] = {
	[K_COPY]	   = { 0x03, 0x01 },
	[K_FILL]	   = { 0x01, 0x01 },
	[K_NORM_PARTIAL]   = { 0x01, 0x02 },
	[K_NORM_FINAL]	   = { 0x00, 0x02 },
	[K_SGD]		   = { 0x07, 0x05 },
	[K_ADAM]	   = { 0x1f, 0x1d },
	[K_RMSPROP]	   = { 0x1f, 0x1d },
	[K_ADAGRAD]	   = { 0x07, 0x05 },
	[K_LION]	   = { 0x07, 0x05 },
	[K_LAMB_PREP]	   = { 0x00, 0x2c },
	[K_LAMB_TRUST]	   = { 0x00, 0x04 },
	[K_LAMB_APPLY]	   = { 0x00, 0x01 },
	[K_OBJ_QUADRATIC]  = { 0x00, 0x06 },
	[K_OBJ_ROSENBROCK] = { 0x00, 0x06 },
};

/* ---- errors -------------------------------------------------------------- */

static const char *vk_result_name(VkResult r)
{
	static __thread char buf[32];

	switch (r) {
#define VKR(x) case x: return #x
	VKR(VK_SUCCESS);
	VKR(VK_NOT_READY);
	VKR(VK_TIMEOUT);
	VKR(VK_INCOMPLETE);
	VKR(VK_ERROR_OUT_OF_HOST_MEMORY);
	VKR(VK_ERROR_OUT_OF_DEVICE_MEMORY);
	VKR(VK_ERROR_INITIALIZATION_FAILED);
	VKR(VK_ERROR_DEVICE_LOST);
	VKR(VK_ERROR_MEMORY_MAP_FAILED);
	VKR(VK_ERROR_LAYER_NOT_PRESENT);
	VKR(VK_ERROR_EXTENSION_NOT_PRESENT);
	VKR(VK_ERROR_FEATURE_NOT_PRESENT);
	VKR(VK_ERROR_INCOMPATIBLE_DRIVER);
	VKR(VK_ERROR_TOO_MANY_OBJECTS);
	VKR(VK_ERROR_FORMAT_NOT_SUPPORTED);
	VKR(VK_ERROR_FRAGMENTED_POOL);
	VKR(VK_ERROR_UNKNOWN);
	VKR(VK_ERROR_OUT_OF_POOL_MEMORY);
	VKR(VK_ERROR_INVALID_EXTERNAL_HANDLE);
	VKR(VK_ERROR_FRAGMENTATION);
	VKR(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS);
	VKR(VK_PIPELINE_COMPILE_REQUIRED);
#undef VKR
	default:
		snprintf(buf, sizeof(buf), "VkResult %d", (int)r);
		return buf;
	}
}

static int vk_errno(VkResult r)
{
	switch (r) {
	case VK_ERROR_OUT_OF_HOST_MEMORY:
	case VK_ERROR_OUT_OF_DEVICE_MEMORY:
	case VK_ERROR_OUT_OF_POOL_MEMORY:
	case VK_ERROR_FRAGMENTED_POOL:
	case VK_ERROR_FRAGMENTATION:
		return -ENOMEM;
	case VK_ERROR_DEVICE_LOST:
		return -ENODEV;
	default:
		return -EIO;
	}
}

/* vk_fail - turn a failed call into -errno and a message naming the device */
static int vk_fail(struct gpo_device *dev, VkResult r, const char *what)
{
	struct vk_dev *vd = dev->priv;
	int err = vk_errno(r);

	if (err == -ENODEV)
		vd->lost = 1;
	return gpo__err(err, "%s (%s): %s: %s", dev->info.id, dev->info.name,
		       what, vk_result_name(r));
}

static int vk_lost(struct gpo_device *dev)
{
	return gpo__err(-ENODEV, "%s (%s): the device was lost", dev->info.id,
		       dev->info.name);
}

/* ---- the instance -------------------------------------------------------- */

static void inst_put(struct vk_inst *inst)
{
	if (!inst || --inst->refs > 0)
		return;
	vkDestroyInstance(inst->instance, NULL);
	free(inst);
}

/* ---- probe --------------------------------------------------------------- */

static int has_ext(const VkExtensionProperties *ext, uint32_t n,
		   const char *name)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(ext[i].extensionName, name))
			return 1;
	return 0;
}

static void vendor_name(uint32_t id, char *buf, size_t len)
{
	switch (id) {
	case 0x10de:
		snprintf(buf, len, "NVIDIA");
		break;
	case 0x1002:
		snprintf(buf, len, "AMD");
		break;
	case 0x8086:
		snprintf(buf, len, "Intel");
		break;
	case VK_VENDOR_ID_MESA:
		snprintf(buf, len, "Mesa");
		break;
	default:
		snprintf(buf, len, "0x%x", id);
		break;
	}
}

static void driver_version(const VkPhysicalDeviceProperties *p,
			   const char *info, char *buf, size_t len)
{
	uint32_t v = p->driverVersion;

	/* driverInfo says it in the driver's own words ("Mesa 23.1.2") */
	if (info && *info)
		snprintf(buf, len, "%.63s", info);
	else if (p->vendorID == 0x10de)	/* NVIDIA packs 10.8.8.6 bits */
		snprintf(buf, len, "%u.%u.%u.%u", v >> 22, (v >> 14) & 0xff,
			 (v >> 6) & 0xff, v & 0x3f);
	else
		snprintf(buf, len, "%u.%u.%u", VK_API_VERSION_MAJOR(v),
			 VK_API_VERSION_MINOR(v), VK_API_VERSION_PATCH(v));
}

static enum gpo_device_type device_type(VkPhysicalDeviceType t)
{
	switch (t) {
	case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
		return GPO_DEVICE_DISCRETE_GPU;
	case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
		return GPO_DEVICE_INTEGRATED_GPU;
	case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
		return GPO_DEVICE_VIRTUAL_GPU;
	case VK_PHYSICAL_DEVICE_TYPE_CPU:
		return GPO_DEVICE_CPU_IMPL;
	default:
		return GPO_DEVICE_OTHER;
	}
}

/* The largest DEVICE_LOCAL heap: the device's memory. */
static int main_heap(const VkPhysicalDeviceMemoryProperties *mp)
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

/*
 * probe_one - describe physical device @phys and register it
 * Returns 0, or -errno with a message (the caller logs and skips it).
 */
static int probe_one(struct gpo_ctx *ctx, struct vk_inst *inst,
		     VkPhysicalDevice phys, uint32_t index)
{
	VkPhysicalDeviceIDProperties idp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
	};
	VkPhysicalDeviceMaintenance3Properties m3 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES,
	};
	VkPhysicalDeviceDriverProperties drv = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
	};
	VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV,
	};
	VkPhysicalDeviceShaderCorePropertiesAMD amd = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD,
	};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
	};
	VkQueueFamilyProperties *qf = NULL;
	VkExtensionProperties *ext = NULL;
	struct gpo_device_info info;
	uint32_t next = 0, nq = 0, i;
	int has_drv, has_sm, has_amd, heap, ret;
	struct vk_dev *vd;
	VkResult r;

	vkGetPhysicalDeviceProperties(phys, &p2.properties);
	if (p2.properties.apiVersion < VK_API_VERSION_1_1)
		return gpo__err(-ENODEV, "vulkan device %u (%.100s): Vulkan %u.%u, 1.1 needed",
			       index, p2.properties.deviceName,
			       VK_API_VERSION_MAJOR(p2.properties.apiVersion),
			       VK_API_VERSION_MINOR(p2.properties.apiVersion));

	r = vkEnumerateDeviceExtensionProperties(phys, NULL, &next, NULL);
	if (r == VK_SUCCESS && next) {
		ext = calloc(next, sizeof(*ext));
		if (!ext)
			return gpo__err(-ENOMEM, "out of memory");
		r = vkEnumerateDeviceExtensionProperties(phys, NULL, &next,
							 ext);
	}
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		ret = gpo__err(vk_errno(r), "vulkan device %u (%.100s): vkEnumerateDeviceExtensionProperties: %s",
			      index, p2.properties.deviceName,
			      vk_result_name(r));
		goto out_free;
	}

	/* chain what this device can tell */
	p2.pNext = &idp;
	idp.pNext = &m3;
	has_drv = p2.properties.apiVersion >= VK_API_VERSION_1_2 ||
		  has_ext(ext, next, VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
	has_sm = has_ext(ext, next, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
	has_amd = has_ext(ext, next,
			  VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
	if (has_drv) {
		drv.pNext = m3.pNext;
		m3.pNext = &drv;
	}
	if (has_sm) {
		sm.pNext = m3.pNext;
		m3.pNext = &sm;
	}
	if (has_amd) {
		amd.pNext = m3.pNext;
		m3.pNext = &amd;
	}
	vkGetPhysicalDeviceProperties2(phys, &p2);

	vd = calloc(1, sizeof(*vd));
	if (!vd) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free;
	}
	vd->phys = phys;
	vd->props = p2.properties;
	vd->max_alloc = m3.maxMemoryAllocationSize;
	vkGetPhysicalDeviceMemoryProperties(phys, &vd->memprops);
	vd->has_push_desc = has_ext(ext, next,
				    VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
	vd->has_budget = has_ext(ext, next,
				 VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);

	/* a compute queue, one with timestamps if there is a choice */
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
	qf = calloc(nq ? nq : 1, sizeof(*qf));
	if (!qf) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free_vd;
	}
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
	vd->qfam = UINT32_MAX;
	for (i = 0; i < nq; i++) {
		if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) ||
		    !qf[i].queueCount)
			continue;
		if (vd->qfam == UINT32_MAX ||
		    (!vd->ts_bits && qf[i].timestampValidBits)) {
			vd->qfam = i;
			vd->ts_bits = qf[i].timestampValidBits;
		}
	}
	if (vd->qfam == UINT32_MAX) {
		ret = gpo__err(-ENODEV, "vulkan device %u (%.100s): no compute queue",
			      index, p2.properties.deviceName);
		goto out_free_vd;
	}

	memset(&info, 0, sizeof(info));
	snprintf(info.name, sizeof(info.name), "%.127s",
		 p2.properties.deviceName);
	vendor_name(p2.properties.vendorID, info.vendor, sizeof(info.vendor));
	driver_version(&p2.properties, has_drv ? drv.driverInfo : NULL,
		       info.driver, sizeof(info.driver));
	for (i = 0; i < VK_UUID_SIZE; i++)
		snprintf(info.uuid + 2 * i, 3, "%02x", idp.deviceUUID[i]);
	info.type = device_type(p2.properties.deviceType);
	if (has_sm)
		info.compute_units = sm.shaderSMCount;
	else if (has_amd)
		info.compute_units = amd.shaderEngineCount *
				     amd.shaderArraysPerEngineCount *
				     amd.computeUnitsPerShaderArray;
	heap = main_heap(&vd->memprops);
	info.mem_total_bytes = heap < 0 ? 0 :
			       vd->memprops.memoryHeaps[heap].size;

	pthread_mutex_init(&vd->lock, NULL);
	vd->inst = inst;
	inst->refs++;
	ret = gpo__ctx_add_device(ctx, &gpo__vulkan_backend_ops, &info, vd);
	if (ret) {
		inst->refs--;
		pthread_mutex_destroy(&vd->lock);
		ret = gpo__err(ret, "out of memory");
		goto out_free_vd;
	}
	free(qf);
	free(ext);
	return 0;

out_free_vd:
	free(vd);
out_free:
	free(qf);
	free(ext);
	return ret;
}

static int vk_probe(struct gpo_ctx *ctx)
{
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "gpuopt",
		.applicationVersion = VK_MAKE_API_VERSION(0,
			GPUOPT_VERSION_MAJOR, GPUOPT_VERSION_MINOR,
			GPUOPT_VERSION_PATCH),
		.pEngineName = "libgpuopt",
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	PFN_vkEnumerateInstanceVersion enum_version;
	VkPhysicalDevice *phys = NULL;
	struct vk_inst *inst;
	uint32_t api = 0, n = 0, i;
	VkResult r;
	int ret = 0;

	/*
	 * A loader of Vulkan 1.0 has no vkEnumerateInstanceVersion and cannot
	 * run 1.1: like no Vulkan at all.
	 */
	enum_version = (PFN_vkEnumerateInstanceVersion)
		vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
	if (!enum_version || enum_version(&api) != VK_SUCCESS ||
	    api < VK_API_VERSION_1_1)
		return 0;
	inst = calloc(1, sizeof(*inst));
	if (!inst)
		return gpo__err(-ENOMEM, "out of memory");
	r = vkCreateInstance(&ici, NULL, &inst->instance);
	if (r == VK_ERROR_INCOMPATIBLE_DRIVER ||
	    r == VK_ERROR_INITIALIZATION_FAILED) {
		/* no driver installed: not an error */
		free(inst);
		return 0;
	}
	if (r != VK_SUCCESS) {
		free(inst);
		return gpo__err(vk_errno(r), "vulkan: vkCreateInstance: %s",
			       vk_result_name(r));
	}
	inst->refs = 1;		/* probe's own, dropped below */

	r = vkEnumeratePhysicalDevices(inst->instance, &n, NULL);
	if (r == VK_SUCCESS && n) {
		phys = calloc(n, sizeof(*phys));
		if (!phys) {
			ret = gpo__err(-ENOMEM, "out of memory");
			goto out_put;
		}
		r = vkEnumeratePhysicalDevices(inst->instance, &n, phys);
	}
	if (r == VK_ERROR_INITIALIZATION_FAILED)
		goto out_put;	/* a loader with no usable driver */
	if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
		ret = gpo__err(vk_errno(r), "vulkan: vkEnumeratePhysicalDevices: %s",
			      vk_result_name(r));
		goto out_put;
	}
	for (i = 0; i < n; i++)
		if (probe_one(ctx, inst, phys[i], i))
			gpo__ctx_log(ctx, "vulkan: device %u skipped: %s", i,
				gpo_errmsg());
out_put:
	free(phys);
	inst_put(inst);
	return ret;
}

/* ---- memory -------------------------------------------------------------- */

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
		return vk_fail(dev, r, "vkCreateBuffer");
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
		ret = vk_fail(dev, r, "vkAllocateMemory");
		goto out_destroy;
	}
	mem->size = bytes;
	return 0;

out_destroy:
	mem_destroy(vd, mem);
	return ret;
}

#define POOL_USAGE (VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | \
		    VK_BUFFER_USAGE_TRANSFER_SRC_BIT | \
		    VK_BUFFER_USAGE_TRANSFER_DST_BIT)

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
	int heap = main_heap(&vd->memprops), t;

	/* the whole device-local heap mappable: resizable BAR or UMA */
	t = heap < 0 ? -1 : find_type(vd, bits, dl | vis, heap);
	if (t >= 0 && !nomap) {
		vd->pool_type = (uint32_t)t;
		vd->pool_mapped = 1;
		vd->direct_read = !!(vd->memprops.memoryTypes[t].propertyFlags &
				     VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
	} else {
		t = heap < 0 ? -1 : find_type(vd, bits, dl, heap);
		if (t < 0)
			t = find_type(vd, bits, dl, -1);
		if (t < 0)
			t = find_type(vd, bits, 0, -1);
		if (t < 0)
			return gpo__err(-ENODEV, "%s (%s): no memory type for storage buffers",
				       dev->info.id, dev->info.name);
		vd->pool_type = (uint32_t)t;
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

/* ---- the batch ----------------------------------------------------------- */

static int batch_begin(struct gpo_device *dev)
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
		return vk_fail(dev, r, "vkBeginCommandBuffer");
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
 * track - note what the next command reads and writes; a barrier goes in
 * first if it overlaps a range an earlier command of the batch wrote (or
 * writes one that was read). Disjoint updates (parameter groups) run
 * without one.
 */
static void track(struct vk_dev *vd, const struct vk_access *acc, int n)
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

static void desc_cache_clear(struct vk_dev *vd)
{
	if (!vd->desc_used)
		return;
	vkResetDescriptorPool(vd->device, vd->desc_pool, 0);
	memset(vd->desc_tab, 0, 2 * VK_DESC_CACHE * sizeof(*vd->desc_tab));
	vd->desc_used = 0;
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
 * batch_flush - submit the batch and wait for it; the device time between
 * its timestamps is added to vd->ns. The command buffer is reset whatever
 * happens, so the next launch starts a fresh batch.
 */
static int batch_flush(struct gpo_device *dev)
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
	r = vkEndCommandBuffer(vd->cmd);
	if (r != VK_SUCCESS) {
		ret = vk_fail(dev, r, "vkEndCommandBuffer");
		goto out_reset;
	}
	r = vkQueueSubmit(vd->queue, 1, &si, vd->fence);
	if (r != VK_SUCCESS) {
		ret = vk_fail(dev, r, "vkQueueSubmit");
		goto out_reset;
	}
	submitted = 1;
	r = fence_wait(vd);
	if (r != VK_SUCCESS) {
		ret = vk_fail(dev, r, "vkWaitForFences");
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

/* record_copy - queue a buffer copy into the batch */
static int record_copy(struct gpo_device *dev, VkBuffer src, uint64_t soff,
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

	ret = batch_begin(dev);
	if (ret)
		return ret;
	track(vd, acc, 2);
	vkCmdCopyBuffer(vd->cmd, src, dst, 1, &region);
	return 0;
}

/* ---- descriptors --------------------------------------------------------- */

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
 * desc_set - the cached descriptor set for these bindings, written on a
 * miss. A full cache is emptied (after the batch that uses it finished).
 */
static int desc_set(struct gpo_device *dev, const VkDescriptorBufferInfo *bi,
		    uint32_t nbuf, VkDescriptorSet *out)
{
	struct vk_dev *vd = dev->priv;
	VkDescriptorSetAllocateInfo ai = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
		.descriptorPool = vd->desc_pool,
		.descriptorSetCount = 1,
		.pSetLayouts = &vd->set_layout,
	};
	VkWriteDescriptorSet w[KARG_NBUF];
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
		ret = batch_flush(dev);
		if (ret)
			return ret;
		desc_cache_clear(vd);
		return desc_set(dev, bi, nbuf, out);
	}
	r = vkAllocateDescriptorSets(vd->device, &ai, &e->set);
	if (r != VK_SUCCESS) {
		e->set = VK_NULL_HANDLE;
		return vk_fail(dev, r, "vkAllocateDescriptorSets");
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

/* ---- launch -------------------------------------------------------------- */

/*
 * bind_buf - the descriptor for @b seen from byte @off for @range bytes;
 * a buffer the launch leaves zeroed gets the dummy.
 */
static int bind_buf(struct gpo_device *dev, enum kernel_id k, int i,
		    const struct dev_buf *b, uint64_t off, uint64_t range,
		    VkDescriptorBufferInfo *out)
{
	struct vk_dev *vd = dev->priv;
	uint64_t align = vd->props.limits.minStorageBufferOffsetAlignment;

	if (!b->mem || !range) {
		out->buffer = vd->dummy.buffer;
		out->offset = 0;
		out->range = DUMMY_BYTES;
		return 0;
	}
	off += b->off;
	if (align && off % align)
		return gpo__err(-EINVAL, "%s: %s buffer %d at offset %llu, not a multiple of %llu",
			       dev->info.id, gpo__kernel_table[k].name, i,
			       (unsigned long long)off,
			       (unsigned long long)align);
	if (off + range > b->mem->size)
		return gpo__err(-EINVAL, "%s: %s buffer %d: %llu bytes at %llu overrun its block",
			       dev->info.id, gpo__kernel_table[k].name, i,
			       (unsigned long long)range,
			       (unsigned long long)off);
	if (range > vd->max_range)
		return gpo__err(-ENOSYS, "%s (%s): %s over %llu bytes: more than one binding may span (maxStorageBufferRange %llu)",
			       dev->info.id, dev->info.name,
			       gpo__kernel_table[k].name,
			       (unsigned long long)range,
			       (unsigned long long)vd->max_range);
	out->buffer = b->mem->buffer;
	out->offset = off;
	out->range = range;
	return 0;
}

/* a whole buffer's range: its size, whole floats */
static uint64_t whole(const struct dev_buf *b)
{
	return (b->size + 3) & ~3ull;
}

/*
 * record_dispatch - record one dispatch of kernel @k over the bindings
 * @bi with push constants @pc (the scalar tail of a kernel_args)
 */
static int record_dispatch(struct gpo_device *dev, enum kernel_id k,
			   const VkDescriptorBufferInfo *bi,
			   const void *pc, uint32_t gx, uint32_t gy)
{
	struct vk_dev *vd = dev->priv;
	uint32_t i, nbuf = gpo__kernel_table[k].nbuf;
	struct vk_access acc[KARG_NBUF];
	VkDescriptorSet set = VK_NULL_HANDLE;
	int n = 0, ret;

	/* a set-cache miss may flush the batch: before recording starts */
	if (!vd->push_desc) {
		ret = desc_set(dev, bi, nbuf, &set);
		if (ret)
			return ret;
	}
	ret = batch_begin(dev);
	if (ret)
		return ret;
	for (i = 0; i < nbuf; i++) {
		if (bi[i].buffer == vd->dummy.buffer)
			continue;
		acc[n].buffer = bi[i].buffer;
		acc[n].lo = bi[i].offset;
		acc[n].hi = bi[i].offset + bi[i].range;
		acc[n].write = !!(kinfo[k].writes & (1u << i));
		n++;
	}
	track(vd, acc, n);
	if (vd->query_pool && !vd->ts_started) {
		vkCmdResetQueryPool(vd->cmd, vd->query_pool, 0, 2);
		vkCmdWriteTimestamp(vd->cmd, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
				    vd->query_pool, 0);
		vd->ts_started = 1;
	}
	if (vd->bound != vd->pipes[k]) {
		vkCmdBindPipeline(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
				  vd->pipes[k]);
		vd->bound = vd->pipes[k];
	}
	if (vd->push_desc) {
		VkWriteDescriptorSet w[KARG_NBUF];

		for (i = 0; i < nbuf; i++)
			w[i] = (VkWriteDescriptorSet) {
				.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
				.dstBinding = i,
				.descriptorCount = 1,
				.descriptorType =
					VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
				.pBufferInfo = &bi[i],
			};
		vd->push_desc(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
			      vd->pipe_layout, 0, nbuf, w);
	} else {
		vkCmdBindDescriptorSets(vd->cmd, VK_PIPELINE_BIND_POINT_COMPUTE,
					vd->pipe_layout, 0, 1, &set, 0, NULL);
	}
	vkCmdPushConstants(vd->cmd, vd->pipe_layout,
			   VK_SHADER_STAGE_COMPUTE_BIT, 0, PUSH_BYTES, pc);
	vkCmdDispatch(vd->cmd, gx, gy, 1);
	return 0;
}

/* The push constants of @a, with n and aux0 replaced. */
static void push_args(const struct kernel_args *a, uint32_t n, uint32_t aux0,
		      struct kernel_args *pc)
{
	*pc = *a;
	pc->n = n;
	pc->aux0 = aux0;
}

#define PC(a) ((const void *)&(a)->n)

/*
 * Element kernels: one float4 per invocation. A view longer than one
 * binding may span is cut into windows of whole 256-byte units, each its
 * own dispatch with n = the window's elements (scal stays whole).
 */
static int launch_elements(struct gpo_device *dev, enum kernel_id k,
			   const struct kernel_args *a)
{
	struct vk_dev *vd = dev->priv;
	uint64_t chunk = (vd->max_range / 4) & ~63ull, first, cnt, groups;
	VkDescriptorBufferInfo bi[KARG_NBUF];
	struct kernel_args pc;
	uint32_t i, nbuf = gpo__kernel_table[k].nbuf;
	int ret;

	for (i = 0; i < nbuf; i++) {
		const struct dev_buf *b = &a->buf[i];

		if ((kinfo[k].elem & (1u << i)) && b->mem &&
		    b->size < (uint64_t)a->n * 4)
			return gpo__err(-EINVAL, "%s: %s buffer %u holds %llu bytes, %u elements need %llu",
				       dev->info.id, gpo__kernel_table[k].name, i,
				       (unsigned long long)b->size, a->n,
				       (unsigned long long)a->n * 4);
	}
	for (first = 0; first < a->n; first += cnt) {
		cnt = a->n - first < chunk ? a->n - first : chunk;
		for (i = 0; i < nbuf; i++) {
			const struct dev_buf *b = &a->buf[i];

			if (kinfo[k].elem & (1u << i))
				ret = bind_buf(dev, k, i, b, first * 4, cnt * 4,
					       &bi[i]);
			else
				ret = bind_buf(dev, k, i, b, 0, whole(b),
					       &bi[i]);
			if (ret)
				return ret;
		}
		groups = ((cnt + 3) / 4 + KERNEL_WG_SIZE - 1) / KERNEL_WG_SIZE;
		if (groups > vd->max_groups)
			groups = vd->max_groups;
		push_args(a, (uint32_t)cnt, a->aux0, &pc);
		ret = record_dispatch(dev, k, bi, PC(&pc), (uint32_t)groups, 1);
		if (ret)
			return ret;
	}
	return 0;
}

/* exactly @groups workgroups, as a 2D grid past one dimension's limit */
static int dispatch_groups(struct gpo_device *dev, enum kernel_id k,
			   const VkDescriptorBufferInfo *bi,
			   const struct kernel_args *pc, uint32_t groups)
{
	struct vk_dev *vd = dev->priv;
	uint32_t gx = groups, gy = 1;
	uint32_t xmax = vd->props.limits.maxComputeWorkGroupCount[0];

	if (xmax > GROUP_DIM_MAX)
		xmax = GROUP_DIM_MAX;
	/* GPUOPT_VULKAN_DEBUG=groups=N: small N makes 2D grids to test */
	if (xmax > vd->max_groups)
		xmax = vd->max_groups;
	if (gx > xmax) {
		gx = xmax;
		gy = (groups + xmax - 1) / xmax;
		if (gy > vd->props.limits.maxComputeWorkGroupCount[1])
			return gpo__err(-ENOSYS, "%s: %s: %u workgroups are more than the device can dispatch",
				       dev->info.id, gpo__kernel_table[k].name,
				       groups);
	}
	return record_dispatch(dev, k, bi, PC(pc), gx, gy);
}

/*
 * K_NORM_PARTIAL: group i covers aux1 elements from i * aux1; past one
 * binding's span the groups are cut into runs, each dispatched with n,
 * aux0 and the bindings relative to the run. A run is a multiple of
 * align / 8 groups, so that both windows (8 bytes of partials and
 * 4 * aux1 bytes of gradient a group) start aligned.
 */
static int launch_norm_partial(struct gpo_device *dev,
			       const struct kernel_args *a)
{
	struct vk_dev *vd = dev->priv;
	const struct dev_buf *g = &a->buf[0], *part = &a->buf[1];
	uint64_t align = vd->props.limits.minStorageBufferOffsetAlignment;
	uint64_t unit = align > 8 ? align / 8 : 1, run, g0, cnt, e0, ne;
	VkDescriptorBufferInfo bi[2];
	struct kernel_args pc;
	int ret;

	if (!a->aux1 || a->aux1 % 4)
		return gpo__err(-EINVAL, "%s: norm_partial: %u elements per group, not a multiple of 4",
			       dev->info.id, a->aux1);
	if (g->mem && g->size < (uint64_t)a->n * 4)
		return gpo__err(-EINVAL, "%s: norm_partial: %llu gradient bytes for %u elements",
			       dev->info.id, (unsigned long long)g->size,
			       a->n);
	if ((uint64_t)a->n * 4 <= vd->max_range &&
	    (uint64_t)a->aux0 * 8 <= vd->max_range) {
		run = a->aux0;
	} else {
		run = vd->max_range / ((uint64_t)a->aux1 * 4);
		if (run > vd->max_range / 8)
			run = vd->max_range / 8;
		run -= run % unit;
	}
	if (!run)
		return gpo__err(-ENOSYS, "%s (%s): norm_partial: groups of %u elements exceed maxStorageBufferRange",
			       dev->info.id, dev->info.name, a->aux1);
	for (g0 = 0; g0 < a->aux0; g0 += cnt) {
		cnt = a->aux0 - g0 < run ? a->aux0 - g0 : run;
		e0 = g0 * a->aux1;
		ne = e0 >= a->n ? 0 : a->n - e0;
		if (ne > cnt * a->aux1)
			ne = cnt * a->aux1;
		ret = bind_buf(dev, K_NORM_PARTIAL, 0, g, e0 * 4, ne * 4,
			       &bi[0]);
		if (!ret)
			ret = bind_buf(dev, K_NORM_PARTIAL, 1, part, g0 * 8,
				       cnt * 8, &bi[1]);
		if (ret)
			return ret;
		push_args(a, (uint32_t)ne, (uint32_t)cnt, &pc);
		ret = dispatch_groups(dev, K_NORM_PARTIAL, bi, &pc,
				      (uint32_t)cnt);
		if (ret)
			return ret;
	}
	return 0;
}

static int vk_launch(struct gpo_device *dev, enum kernel_id k,
		     const struct kernel_args *a)
{
	struct vk_dev *vd = dev->priv;
	VkDescriptorBufferInfo bi[KARG_NBUF];
	uint32_t i, groups;
	int ret = 0;

	if ((unsigned int)k >= K_COUNT)
		return gpo__err(-EINVAL, "%s: no kernel %d", dev->info.id, k);
	pthread_mutex_lock(&vd->lock);
	if (vd->lost) {
		ret = vk_lost(dev);
		goto out_unlock;
	}
	if (gpo__kernel_table[k].grid == GRID_ELEMENTS) {
		if (a->n)
			ret = launch_elements(dev, k, a);
		goto out_unlock;
	}
	if (k == K_NORM_PARTIAL) {
		if (a->aux0)
			ret = launch_norm_partial(dev, a);
		goto out_unlock;
	}
	/* the rest bind whole buffers */
	for (i = 0; i < gpo__kernel_table[k].nbuf && !ret; i++)
		ret = bind_buf(dev, k, (int)i, &a->buf[i], 0, whole(&a->buf[i]),
			       &bi[i]);
	if (ret)
		goto out_unlock;
	if (k == K_NORM_FINAL) {
		ret = record_dispatch(dev, k, bi, PC(a), 1, 1);
	} else if (k == K_LAMB_TRUST) {
		/* a workgroup per tensor: see lamb_trust.comp */
		if (a->n)
			ret = dispatch_groups(dev, k, bi, a, a->n);
	} else if (gpo__kernel_table[k].grid == GRID_ITEMS) {
		groups = (uint32_t)(((uint64_t)a->n + KERNEL_WG_SIZE - 1) /
				    KERNEL_WG_SIZE);
		if (groups > vd->max_groups)
			groups = vd->max_groups;
		if (groups)
			ret = record_dispatch(dev, k, bi, PC(a), groups, 1);
	} else if (a->aux0) {
		ret = dispatch_groups(dev, k, bi, a, a->aux0);
	}
out_unlock:
	pthread_mutex_unlock(&vd->lock);
	return ret;
}

static int vk_wait(struct gpo_device *dev, uint64_t *device_ns)
{
	struct vk_dev *vd = dev->priv;
	int ret;

	pthread_mutex_lock(&vd->lock);
	ret = vd->lost ? vk_lost(dev) : batch_flush(dev);
	if (device_ns)
		*device_ns = ret ? 0 : vd->ns;
	vd->ns = 0;
	pthread_mutex_unlock(&vd->lock);
	return ret;
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

/*
 * transfer - copy @bytes between @host and @b at @off: into @b if @write,
 * else out of it. Mapped memory is copied directly once the kernels
 * launched so far are done (they may read what a write replaces); a read
 * only where that memory is host-cached. Otherwise through the staging
 * buffer: a write's copies are queued in the batch, a read's go in the
 * same submission as the kernels before it, so a small read (scal) costs
 * one fence wait.
 */
static int transfer(struct gpo_device *dev, const struct dev_buf *b,
		    uint64_t off, unsigned char *host, uint64_t bytes,
		    int write)
{
	struct vk_dev *vd = dev->priv;
	uint64_t chunk, pos;
	unsigned char *map;
	int ret;

	ret = check_range(dev, b, off, bytes);
	if (ret || !bytes)
		return ret;
	pthread_mutex_lock(&vd->lock);
	if (vd->lost) {
		ret = vk_lost(dev);
		goto out_unlock;
	}
	if (b->mem->map && (write || vd->direct_read)) {
		ret = batch_flush(dev);
		map = b->mem->map + b->off + off;
		if (!ret)
			memcpy(write ? map : host, write ? host : map, bytes);
		goto out_unlock;
	}
	while (bytes) {
		chunk = bytes < vd->staging_size ? bytes : vd->staging_size;
		if (vd->staging_pos + chunk > vd->staging_size) {
			ret = batch_flush(dev);
			if (ret)
				break;
		}
		pos = vd->staging_pos;
		if (write) {
			memcpy(vd->staging.map + pos, host, chunk);
			ret = record_copy(dev, vd->staging.buffer, pos,
					  b->mem->buffer, b->off + off, chunk);
			if (!ret)
				vd->staging_pos += (chunk + 15) & ~15ull;
		} else {
			ret = record_copy(dev, b->mem->buffer, b->off + off,
					  vd->staging.buffer, pos, chunk);
			if (!ret)
				ret = batch_flush(dev);
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

static int vk_write(struct gpo_device *dev, const struct dev_buf *dst,
		    uint64_t off, const void *src, uint64_t bytes)
{
	/* transfer() only reads @src when it writes */
	return transfer(dev, dst, off, (unsigned char *)src, bytes, 1);
}

static int vk_read(struct gpo_device *dev, const struct dev_buf *src,
		   uint64_t off, void *dst, uint64_t bytes)
{
	return transfer(dev, src, off, dst, bytes, 0);
}

static int vk_alloc(struct gpo_device *dev, uint64_t bytes,
		    struct dev_mem **out)
{
	struct vk_dev *vd = dev->priv;
	struct dev_mem *mem;
	int ret;

	if (vd->lost)
		return vk_lost(dev);
	mem = calloc(1, sizeof(*mem));
	if (!mem)
		return gpo__err(-ENOMEM, "out of memory");
	ret = mem_create(dev, bytes, POOL_USAGE, -1, vd->pool_mapped, mem);
	if (ret) {
		free(mem);
		return ret;
	}
	*out = mem;
	return 0;
}

static void vk_free(struct gpo_device *dev, struct dev_mem *mem)
{
	struct vk_dev *vd = dev->priv;

	if (!mem)
		return;
	pthread_mutex_lock(&vd->lock);
	/* nothing queued may still use it; a new buffer may get its handle */
	batch_flush(dev);
	desc_cache_clear(vd);
	mem_destroy(vd, mem);
	pthread_mutex_unlock(&vd->lock);
	free(mem);
}

static uint64_t vk_mem_free(struct gpo_device *dev)
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
	heap = main_heap(&mp.memoryProperties);
	if (heap < 0 || budget.heapBudget[heap] < budget.heapUsage[heap])
		return 0;
	return budget.heapBudget[heap] - budget.heapUsage[heap];
}

/* ---- pipelines and their cache ------------------------------------------- */

static uint64_t cache_key(const struct vk_dev *vd)
{
	const VkPhysicalDeviceProperties *p = &vd->props;
	uint64_t key = gpo__diskcache_key_str(0, "gpuopt vulkan pipelines 1");
	int push = vd->push_desc != NULL;
	int k;

	key = gpo__diskcache_key(key, &p->vendorID, sizeof(p->vendorID));
	key = gpo__diskcache_key(key, &p->deviceID, sizeof(p->deviceID));
	key = gpo__diskcache_key(key, &p->driverVersion, sizeof(p->driverVersion));
	key = gpo__diskcache_key(key, p->pipelineCacheUUID, VK_UUID_SIZE);
	key = gpo__diskcache_key(key, &push, sizeof(push));
	for (k = 0; k < K_COUNT; k++) {
		const struct embedded_file *f =
			gpo__embedded_find(gpo__embedded_spv, gpo__kernel_table[k].name);

		if (f)
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

static int create_pipelines(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkShaderModule mods[K_COUNT] = { 0 };
	VkComputePipelineCreateInfo ci[K_COUNT];
	VkPipelineCacheCreateInfo pcci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
	};
	uint64_t key = cache_key(vd);
	void *old = NULL, *data = NULL;
	size_t old_size = 0, size = 0;
	VkResult r = VK_SUCCESS;
	int k, ret = 0;

	if (!gpo__diskcache_load("vulkan", key, &old, &old_size) &&
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
	if (r != VK_SUCCESS) {
		ret = vk_fail(dev, r, "vkCreatePipelineCache");
		goto out_free;
	}

	for (k = 0; k < K_COUNT; k++) {
		const struct embedded_file *f =
			gpo__embedded_find(gpo__embedded_spv, gpo__kernel_table[k].name);
		VkShaderModuleCreateInfo smci = {
			.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
		};

		if (!f || f->size % 4) {
			ret = gpo__err(-ENOENT, "%s: no SPIR-V for kernel %s",
				      dev->info.id, gpo__kernel_table[k].name);
			goto out_modules;
		}
		smci.codeSize = f->size;
		smci.pCode = (const uint32_t *)f->data;
		r = vkCreateShaderModule(vd->device, &smci, NULL, &mods[k]);
		if (r != VK_SUCCESS) {
			ret = vk_fail(dev, r, "vkCreateShaderModule");
			goto out_modules;
		}
		ci[k] = (VkComputePipelineCreateInfo) {
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.stage = {
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.module = mods[k],
				.pName = "main",
			},
			.layout = vd->pipe_layout,
		};
	}
	r = vkCreateComputePipelines(vd->device, vd->pipe_cache, K_COUNT, ci,
				     NULL, vd->pipes);
	if (r != VK_SUCCESS) {
		ret = vk_fail(dev, r, "vkCreateComputePipelines");
		goto out_modules;
	}

	/* keep what the driver compiled, when it differs from the file */
	if (vkGetPipelineCacheData(vd->device, vd->pipe_cache, &size,
				   NULL) == VK_SUCCESS && size) {
		data = malloc(size);
		if (data && vkGetPipelineCacheData(vd->device, vd->pipe_cache,
						   &size, data) == VK_SUCCESS &&
		    (size != pcci.initialDataSize ||
		     memcmp(data, old, size)))
			gpo__diskcache_store("vulkan", key, data, size);
	}
out_modules:
	for (k = 0; k < K_COUNT; k++)
		if (mods[k])
			vkDestroyShaderModule(vd->device, mods[k], NULL);
out_free:
	free(data);
	free(old);
	return ret;
}

/* ---- open and close ------------------------------------------------------ */

struct vk_debug {
	int nopush;
	int nomap;
	uint64_t staging;
	uint64_t range;
	uint64_t groups;
	int64_t spin_us;
};

static void parse_debug(struct vk_debug *dbg)
{
	const char *env = getenv("GPUOPT_VULKAN_DEBUG");
	char buf[256], *tok, *save;

	memset(dbg, 0, sizeof(*dbg));
	dbg->spin_us = -1;
	if (!env)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "nopush"))
			dbg->nopush = 1;
		else if (!strcmp(tok, "nomap"))
			dbg->nomap = 1;

		else if (!strncmp(tok, "staging=", 8))
			dbg->staging = strtoull(tok + 8, NULL, 0);
		else if (!strncmp(tok, "range=", 6))
			dbg->range = strtoull(tok + 6, NULL, 0);
		else if (!strncmp(tok, "groups=", 7))
			dbg->groups = strtoull(tok + 7, NULL, 0);
		else if (!strncmp(tok, "spin=", 5))
			dbg->spin_us = strtoll(tok + 5, NULL, 0);
	}
}

/* Undo open; a partly opened device too. Leaves what probe set. */
static void teardown(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	int k;

	if (vd->device) {
		vkDeviceWaitIdle(vd->device);
		for (k = 0; k < K_COUNT; k++)
			if (vd->pipes[k])
				vkDestroyPipeline(vd->device, vd->pipes[k],
						  NULL);
		if (vd->pipe_cache)
			vkDestroyPipelineCache(vd->device, vd->pipe_cache,
					       NULL);
		if (vd->pipe_layout)
			vkDestroyPipelineLayout(vd->device, vd->pipe_layout,
						NULL);
		if (vd->set_layout)
			vkDestroyDescriptorSetLayout(vd->device,
						     vd->set_layout, NULL);
		if (vd->desc_pool)
			vkDestroyDescriptorPool(vd->device, vd->desc_pool,
						NULL);
		mem_destroy(vd, &vd->staging);
		mem_destroy(vd, &vd->dummy);
		if (vd->query_pool)
			vkDestroyQueryPool(vd->device, vd->query_pool, NULL);
		if (vd->fence)
			vkDestroyFence(vd->device, vd->fence, NULL);
		if (vd->cmd_pool)
			vkDestroyCommandPool(vd->device, vd->cmd_pool, NULL);
		vkDestroyDevice(vd->device, NULL);
	}
	free(vd->desc_tab);
	memset((char *)vd + offsetof(struct vk_dev, opened), 0,
	       sizeof(*vd) - offsetof(struct vk_dev, opened));
}

static int create_device(struct gpo_device *dev, const struct vk_debug *dbg)
{
	struct vk_dev *vd = dev->priv;
	const float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueFamilyIndex = vd->qfam,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	const char *exts[2];
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.ppEnabledExtensionNames = exts,
	};
	int push = vd->has_push_desc && !dbg->nopush;
	VkResult r;

	if (push)
		exts[dci.enabledExtensionCount++] =
			VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
	if (vd->has_budget)
		exts[dci.enabledExtensionCount++] =
			VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	r = vkCreateDevice(vd->phys, &dci, NULL, &vd->device);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkCreateDevice");
	vkGetDeviceQueue(vd->device, vd->qfam, 0, &vd->queue);
	if (push) {
		vd->push_desc = (PFN_vkCmdPushDescriptorSetKHR)
			vkGetDeviceProcAddr(vd->device,
					    "vkCmdPushDescriptorSetKHR");
		if (!vd->push_desc)
			return gpo__err(-EIO, "%s (%s): no vkCmdPushDescriptorSetKHR",
				       dev->info.id, dev->info.name);
	}
	return 0;
}

static int create_commands(struct gpo_device *dev)
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
		return vk_fail(dev, r, "vkCreateCommandPool");
	cbai.commandPool = vd->cmd_pool;
	r = vkAllocateCommandBuffers(vd->device, &cbai, &vd->cmd);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkAllocateCommandBuffers");
	r = vkCreateFence(vd->device, &fci, NULL, &vd->fence);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkCreateFence");
	if (vd->ts_bits) {
		r = vkCreateQueryPool(vd->device, &qpci, NULL,
				      &vd->query_pool);
		if (r != VK_SUCCESS)
			return vk_fail(dev, r, "vkCreateQueryPool");
	}
	return 0;
}

static int create_layout(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	VkDescriptorSetLayoutBinding b[KARG_NBUF];
	VkDescriptorSetLayoutCreateInfo dslci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.flags = vd->push_desc ?
			VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
		.bindingCount = KARG_NBUF,
		.pBindings = b,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = PUSH_BYTES,
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
		.descriptorCount = VK_DESC_CACHE * KARG_NBUF,
	};
	VkDescriptorPoolCreateInfo dpci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
		.maxSets = VK_DESC_CACHE,
		.poolSizeCount = 1,
		.pPoolSizes = &ps,
	};
	uint32_t i;
	VkResult r;

	for (i = 0; i < KARG_NBUF; i++)
		b[i] = (VkDescriptorSetLayoutBinding) {
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	r = vkCreateDescriptorSetLayout(vd->device, &dslci, NULL,
					&vd->set_layout);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkCreateDescriptorSetLayout");
	r = vkCreatePipelineLayout(vd->device, &plci, NULL, &vd->pipe_layout);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkCreatePipelineLayout");
	if (vd->push_desc)
		return 0;
	r = vkCreateDescriptorPool(vd->device, &dpci, NULL, &vd->desc_pool);
	if (r != VK_SUCCESS)
		return vk_fail(dev, r, "vkCreateDescriptorPool");
	vd->desc_tab = calloc(2 * VK_DESC_CACHE, sizeof(*vd->desc_tab));
	if (!vd->desc_tab)
		return gpo__err(-ENOMEM, "out of memory");
	return 0;
}

/* The dummy buffer (zeroed) and, where transfers need it, staging. */
static int create_buffers(struct gpo_device *dev, const struct vk_debug *dbg)
{
	struct vk_dev *vd = dev->priv;
	VkMemoryRequirements req;
	VkBuffer probe;
	int ret;

	/*
	 * Buffers of one usage accept the same memory types whatever their
	 * size (the spec says so): one small buffer tells for the pool.
	 */
	ret = buffer_create(dev, DUMMY_BYTES, POOL_USAGE, &probe, &req);
	if (ret)
		return ret;
	vkDestroyBuffer(vd->device, probe, NULL);
	ret = choose_memory(dev, req.memoryTypeBits, dbg->nomap);
	if (ret)
		return ret;
	ret = mem_create(dev, DUMMY_BYTES, POOL_USAGE, -1, 0, &vd->dummy);
	if (ret)
		return ret;

	if (vd->pool_mapped && vd->direct_read)
		return 0;
	vd->staging_size = dbg->staging >= 4096 ? dbg->staging & ~15ull :
						  STAGING_BYTES;
	return mem_create(dev, vd->staging_size,
			  VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			  VK_BUFFER_USAGE_TRANSFER_DST_BIT,
			  (int)vd->staging_type, 1, &vd->staging);
}

static int check_limits(struct gpo_device *dev)
{
	const VkPhysicalDeviceLimits *l =
		&((struct vk_dev *)dev->priv)->props.limits;

	if (l->maxComputeWorkGroupSize[0] < KERNEL_WG_SIZE ||
	    l->maxComputeWorkGroupInvocations < KERNEL_WG_SIZE ||
	    l->maxComputeSharedMemorySize < 2 * 4 * KERNEL_WG_SIZE ||
	    l->maxPerStageDescriptorStorageBuffers < KARG_NBUF ||
	    l->maxPushConstantsSize < PUSH_BYTES)
		return gpo__err(-ENODEV, "%s (%s): compute limits too small (workgroup %u, storage buffers %u)",
			       dev->info.id, dev->info.name,
			       l->maxComputeWorkGroupInvocations,
			       l->maxPerStageDescriptorStorageBuffers);
	return 0;
}

static int vk_open(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;
	const VkPhysicalDeviceLimits *l = &vd->props.limits;
	struct vk_debug dbg;
	int ret;

	parse_debug(&dbg);
	ret = check_limits(dev);
	if (!ret)
		ret = create_device(dev, &dbg);
	if (!ret)
		ret = create_commands(dev);
	if (!ret)
		ret = create_layout(dev);
	if (!ret)
		ret = create_buffers(dev, &dbg);
	if (!ret)
		ret = create_pipelines(dev);
	if (ret)
		goto out_teardown;

	vd->max_range = l->maxStorageBufferRange;
	if (dbg.range >= 1024 && dbg.range < vd->max_range)
		vd->max_range = dbg.range;
	vd->max_groups = l->maxComputeWorkGroupCount[0] < ELEM_MAX_GROUPS ?
			 l->maxComputeWorkGroupCount[0] : ELEM_MAX_GROUPS;
	if (dbg.groups)
		vd->max_groups = dbg.groups < l->maxComputeWorkGroupCount[0] ?
				 (uint32_t)dbg.groups :
				 l->maxComputeWorkGroupCount[0];
	vd->spin_ns = vd->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ?
		      0 : SPIN_NS;
	if (dbg.spin_us >= 0)
		vd->spin_ns = (uint64_t)dbg.spin_us * 1000;
	vd->opened = 1;

	/* the dummy is bound where a kernel reads nothing: keep it zero */
	ret = batch_begin(dev);
	if (!ret) {
		vkCmdFillBuffer(vd->cmd, vd->dummy.buffer, 0, DUMMY_BYTES, 0);
		ret = batch_flush(dev);
	}
	if (ret)
		goto out_teardown;
	vd->ns = 0;
	dev->mem_align = l->minStorageBufferOffsetAlignment > 256 ?
			 l->minStorageBufferOffsetAlignment : 256;
	dev->max_alloc = vd->max_alloc;
	return 0;

out_teardown:
	teardown(dev);
	return ret;
}

static void vk_close(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;

	if (!vd)
		return;
	/* also a device that was probed but never opened */
	teardown(dev);
	pthread_mutex_destroy(&vd->lock);
	inst_put(vd->inst);
	free(vd);
	dev->priv = NULL;
}

const struct backend_ops gpo__vulkan_backend_ops = {
	.name = "vulkan",
	.probe = vk_probe,
	.open = vk_open,
	.close = vk_close,
	.alloc = vk_alloc,
	.free = vk_free,
	.write = vk_write,
	.read = vk_read,
	.launch = vk_launch,
	.wait = vk_wait,
	.mem_free = vk_mem_free,
};
