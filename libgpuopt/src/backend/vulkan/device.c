// SPDX-License-Identifier: MIT
/*
 * device.c - the Vulkan backend: devices, and the table of operations
 *
 * One instance per context (API 1.1), shared by every physical device with
 * a compute queue. A device gets one queue, one command buffer, one fence
 * and one two-entry timestamp query pool, all reused: launches, uploads
 * and readbacks are recorded into the command buffer (the "batch") and
 * submitted together at wait() or read(), so a step is one submission and
 * one fence wait (submit.c). Dispatches that touch overlapping ranges, one
 * of them writing (the op descriptors' buffer roles say which), are
 * separated by a compute/transfer memory barrier.
 *
 * An op in a dtype runs the SPIR-V module "<op>.<dtype>" embedded at build
 * time (kernels/vulkan/<family>/<op>.comp); its pipeline is built on first
 * use (pipeline.c). All share one pipeline layout: one descriptor set of
 * OP_MAX_BUF storage buffers (binding i = the op's buffer i) and
 * GPO_ARGS_MAX bytes of push constants (the family's parameter struct,
 * kernels/abi/). Descriptors are pushed (VK_KHR_push_descriptor); without
 * that extension, sets come from a cache keyed by the bound ranges
 * (descriptor.c). Either way a step allocates nothing.
 *
 * Memory (memory.c): every pool block is one VkBuffer over one
 * allocation. Where the whole device-local heap is host-visible
 * (resizable BAR, or a unified memory device), blocks are mapped and
 * written directly; reads go through a host-cached staging buffer unless
 * the blocks themselves are host-cached. The staging buffer doubles as
 * the ring for uploads on devices without a mappable heap.
 *
 * An adopted device (gpo_device_adopt_vulkan) is described as probe
 * describes one, from the caller's physical device and queue family, and
 * opened on the caller's VkDevice and VkQueue: everything else open makes
 * is ours and goes at close, the device stays. No extension of the
 * caller's is assumed (so no push descriptors and no fd import there),
 * and each batch starts and ends with a full barrier (interop.c) in place
 * of a semaphore between the caller's submissions and ours. Memory
 * imported from an fd changes hands with the other device at the same
 * two points.
 *
 * The pipeline cache lives on disk (diskcache "vulkan"), keyed by the
 * device, the driver and the SPIR-V, and is checked against the device
 * before use.
 *
 * GPUOPT_VULKAN_DEBUG (comma list) forces the paths that the machine at
 * hand would not take, for tests and measurements: nopush (descriptor-set
 * cache), nomap (staging for every transfer), staging=BYTES, range=BYTES
 * (a smaller maxStorageBufferRange), groups=N (element ops' dispatch cap,
 * and the group ops' grid row), spin=US (fence polling before a blocking
 * wait), nograph (optimizer steps launched one by one into the batch,
 * never recorded and replayed: graph.c), maplimit=BYTES (mapped pool
 * blocks beyond BYTES in all are refused as the driver refuses them when
 * the mappable window is full: memory.c's unmapped blocks), nofma (the
 * kernels' division and sqrt by split products where the device's fma
 * rounds once: fma_fused()), shared=BYTES (less compute shared memory
 * than the device has, for the kernels that size themselves by it:
 * attn_ks()), spv=DIR (modules from DIR where it has them, for the whole
 * process: pipeline.c), coop_nv (matmul_coop through
 * VK_NV_cooperative_matrix on a device that also has the KHR extension,
 * which it would use: coopkhr.c).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/gpuopt_i.h"
#include "backend/embedded_i.h"
#include "backend/vulkan/vulkan_i.h"
#include "abi/attention.h"
#include "abi/matmul.h"

/*
 * Element ops run a grid-stride loop; more groups than this only add
 * scheduling work once every float4 has an invocation per pass.
 */
#define ELEM_MAX_GROUPS		65535u
#define GROUP_DIM_MAX		65535u
/*
 * Poll a batch's fence this long before blocking: a blocking wait wakes
 * 30-60 us after a short batch ends (H100, driver 580), which doubled a
 * 2000 x 4096 AdamW step (82 us of kernel). Not on CPU implementations,
 * whose worker threads the polling would take a core from.
 */
#define SPIN_NS			200000

/* ---- errors -------------------------------------------------------------- */

const char *gpo__vk_result_name(VkResult r)
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

int gpo__vk_errno(VkResult r)
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

/* gpo__vk_fail - a failed call as -errno and a message naming the device */
int gpo__vk_fail(struct gpo_device *dev, VkResult r, const char *what)
{
	struct vk_dev *vd = dev->priv;
	int err = gpo__vk_errno(r);

	if (err == -ENODEV)
		vd->lost = 1;
	return gpo__err(err, "%s (%s): %s: %s", dev->info.id, dev->info.name,
		       what, gpo__vk_result_name(r));
}

int gpo__vk_lost(struct gpo_device *dev)
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

/* the compute queue family of @qf with timestamps if any has them */
static uint32_t pick_queue(const VkQueueFamilyProperties *qf, uint32_t nq)
{
	uint32_t i, best = UINT32_MAX;

	for (i = 0; i < nq; i++) {
		if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) ||
		    !qf[i].queueCount)
			continue;
		if (best == UINT32_MAX ||
		    (!qf[best].timestampValidBits && qf[i].timestampValidBits))
			best = i;
	}
	return best;
}

/*
 * fma_fused - does the driver's fma() round once? SPIR-V's Fma promises
 * no more than a multiply then an add, so precision.glsl's PREC_FMA
 * path (its correctly rounded division and sqrt from fused residuals)
 * runs only where the driver is known to fuse every one: NVIDIA's
 * (FFMA; every kernel's bytes checked against the cpu backend there,
 * tests/unit and tests/ops on the lent GPU). Not lavapipe: with it
 * adam8 and half LAMB came out an ulp off the cpu's now and then (Mesa
 * 22.3, an EPYC with FMA), so some of its fma()s are a multiply and an
 * add. Elsewhere, and with GPUOPT_VULKAN_DEBUG=nofma, the split
 * products.
 */
static int fma_fused(const VkPhysicalDeviceProperties *p,
		     const VkPhysicalDeviceDriverProperties *drv)
{
	if (drv)
		return drv->driverID == VK_DRIVER_ID_NVIDIA_PROPRIETARY;
	return p->vendorID == 0x10de;
}

/*
 * u8_subgroups - do the 8-bit kernels' blocks map onto subgroups on
 * @phys (update.glsl's GPO_U8_SG, specialization constant 2)? Subgroups
 * of 32 with arithmetic in compute: a module of SPIR-V 1.3 runs with
 * this one size, so each block's 32 lanes are one subgroup and its
 * absmax a subgroupMax.
 */
static VkBool32 u8_subgroups(VkPhysicalDevice phys)
{
	VkPhysicalDeviceSubgroupProperties sg = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
	};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &sg,
	};

	vkGetPhysicalDeviceProperties2(phys, &p2);
	return sg.subgroupSize == 32 && GPO_WG_SIZE % 32 == 0 &&
	       (sg.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
	       (sg.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) ?
	       VK_TRUE : VK_FALSE;
}

/*
 * VK_KHR_cooperative_matrix, which Debian 12's Vulkan headers (1.3.239)
 * do not have yet: its names and structures from the registry
 */
#define VK_KHR_COOP_NAME	"VK_KHR_cooperative_matrix"
#define VK_ST_KHR_COOP_FEATURES	((VkStructureType)1000506000)
#define VK_ST_KHR_COOP_PROPS	((VkStructureType)1000506001)

struct vk_coop_features_khr {
	VkStructureType sType;
	void *pNext;
	VkBool32 cooperativeMatrix;
	VkBool32 cooperativeMatrixRobustBufferAccess;
};

struct vk_coop_props_khr {
	VkStructureType sType;
	void *pNext;
	uint32_t MSize, NSize, KSize;
	VkComponentTypeNV AType, BType, CType, ResultType;
	VkBool32 saturatingAccumulation;
	VkScopeNV scope;
};

typedef VkResult (*vk_coop_props_khr_fn)(VkPhysicalDevice, uint32_t *,
					 struct vk_coop_props_khr *);

/* one kind of cooperative matrix product, of either extension */
struct coop_kind {
	uint32_t m, n, k;
	int f16f32;		/* f16 x f16 + f32 -> f32, subgroup scope */
};

/* @c from one listed kind: its sizes, and whether matmul_coop could use it */
static void coop_kind_set(struct coop_kind *c, uint32_t m, uint32_t n,
			  uint32_t k, VkComponentTypeNV a, VkComponentTypeNV b,
			  VkComponentTypeNV cin, VkComponentTypeNV d,
			  VkBool32 sat, VkScopeNV scope)
{
	c->m = m;
	c->n = n;
	c->k = k;
	c->f16f32 = a == VK_COMPONENT_TYPE_FLOAT16_NV &&
		    b == VK_COMPONENT_TYPE_FLOAT16_NV &&
		    cin == VK_COMPONENT_TYPE_FLOAT32_NV &&
		    d == VK_COMPONENT_TYPE_FLOAT32_NV && !sat &&
		    scope == VK_SCOPE_SUBGROUP_NV;
}

/*
 * The kinds @phys lists through @ext (VK_COOP_NV or _KHR) into a new
 * *@out; returns how many, 0 on any failure
 */
static uint32_t coop_kinds(VkInstance instance, VkPhysicalDevice phys,
			   int ext, struct coop_kind **out)
{
	PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get_nv;
	vk_coop_props_khr_fn get_khr;
	VkCooperativeMatrixPropertiesNV *nv = NULL;
	struct vk_coop_props_khr *khr = NULL;
	uint32_t n = 0, i;

	*out = NULL;
	get_nv = (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)
		vkGetInstanceProcAddr(instance,
			"vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
	get_khr = (vk_coop_props_khr_fn)vkGetInstanceProcAddr(instance,
			"vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
	if (ext == VK_COOP_NV ? !get_nv : !get_khr)
		return 0;
	if ((ext == VK_COOP_NV ? get_nv(phys, &n, NULL) :
				 get_khr(phys, &n, NULL)) != VK_SUCCESS || !n)
		return 0;
	*out = calloc(n, sizeof(**out));
	if (ext == VK_COOP_NV)
		nv = calloc(n, sizeof(*nv));
	else
		khr = calloc(n, sizeof(*khr));
	if (!*out || (!nv && !khr))
		goto fail;
	for (i = 0; i < n; i++) {
		if (nv)
			nv[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
		else
			khr[i].sType = VK_ST_KHR_COOP_PROPS;
	}
	/* VK_INCOMPLETE with fewer than asked: those it wrote */
	if ((nv ? get_nv(phys, &n, nv) : get_khr(phys, &n, khr)) < 0)
		goto fail;
	for (i = 0; i < n; i++) {
		if (nv)
			coop_kind_set(&(*out)[i], nv[i].MSize, nv[i].NSize,
				      nv[i].KSize, nv[i].AType, nv[i].BType,
				      nv[i].CType, nv[i].DType, VK_FALSE,
				      nv[i].scope);
		else
			coop_kind_set(&(*out)[i], khr[i].MSize, khr[i].NSize,
				      khr[i].KSize, khr[i].AType, khr[i].BType,
				      khr[i].CType, khr[i].ResultType,
				      khr[i].saturatingAccumulation,
				      khr[i].scope);
	}
	free(nv);
	free(khr);
	return n;
fail:
	free(nv);
	free(khr);
	free(*out);
	*out = NULL;
	return 0;
}

/*
 * Does @phys have matmul_coop's 16 x 16 x 16 through @ext? Then its
 * f16 x f16 + f32 sizes go to @buf ("16x16x16,16x8x16").
 */
static int coop_has(VkInstance instance, VkPhysicalDevice phys, int ext,
		    char *buf, size_t size)
{
	struct coop_kind *c;
	uint32_t n = coop_kinds(instance, phys, ext, &c), i;
	size_t len = 0;
	int has = 0;

	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		if (!c[i].f16f32)
			continue;
		if (c[i].m == GPO_MM_COOP_M && c[i].n == GPO_MM_COOP_N &&
		    c[i].k == GPO_MM_COOP_K)
			has = 1;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len,
						"%s%ux%ux%u", len ? "," : "",
						c[i].m, c[i].n, c[i].k);
	}
	free(c);
	return has;
}

/*
 * coop_probe - the f16 x f16 + f32 cooperative matrices of @phys
 * (subgroup scope) into @vd->coop_kinds and @vd->coop, and
 * @info->coopmat: "khr:f16*f16+f32:16x16x16,16x8x16" for the kind
 * matmul_coop uses (KHR where the device has both: coopkhr.c says why),
 * or "none". A device has matmul_coop when it lists GPO_MM_COOP_M x _N x
 * _K through VK_KHR_cooperative_matrix or VK_NV_cooperative_matrix, has
 * subgroups of 32, and can do f16 arithmetic (the shader's shared tiles
 * are float16_t) under the Vulkan memory model (glslang declares it for
 * any cooperative matrix); those two through their extensions, as the
 * instance asks for Vulkan 1.1, where they are not core. It must also
 * round f32 to f16 to nearest even and keep f16 subnormals when a shader
 * says so (VK_KHR_shader_float_controls: RoundingModeRTE and
 * DenormPreserve for 16 bits), which is how the shader converts f32
 * operands: the hardware's conversion, bit for bit the integer one.
 * @instance VK_NULL_HANDLE (an adopted device, whose extensions are the
 * caller's): none.
 */
static void coop_probe(VkInstance instance, VkPhysicalDevice phys,
		       const VkExtensionProperties *ext, uint32_t next,
		       struct vk_dev *vd, struct gpo_device_info *info)
{
	int nv = has_ext(ext, next, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
	int khr = has_ext(ext, next, VK_KHR_COOP_NAME);
	VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
	};
	VkPhysicalDeviceShaderFloat16Int8Features f16 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
		.pNext = &vmm,
	};
	VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
	};
	struct vk_coop_features_khr cmk = {
		.sType = VK_ST_KHR_COOP_FEATURES,
	};
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &f16,
	};
	VkPhysicalDeviceFloatControlsProperties fc = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FLOAT_CONTROLS_PROPERTIES,
	};
	VkPhysicalDeviceSubgroupProperties sg = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
		.pNext = &fc,
	};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &sg,
	};
	char sizes[2][sizeof(info->coopmat)];

	snprintf(info->coopmat, sizeof(info->coopmat), "none");
	vd->coop_kinds = 0;
	vd->coop = VK_COOP_NONE;
	if (instance == VK_NULL_HANDLE || (!nv && !khr) ||
	    !has_ext(ext, next, VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME) ||
	    !has_ext(ext, next, VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME) ||
	    !has_ext(ext, next, VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME))
		return;
	/* a structure goes in the chain only where its extension is */
	if (nv) {
		cm.pNext = f2.pNext;
		f2.pNext = &cm;
	}
	if (khr) {
		cmk.pNext = f2.pNext;
		f2.pNext = &cmk;
	}
	vkGetPhysicalDeviceFeatures2(phys, &f2);
	vkGetPhysicalDeviceProperties2(phys, &p2);
	if (!f16.shaderFloat16 || !vmm.vulkanMemoryModel ||
	    sg.subgroupSize != 32 || !fc.shaderRoundingModeRTEFloat16 ||
	    !fc.shaderDenormPreserveFloat16)
		return;
	if (nv && cm.cooperativeMatrix &&
	    coop_has(instance, phys, VK_COOP_NV, sizes[0], sizeof(sizes[0])))
		vd->coop_kinds |= 1 << VK_COOP_NV;
	if (khr && cmk.cooperativeMatrix &&
	    coop_has(instance, phys, VK_COOP_KHR, sizes[1], sizeof(sizes[1])))
		vd->coop_kinds |= 1 << VK_COOP_KHR;
	if (vd->coop_kinds & (1 << VK_COOP_KHR)) {
		vd->coop = VK_COOP_KHR;
		snprintf(info->coopmat, sizeof(info->coopmat),
			 "khr:f16*f16+f32:%.70s", sizes[1]);
	} else if (vd->coop_kinds & (1 << VK_COOP_NV)) {
		vd->coop = VK_COOP_NV;
		snprintf(info->coopmat, sizeof(info->coopmat),
			 "nv:f16*f16+f32:%.70s", sizes[0]);
	}
}

/*
 * The attention kernels' step (attention.glsl's GPO_ATTN_KS): the larger
 * where shared memory holds it, 0 where not even the smaller fits (the
 * attention ops then fail with -ENODEV; everything else runs)
 */
static uint32_t attn_ks(uint32_t shared_max)
{
	if (shared_max >= GPO_ATTN_LOCAL(GPO_ATTN_KS_BIG))
		return GPO_ATTN_KS_BIG;
	if (shared_max >= GPO_ATTN_LOCAL(GPO_ATTN_KS_SMALL))
		return GPO_ATTN_KS_SMALL;
	return 0;
}

/*
 * describe - what probe and adopt learn of physical device @phys: a new
 * vk_dev in *@out and its @info. @what names it in messages ("vulkan
 * device 2"); @qfam is the queue family to use, UINT32_MAX to choose one.
 * Returns 0, or -errno with a message.
 */
static int describe(VkInstance instance, VkPhysicalDevice phys,
		    const char *what, uint32_t qfam, struct vk_dev **out,
		    struct gpo_device_info *info)
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
	uint32_t next = 0, nq = 0, i;
	int has_drv, has_sm, has_amd, heap, ret;
	struct vk_dev *vd;
	VkResult r;

	vkGetPhysicalDeviceProperties(phys, &p2.properties);
	if (p2.properties.apiVersion < VK_API_VERSION_1_1)
		return gpo__err(-ENODEV, "%s (%.100s): Vulkan %u.%u, 1.1 needed",
			       what, p2.properties.deviceName,
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
		ret = gpo__err(gpo__vk_errno(r), "%s (%.100s): vkEnumerateDeviceExtensionProperties: %s",
			      what, p2.properties.deviceName,
			      gpo__vk_result_name(r));
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
	vd->fma_fused = fma_fused(&p2.properties, has_drv ? &drv : NULL);
	vd->u8_sg = u8_subgroups(phys);
	vd->max_alloc = m3.maxMemoryAllocationSize;
	vkGetPhysicalDeviceMemoryProperties(phys, &vd->memprops);
	vd->has_push_desc = has_ext(ext, next,
				    VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
	vd->has_budget = has_ext(ext, next,
				 VK_EXT_MEMORY_BUDGET_EXTENSION_NAME);
	vd->has_ext_fd = has_ext(ext, next,
				 VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME);

	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
	qf = calloc(nq ? nq : 1, sizeof(*qf));
	if (!qf) {
		ret = gpo__err(-ENOMEM, "out of memory");
		goto out_free_vd;
	}
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
	if (qfam == UINT32_MAX)
		qfam = pick_queue(qf, nq);
	if (qfam >= nq || !(qf[qfam].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
		ret = gpo__err(-ENODEV, "%s (%.100s): no compute queue",
			      what, p2.properties.deviceName);
		goto out_free_vd;
	}
	vd->qfam = qfam;
	vd->ts_bits = qf[qfam].timestampValidBits;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "%.127s",
		 p2.properties.deviceName);
	vendor_name(p2.properties.vendorID, info->vendor,
		    sizeof(info->vendor));
	driver_version(&p2.properties, has_drv ? drv.driverInfo : NULL,
		       info->driver, sizeof(info->driver));
	for (i = 0; i < VK_UUID_SIZE; i++)
		snprintf(info->uuid + 2 * i, 3, "%02x", idp.deviceUUID[i]);
	info->type = device_type(p2.properties.deviceType);
	coop_probe(instance, phys, ext, next, vd, info);
	if (has_sm)
		info->compute_units = sm.shaderSMCount;
	else if (has_amd)
		info->compute_units = amd.shaderEngineCount *
				      amd.shaderArraysPerEngineCount *
				      amd.computeUnitsPerShaderArray;
	heap = gpo__vk_main_heap(&vd->memprops);
	info->mem_total_bytes = heap < 0 ? 0 :
				vd->memprops.memoryHeaps[heap].size;
	pthread_mutex_init(&vd->lock, NULL);
	*out = vd;
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

/*
 * probe_one - describe physical device @phys and register it
 * Returns 0, or -errno with a message (the caller logs and skips it).
 */
static int probe_one(struct gpo_ctx *ctx, struct vk_inst *inst,
		     VkPhysicalDevice phys, uint32_t index)
{
	struct gpo_device_info info;
	struct vk_dev *vd;
	char what[32];
	int ret;

	snprintf(what, sizeof(what), "vulkan device %u", index);
	ret = describe(inst->instance, phys, what, UINT32_MAX, &vd, &info);
	if (ret)
		return ret;
	vd->inst = inst;
	inst->refs++;
	ret = gpo__ctx_add_device(ctx, &gpo__vulkan_backend_ops, &info, vd);
	if (ret) {
		inst->refs--;
		pthread_mutex_destroy(&vd->lock);
		free(vd);
		return gpo__err(ret, "out of memory");
	}
	return 0;
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
		return gpo__err(gpo__vk_errno(r), "vulkan: vkCreateInstance: %s",
			       gpo__vk_result_name(r));
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
		ret = gpo__err(gpo__vk_errno(r), "vulkan: vkEnumeratePhysicalDevices: %s",
			      gpo__vk_result_name(r));
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

/* ---- open and close ------------------------------------------------------ */

static void parse_debug(struct vk_debug *dbg)
{
	const char *env = getenv("GPUOPT_VULKAN_DEBUG");
	char buf[256], *tok, *save;

	memset(dbg, 0, sizeof(*dbg));
	dbg->spin_us = -1;
	dbg->maplimit = UINT64_MAX;
	if (!env)
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (!strcmp(tok, "nopush"))
			dbg->nopush = 1;
		else if (!strcmp(tok, "nomap"))
			dbg->nomap = 1;
		else if (!strcmp(tok, "nograph"))
			dbg->nograph = 1;
		else if (!strncmp(tok, "staging=", 8))
			dbg->staging = strtoull(tok + 8, NULL, 0);
		else if (!strncmp(tok, "range=", 6))
			dbg->range = strtoull(tok + 6, NULL, 0);
		else if (!strncmp(tok, "groups=", 7))
			dbg->groups = strtoull(tok + 7, NULL, 0);
		else if (!strncmp(tok, "spin=", 5))
			dbg->spin_us = strtoll(tok + 5, NULL, 0);
		else if (!strncmp(tok, "maplimit=", 9))
			dbg->maplimit = strtoull(tok + 9, NULL, 0);
		else if (!strcmp(tok, "nofma"))
			dbg->nofma = 1;
		else if (!strncmp(tok, "shared=", 7))
			dbg->shared = (uint32_t)strtoul(tok + 7, NULL, 0);
		else if (!strcmp(tok, "coop_nv"))
			dbg->coop_nv = 1;
	}
}

/* Undo open; a partly opened device too. Leaves what probe set. */
static void teardown(struct gpo_device *dev)
{
	struct vk_dev *vd = dev->priv;

	if (vd->device) {
		/* the caller's device may be busy with work not ours */
		if (vd->adopted)
			vkQueueWaitIdle(vd->queue);
		else
			vkDeviceWaitIdle(vd->device);
		/* saves the pipeline cache if pipelines were built */
		gpo__vk_destroy_pipelines(dev);
		gpo__vk_destroy_layout(vd);
		gpo__vk_destroy_buffers(vd);
		gpo__vk_destroy_commands(vd);
		if (!vd->adopted)
			vkDestroyDevice(vd->device, NULL);
	}
	free(vd->desc_tab);
	free(vd->fd_bufs);
	memset((char *)vd + offsetof(struct vk_dev, opened), 0,
	       sizeof(*vd) - offsetof(struct vk_dev, opened));
}

/* does the embedded matmul_coop module rewrite for KHR? (coopkhr.c) */
static int khr_module_ok(void)
{
	const struct embedded_file *f;
	uint32_t *w, *o = NULL;
	size_t n;
	int ret;

	f = gpo__embedded_find(gpo__embedded_spv, "matmul_coop.f32");
	if (!f || f->size % 4)
		return 0;
	/* words, aligned: the embedded bytes promise no alignment */
	w = malloc(f->size);
	if (!w)
		return 0;
	memcpy(w, f->data, f->size);
	ret = gpo__spv_coop_khr(w, f->size / 4, &o, &n);
	free(o);
	free(w);
	return !ret;
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
	const char *exts[7];
	/*
	 * matmul_coop: cooperative matrices, float16_t arithmetic, the
	 * Vulkan memory model, float controls (coop_probe)
	 */
	VkPhysicalDeviceVulkanMemoryModelFeatures vmm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES,
		.vulkanMemoryModel = VK_TRUE,
	};
	VkPhysicalDeviceShaderFloat16Int8Features f16 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES,
		.pNext = &vmm,
		.shaderFloat16 = VK_TRUE,
	};
	VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
		.pNext = &f16,
		.cooperativeMatrix = VK_TRUE,
	};
	struct vk_coop_features_khr cmk = {
		.sType = VK_ST_KHR_COOP_FEATURES,
		.pNext = &f16,
		.cooperativeMatrix = VK_TRUE,
	};
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.ppEnabledExtensionNames = exts,
	};
	int push = vd->has_push_desc && !dbg->nopush;
	VkResult r;

	/*
	 * KHR where the device has it and matmul_coop's module rewrites
	 * (coopkhr.c), unless told coop_nv
	 */
	vd->coop = VK_COOP_NONE;
	if ((vd->coop_kinds & (1 << VK_COOP_KHR)) && khr_module_ok() &&
	    !(dbg->coop_nv && (vd->coop_kinds & (1 << VK_COOP_NV))))
		vd->coop = VK_COOP_KHR;
	else if (vd->coop_kinds & (1 << VK_COOP_NV))
		vd->coop = VK_COOP_NV;
	if (vd->coop == VK_COOP_KHR)
		dci.pNext = &cmk;
	else if (vd->coop == VK_COOP_NV)
		dci.pNext = &cm;
	if (push)
		exts[dci.enabledExtensionCount++] =
			VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
	if (vd->has_budget)
		exts[dci.enabledExtensionCount++] =
			VK_EXT_MEMORY_BUDGET_EXTENSION_NAME;
	/* memory another VkDevice shares by fd (GPO_EXTBUF_VK_FD) */
	if (vd->has_ext_fd)
		exts[dci.enabledExtensionCount++] =
			VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
	if (vd->coop) {
		exts[dci.enabledExtensionCount++] = vd->coop == VK_COOP_KHR ?
			VK_KHR_COOP_NAME :
			VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
		exts[dci.enabledExtensionCount++] =
			VK_KHR_SHADER_FLOAT16_INT8_EXTENSION_NAME;
		exts[dci.enabledExtensionCount++] =
			VK_KHR_VULKAN_MEMORY_MODEL_EXTENSION_NAME;
		exts[dci.enabledExtensionCount++] =
			VK_KHR_SHADER_FLOAT_CONTROLS_EXTENSION_NAME;
	}
	r = vkCreateDevice(vd->phys, &dci, NULL, &vd->device);
	if (r != VK_SUCCESS)
		return gpo__vk_fail(dev, r, "vkCreateDevice");
	vd->ext_fd = vd->has_ext_fd;
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

static int check_limits(struct gpo_device *dev)
{
	const VkPhysicalDeviceLimits *l =
		&((struct vk_dev *)dev->priv)->props.limits;

	if (l->maxComputeWorkGroupSize[0] < GPO_WG_SIZE ||
	    l->maxComputeWorkGroupInvocations < GPO_WG_SIZE ||
	    l->maxComputeSharedMemorySize < 2 * 4 * GPO_WG_SIZE ||
	    l->maxPerStageDescriptorStorageBuffers < OP_MAX_BUF ||
	    l->maxPushConstantsSize < GPO_ARGS_MAX)
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
	if (!ret && vd->adopted) {
		/*
		 * The caller's device, with the extensions it chose: none
		 * assumed, so descriptors come from the set cache and fds
		 * are not imported
		 */
		vd->device = vd->adopted_device;
		vd->queue = vd->adopted_queue;
	} else if (!ret) {
		ret = create_device(dev, &dbg);
	}
	if (!ret)
		ret = gpo__vk_create_commands(dev);
	if (!ret)
		ret = gpo__vk_create_layout(dev);
	if (!ret)
		ret = gpo__vk_create_buffers(dev, &dbg);
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
	/* group ops: rows of this many groups (group.glsl) */
	vd->group_row = l->maxComputeWorkGroupCount[0] < GROUP_DIM_MAX ?
			l->maxComputeWorkGroupCount[0] : GROUP_DIM_MAX;
	if (vd->group_row > vd->max_groups)
		vd->group_row = vd->max_groups;
	vd->spin_ns = vd->props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ?
		      0 : SPIN_NS;
	if (dbg.spin_us >= 0)
		vd->spin_ns = (uint64_t)dbg.spin_us * 1000;
	vd->nograph = dbg.nograph;
	vd->fma = vd->fma_fused && !dbg.nofma ? VK_TRUE : VK_FALSE;
	vd->shared_max = l->maxComputeSharedMemorySize;
	if (dbg.shared && dbg.shared < vd->shared_max)
		vd->shared_max = dbg.shared;
	vd->attn_ks = attn_ks(vd->shared_max);
	vd->opened = 1;

	/* the dummy is bound for absent buffers: keep it zero */
	ret = gpo__vk_batch_begin(dev);
	if (!ret) {
		vkCmdFillBuffer(vd->cmd, vd->dummy.buffer, 0, VK_DUMMY_BYTES,
				0);
		ret = gpo__vk_batch_flush(dev);
	}
	if (ret)
		goto out_teardown;
	vd->ns = 0;
	dev->mem_align = l->minStorageBufferOffsetAlignment > 256 ?
			 l->minStorageBufferOffsetAlignment : 256;
	dev->max_alloc = vd->max_alloc;
	dev->max_binding = vd->max_range;
	/* llvmpipe ends loops silently past LP_MAX_TGSI_LOOP_ITERATIONS */
	if (!strncmp(vd->props.deviceName, "llvmpipe", 8))
		dev->loop_limit = 65535;
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

/* is @phys one of @instance's physical devices? */
static int of_instance(VkInstance instance, VkPhysicalDevice phys)
{
	VkPhysicalDevice *all;
	uint32_t n = 0, i;
	int found = 0;
	VkResult r;

	r = vkEnumeratePhysicalDevices(instance, &n, NULL);
	if (r != VK_SUCCESS || !n)
		return 0;
	all = calloc(n, sizeof(*all));
	if (!all)
		return -ENOMEM;
	r = vkEnumeratePhysicalDevices(instance, &n, all);
	for (i = 0; (r == VK_SUCCESS || r == VK_INCOMPLETE) && i < n; i++)
		found |= all[i] == phys;
	free(all);
	return found;
}

int gpo__vulkan_adopt(struct gpo_ctx *ctx, const struct gpo_vulkan_handles *h,
		      struct gpo_device **out)
{
	VkPhysicalDevice phys = h->physical_device;
	VkQueueFamilyProperties *qf;
	VkPhysicalDeviceProperties props;
	struct gpo_device_info info;
	char driver[sizeof(info.driver)];
	struct vk_dev *vd;
	uint32_t nq = 0;
	int ret;

	if (!h->instance || !phys || !h->device || !h->queue)
		return gpo__err(-EINVAL, "gpo_device_adopt_vulkan: a NULL handle");
	ret = of_instance(h->instance, phys);
	if (ret <= 0)
		return ret ? gpo__err(ret, "out of memory") :
		       gpo__err(-EINVAL, "gpo_device_adopt_vulkan: the physical device is not one of the instance's");
	vkGetPhysicalDeviceProperties(phys, &props);
	if (props.apiVersion < VK_API_VERSION_1_1)
		return gpo__err(-EINVAL, "%.100s: Vulkan %u.%u, 1.1 needed",
			       props.deviceName,
			       VK_API_VERSION_MAJOR(props.apiVersion),
			       VK_API_VERSION_MINOR(props.apiVersion));
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, NULL);
	if (h->queue_family >= nq)
		return gpo__err(-EINVAL, "%.100s: queue family %u of %u",
			       props.deviceName, h->queue_family, nq);
	qf = calloc(nq, sizeof(*qf));
	if (!qf)
		return gpo__err(-ENOMEM, "out of memory");
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
	ret = qf[h->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT;
	free(qf);
	if (!ret)
		return gpo__err(-EINVAL, "%.100s: queue family %u cannot compute",
			       props.deviceName, h->queue_family);

	ret = describe(VK_NULL_HANDLE, phys, "adopted vulkan device",
		       h->queue_family, &vd, &info);
	if (ret)
		return ret;
	/* which extensions the caller enabled is not known: none */
	vd->has_push_desc = 0;
	vd->has_ext_fd = 0;
	vd->adopted = 1;
	vd->adopted_device = h->device;
	vd->adopted_queue = h->queue;
	snprintf(driver, sizeof(driver), "%s", info.driver);
	snprintf(info.driver, sizeof(info.driver), "adopted, %.50s", driver);
	ret = gpo__ctx_adopt_device(ctx, &gpo__vulkan_backend_ops, &info, vd,
				    out);
	if (ret) {
		pthread_mutex_destroy(&vd->lock);
		free(vd);
	}
	return ret;
}

const struct backend_ops gpo__vulkan_backend_ops = {
	.name = "vulkan",
	.probe = vk_probe,
	.open = vk_open,
	.close = vk_close,
	.alloc = gpo__vk_alloc,
	.free = gpo__vk_free,
	.write = gpo__vk_interop_write,
	.read = gpo__vk_read,
	.host_alloc = gpo__vk_host_alloc,
	.host_free = gpo__vk_host_free,
	.supports = gpo__vk_supports,
	.launch = gpo__vk_launch,
	.wait = gpo__vk_wait,
	.submit = gpo__vk_submit,
	.graph_begin = gpo__vk_graph_begin,
	.graph_end = gpo__vk_graph_end,
	.graph_free = gpo__vk_graph_free,
	.mem_free = gpo__vk_mem_free,
	.import = gpo__vk_import,
	.release = gpo__vk_release,
};

