// SPDX-License-Identifier: MIT
/*
 * bench_vkstats - what the driver made of compute shaders: the statistics
 * of VK_KHR_pipeline_executable_properties (registers, shared and local
 * memory, spills, instruction counts: whatever the driver reports)
 *
 *   bench_vkstats [-d INDEX] [-i] [-s ID=VALUE]... FILE.spv...
 *
 * Each module becomes a compute pipeline on the Vulkan device INDEX
 * (default: the first that has the extension), in a layout of 8 storage
 * buffers and 256 bytes of push constants, the superset of what gpuopt's
 * shaders declare (the .ab variants' argument buffer is binding 7 or
 * less). -i: also the driver's internal representations (its assembly,
 * where it gives one). -s: specialization constant ID (a 32-bit one: a
 * uint, or a bool as 0 or 1) set to VALUE, as the library sets it
 * (backend/vulkan/pipeline.c: e.g. -s 3=0 for an attention kernel's
 * pipeline of heads of 64 or fewer). Exit 77 where no device has the
 * extension.
 *
 * It tells a kernel that spills or runs at one workgroup per
 * multiprocessor from the registers it holds, without a profiler that
 * reads Vulkan.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SPEC	8	/* -s constants */

#ifndef GPO_HAVE_VULKAN
int main(void)
{
	fprintf(stderr, "bench_vkstats: built without Vulkan\n");
	return 77;
}
#else
#include <vulkan/vulkan.h>

#define NBIND	8u
#define PUSH	256u

static void *slurp(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	void *data = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !(n % 4) &&
	    !fseek(f, 0, SEEK_SET)) {
		data = malloc(n);
		if (data && fread(data, 1, n, f) != (size_t)n) {
			free(data);
			data = NULL;
		}
		*size = n;
	}
	fclose(f);
	return data;
}

static void print_stat(const VkPipelineExecutableStatisticKHR *s)
{
	printf("  %-40s ", s->name);
	switch (s->format) {
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
		printf("%s\n", s->value.b32 ? "yes" : "no");
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
		printf("%lld\n", (long long)s->value.i64);
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
		printf("%llu\n", (unsigned long long)s->value.u64);
		break;
	case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
		printf("%g\n", s->value.f64);
		break;
	default:
		printf("?\n");
	}
}

/* the statistics (and with @ir the representations) of one pipeline */
static int report(VkDevice dev, VkPipeline pipe, int ir)
{
	PFN_vkGetPipelineExecutablePropertiesKHR props_fn =
		(PFN_vkGetPipelineExecutablePropertiesKHR)vkGetDeviceProcAddr(
			dev, "vkGetPipelineExecutablePropertiesKHR");
	PFN_vkGetPipelineExecutableStatisticsKHR stats_fn =
		(PFN_vkGetPipelineExecutableStatisticsKHR)vkGetDeviceProcAddr(
			dev, "vkGetPipelineExecutableStatisticsKHR");
	PFN_vkGetPipelineExecutableInternalRepresentationsKHR ir_fn =
		(PFN_vkGetPipelineExecutableInternalRepresentationsKHR)
		vkGetDeviceProcAddr(dev,
			"vkGetPipelineExecutableInternalRepresentationsKHR");
	VkPipelineInfoKHR pi = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
		.pipeline = pipe,
	};
	VkPipelineExecutablePropertiesKHR *ex;
	uint32_t nex = 0, e;

	if (!props_fn || !stats_fn || !ir_fn)
		return -1;
	if (props_fn(dev, &pi, &nex, NULL) != VK_SUCCESS)
		return -1;
	ex = calloc(nex ? nex : 1, sizeof(*ex));
	if (!ex)
		return -1;
	for (e = 0; e < nex; e++)
		ex[e].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR;
	props_fn(dev, &pi, &nex, ex);
	for (e = 0; e < nex; e++) {
		VkPipelineExecutableInfoKHR ei = {
			.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
			.pipeline = pipe,
			.executableIndex = e,
		};
		VkPipelineExecutableStatisticKHR *st;
		uint32_t nst = 0, i;

		printf(" executable %u: %s (%s), subgroup %u\n", e, ex[e].name,
		       ex[e].description, ex[e].subgroupSize);
		stats_fn(dev, &ei, &nst, NULL);
		st = calloc(nst ? nst : 1, sizeof(*st));
		if (!st)
			break;
		for (i = 0; i < nst; i++)
			st[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR;
		stats_fn(dev, &ei, &nst, st);
		for (i = 0; i < nst; i++)
			print_stat(&st[i]);
		free(st);
		if (ir) {
			VkPipelineExecutableInternalRepresentationKHR *r;
			uint32_t nr = 0;

			ir_fn(dev, &ei, &nr, NULL);
			r = calloc(nr ? nr : 1, sizeof(*r));
			if (!r)
				break;
			for (i = 0; i < nr; i++)
				r[i].sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INTERNAL_REPRESENTATION_KHR;
			ir_fn(dev, &ei, &nr, r);
			for (i = 0; i < nr; i++) {
				r[i].pData = r[i].dataSize ?
					     malloc(r[i].dataSize) : NULL;
			}
			ir_fn(dev, &ei, &nr, r);
			for (i = 0; i < nr; i++) {
				printf(" -- %s (%s) --\n", r[i].name,
				       r[i].description);
				if (r[i].isText && r[i].pData)
					printf("%.*s\n", (int)r[i].dataSize,
					       (const char *)r[i].pData);
				free(r[i].pData);
			}
			free(r);
		}
	}
	free(ex);
	return 0;
}

static int has_ext(VkPhysicalDevice pd, const char *name)
{
	VkExtensionProperties *p;
	uint32_t n = 0, i;
	int found = 0;

	vkEnumerateDeviceExtensionProperties(pd, NULL, &n, NULL);
	p = calloc(n ? n : 1, sizeof(*p));
	if (!p)
		return 0;
	vkEnumerateDeviceExtensionProperties(pd, NULL, &n, p);
	for (i = 0; i < n; i++)
		found |= !strcmp(p[i].extensionName, name);
	free(p);
	return found;
}

int main(int argc, char **argv)
{
	const char *exts[8];
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.apiVersion = VK_API_VERSION_1_2,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};
	VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pef = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
		.pipelineExecutableInfo = VK_TRUE,
	};
	VkPhysicalDeviceVulkan12Features v12 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
		.pNext = &pef,
	};
	VkPhysicalDeviceVulkan11Features v11 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
		.pNext = &v12,
	};
	VkPhysicalDeviceFeatures2 f2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
		.pNext = &v11,
	};
	const float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	VkDescriptorSetLayoutBinding b[NBIND];
	VkDescriptorSetLayoutCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
		.bindingCount = NBIND,
		.pBindings = b,
	};
	VkPushConstantRange pcr = {
		.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		.size = PUSH,
	};
	VkPipelineLayoutCreateInfo lci = {
		.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
		.setLayoutCount = 1,
		.pushConstantRangeCount = 1,
		.pPushConstantRanges = &pcr,
	};
	VkInstance inst;
	VkPhysicalDevice pds[16], pd = VK_NULL_HANDLE;
	VkPhysicalDeviceProperties pp;
	VkDevice dev;
	VkDescriptorSetLayout dsl;
	VkPipelineLayout pl;
	uint32_t npd = 16, i, nexts = 0, sval[MAX_SPEC];
	VkSpecializationMapEntry smap[MAX_SPEC];
	VkSpecializationInfo spec = { .pMapEntries = smap, .pData = sval };
	int idx = -1, ir = 0, opt, a, ret = 0;
	unsigned int id, val;

	while ((opt = getopt(argc, argv, "d:is:")) != -1) {
		switch (opt) {
		case 'd':
			idx = atoi(optarg);
			break;
		case 'i':
			ir = 1;
			break;
		case 's':
			if (spec.mapEntryCount == MAX_SPEC ||
			    sscanf(optarg, "%u=%u", &id, &val) != 2) {
				fprintf(stderr, "bench_vkstats: -s %s: ID=VALUE, at most %d\n",
					optarg, MAX_SPEC);
				return 2;
			}
			smap[spec.mapEntryCount] = (VkSpecializationMapEntry){
				.constantID = id,
				.offset = 4 * spec.mapEntryCount,
				.size = 4,
			};
			sval[spec.mapEntryCount++] = val;
			spec.dataSize = 4 * spec.mapEntryCount;
			break;
		default:
			fprintf(stderr, "usage: bench_vkstats [-d INDEX] [-i] [-s ID=VALUE]... FILE.spv...\n");
			return 2;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "usage: bench_vkstats [-d INDEX] [-i] [-s ID=VALUE]... FILE.spv...\n");
		return 2;
	}
	if (vkCreateInstance(&ici, NULL, &inst) != VK_SUCCESS) {
		fprintf(stderr, "bench_vkstats: no Vulkan instance\n");
		return 77;
	}
	if (vkEnumeratePhysicalDevices(inst, &npd, pds) < 0)
		npd = 0;
	for (i = 0; i < npd; i++) {
		if ((idx < 0 || (uint32_t)idx == i) &&
		    has_ext(pds[i], VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) {
			pd = pds[i];
			break;
		}
	}
	if (pd == VK_NULL_HANDLE) {
		fprintf(stderr, "bench_vkstats: no device with %s\n",
			VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
		vkDestroyInstance(inst, NULL);
		return 77;
	}
	vkGetPhysicalDeviceProperties(pd, &pp);
	printf("# %s, driver %u\n", pp.deviceName, pp.driverVersion);
	/* what matmul_coop needs, where the device has it */
	vkGetPhysicalDeviceFeatures2(pd, &f2);
	pef.pipelineExecutableInfo = VK_TRUE;
	exts[nexts++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
	if (has_ext(pd, "VK_NV_cooperative_matrix"))
		exts[nexts++] = "VK_NV_cooperative_matrix";
	{
		VkDeviceCreateInfo dci2 = {
			.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
			.pNext = &f2,
			.queueCreateInfoCount = 1,
			.pQueueCreateInfos = &qci,
			.enabledExtensionCount = nexts,
			.ppEnabledExtensionNames = exts,
		};
		VkPhysicalDeviceCooperativeMatrixFeaturesNV cm = {
			.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
			.cooperativeMatrix = VK_TRUE,
		};

		if (nexts > 1) {
			cm.pNext = f2.pNext;
			f2.pNext = &cm;
		}
		f2.features.robustBufferAccess = VK_FALSE;
		if (vkCreateDevice(pd, &dci2, NULL, &dev) != VK_SUCCESS) {
			fprintf(stderr, "bench_vkstats: vkCreateDevice failed\n");
			vkDestroyInstance(inst, NULL);
			return 1;
		}
	}
	for (i = 0; i < NBIND; i++)
		b[i] = (VkDescriptorSetLayoutBinding){
			.binding = i,
			.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
			.descriptorCount = 1,
			.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
		};
	vkCreateDescriptorSetLayout(dev, &dci, NULL, &dsl);
	lci.pSetLayouts = &dsl;
	vkCreatePipelineLayout(dev, &lci, NULL, &pl);
	for (a = optind; a < argc; a++) {
		size_t size = 0;
		void *code = slurp(argv[a], &size);
		VkShaderModuleCreateInfo smci = {
			.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
			.codeSize = size,
			.pCode = code,
		};
		VkComputePipelineCreateInfo cpci = {
			.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
			.flags = VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR |
				 (ir ? VK_PIPELINE_CREATE_CAPTURE_INTERNAL_REPRESENTATIONS_BIT_KHR : 0),
			.stage = {
				.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
				.stage = VK_SHADER_STAGE_COMPUTE_BIT,
				.pName = "main",
				.pSpecializationInfo = &spec,
			},
			.layout = pl,
		};
		VkShaderModule sm;
		VkPipeline pipe;

		printf("%s\n", argv[a]);
		if (!code) {
			printf(" cannot read it\n");
			ret = 1;
			continue;
		}
		if (vkCreateShaderModule(dev, &smci, NULL, &sm) != VK_SUCCESS) {
			printf(" vkCreateShaderModule failed\n");
			free(code);
			ret = 1;
			continue;
		}
		cpci.stage.module = sm;
		if (vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cpci,
					     NULL, &pipe) != VK_SUCCESS) {
			printf(" vkCreateComputePipelines failed\n");
			ret = 1;
		} else {
			if (report(dev, pipe, ir))
				printf(" no statistics\n");
			vkDestroyPipeline(dev, pipe, NULL);
		}
		vkDestroyShaderModule(dev, sm, NULL);
		free(code);
	}
	vkDestroyPipelineLayout(dev, pl, NULL);
	vkDestroyDescriptorSetLayout(dev, dsl, NULL);
	vkDestroyDevice(dev, NULL);
	vkDestroyInstance(inst, NULL);
	return ret;
}
#endif
