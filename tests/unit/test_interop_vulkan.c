// SPDX-License-Identifier: MIT
/*
 * test_interop_vulkan.c - the caller's own Vulkan objects: a VkDevice the
 * test makes, adopted (gpo_device_adopt_vulkan), its VkBuffers bound as an
 * optimizer's parameters and gradients (gpo_optim_bind), and memory it
 * exports by fd imported by gpuopt's own device of the same physical
 * device. Steps on bound buffers give the same bytes as the same steps
 * through host buffers on gpuopt's own device; misuse is refused and
 * changes nothing.
 *
 * The test's buffers live in host-visible memory, so it writes gradients
 * and reads parameters through its own mapping: the bytes gpuopt's
 * kernels left in the caller's memory, not gpuopt's reading of them.
 *
 * Exits 77 when there is no Vulkan device, unless GPUOPT_TEST_REQUIRE
 * names vulkan.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <vulkan/vulkan.h>
#include "testutil.h"

#define MAX_PHYS	8
#define STEPS		20
#define OFFSET		256	/* the flat buffer in the caller's */

/* ---- the test's own Vulkan objects --------------------------------------- */

struct tvk {
	VkInstance inst;
	VkPhysicalDevice phys[MAX_PHYS];
	uint32_t nphys;
};

struct tdev {
	VkPhysicalDevice phys;
	VkPhysicalDeviceMemoryProperties mp;
	VkDevice dev;
	VkQueue queue;
	uint32_t qfam;
	int ext_fd;		/* VK_KHR_external_memory_fd enabled */
	char uuid[40];
};

struct tbuf {
	VkBuffer buf;
	VkDeviceMemory mem;
	uint64_t size;		/* allocationSize */
	uint32_t type;
	unsigned char *map;
};

static void phys_uuid(VkPhysicalDevice phys, char *uuid)
{
	VkPhysicalDeviceIDProperties idp = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES,
	};
	VkPhysicalDeviceProperties2 p2 = {
		.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
		.pNext = &idp,
	};
	uint32_t i;

	vkGetPhysicalDeviceProperties2(phys, &p2);
	for (i = 0; i < VK_UUID_SIZE; i++)
		snprintf(uuid + 2 * i, 3, "%02x", idp.deviceUUID[i]);
}

/* is gpuopt's device of @uuid one GPUOPT_TEST_DEVICES lets tests use? */
static int uuid_wanted(struct gpo_ctx *ctx, const char *uuid)
{
	struct gpo_device_info info;
	int i;

	for (i = 0; i < gpo_device_count(ctx); i++)
		if (!gpo_device_info(ctx, i, &info) &&
		    !strcmp(info.backend, "vulkan") &&
		    !strcmp(info.uuid, uuid))
			return tu_wanted(&info);
	return 0;
}

/* an instance of the test's own and the physical devices to test */
static void tvk_init(struct tvk *t)
{
	VkPhysicalDevice all[MAX_PHYS];
	struct gpo_ctx *ctx;
	char uuid[40];
	uint32_t n = MAX_PHYS, i;
	VkApplicationInfo app = {
		.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
		.pApplicationName = "test_interop_vulkan",
		.apiVersion = VK_API_VERSION_1_1,
	};
	VkInstanceCreateInfo ici = {
		.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
		.pApplicationInfo = &app,
	};

	ck_assert_int_eq(vkCreateInstance(&ici, NULL, &t->inst), VK_SUCCESS);
	ck_assert(vkEnumeratePhysicalDevices(t->inst, &n, all) >= 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	t->nphys = 0;
	for (i = 0; i < n; i++) {
		phys_uuid(all[i], uuid);
		if (uuid_wanted(ctx, uuid))
			t->phys[t->nphys++] = all[i];
	}
	gpo_ctx_free(ctx);
	ck_assert_msg(t->nphys > 0, "no Vulkan device GPUOPT_TEST_DEVICES wants");
}

static int has_ext(VkPhysicalDevice phys, const char *name)
{
	VkExtensionProperties ext[256];
	uint32_t n = 256, i;

	vkEnumerateDeviceExtensionProperties(phys, NULL, &n, ext);
	for (i = 0; i < n; i++)
		if (!strcmp(ext[i].extensionName, name))
			return 1;
	return 0;
}

/* a device with one compute queue; @want_fd: VK_KHR_external_memory_fd */
static void tdev_init(struct tdev *d, VkPhysicalDevice phys, int want_fd)
{
	VkQueueFamilyProperties qf[16];
	uint32_t nq = 16, i;
	const float prio = 1.0f;
	VkDeviceQueueCreateInfo qci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
		.queueCount = 1,
		.pQueuePriorities = &prio,
	};
	const char *ext = VK_KHR_EXTERNAL_MEMORY_FD_EXTENSION_NAME;
	VkDeviceCreateInfo dci = {
		.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
		.queueCreateInfoCount = 1,
		.pQueueCreateInfos = &qci,
		.ppEnabledExtensionNames = &ext,
	};

	memset(d, 0, sizeof(*d));
	d->phys = phys;
	vkGetPhysicalDeviceMemoryProperties(phys, &d->mp);
	phys_uuid(phys, d->uuid);
	vkGetPhysicalDeviceQueueFamilyProperties(phys, &nq, qf);
	d->qfam = UINT32_MAX;
	for (i = 0; i < nq && d->qfam == UINT32_MAX; i++)
		if (qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)
			d->qfam = i;
	ck_assert_uint_ne(d->qfam, UINT32_MAX);
	qci.queueFamilyIndex = d->qfam;
	d->ext_fd = want_fd && has_ext(phys, ext);
	dci.enabledExtensionCount = d->ext_fd;
	ck_assert_int_eq(vkCreateDevice(phys, &dci, NULL, &d->dev), VK_SUCCESS);
	vkGetDeviceQueue(d->dev, d->qfam, 0, &d->queue);
}

static void tdev_fini(struct tdev *d)
{
	vkDestroyDevice(d->dev, NULL);
}

static struct gpo_vulkan_handles handles(struct tvk *t, struct tdev *d)
{
	struct gpo_vulkan_handles h = {
		.instance = t->inst,
		.physical_device = d->phys,
		.device = d->dev,
		.queue = d->queue,
		.queue_family = d->qfam,
	};

	return h;
}

/*
 * A host-visible, coherent storage buffer of @bytes, mapped; exportable
 * as an opaque fd if @export
 */
static void tbuf_init(struct tdev *d, struct tbuf *b, uint64_t bytes,
		      int export)
{
	VkExternalMemoryBufferCreateInfo ebci = {
		.sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkBufferCreateInfo bci = {
		.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
		.pNext = export ? &ebci : NULL,
		.size = bytes,
		.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
			 VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
			 VK_BUFFER_USAGE_TRANSFER_DST_BIT,
		.sharingMode = VK_SHARING_MODE_EXCLUSIVE,
	};
	VkExportMemoryAllocateInfo emai = {
		.sType = VK_STRUCTURE_TYPE_EXPORT_MEMORY_ALLOCATE_INFO,
		.handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	VkMemoryAllocateInfo mai = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
		.pNext = export ? &emai : NULL,
	};
	const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
					   VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
	VkMemoryRequirements req;
	void *p;
	uint32_t i;

	memset(b, 0, sizeof(*b));
	ck_assert_int_eq(vkCreateBuffer(d->dev, &bci, NULL, &b->buf),
			 VK_SUCCESS);
	vkGetBufferMemoryRequirements(d->dev, b->buf, &req);
	mai.allocationSize = req.size;
	b->size = req.size;
	/* the first host-visible type that takes it (and exports, if asked) */
	b->type = UINT32_MAX;
	for (i = 0; i < d->mp.memoryTypeCount && b->type == UINT32_MAX; i++) {
		if (!(req.memoryTypeBits & (1u << i)) ||
		    (d->mp.memoryTypes[i].propertyFlags & want) != want)
			continue;
		mai.memoryTypeIndex = i;
		if (vkAllocateMemory(d->dev, &mai, NULL, &b->mem) == VK_SUCCESS)
			b->type = i;
	}
	ck_assert_msg(b->type != UINT32_MAX,
		      "no host-visible memory for a storage buffer%s",
		      export ? " that exports as an fd" : "");
	ck_assert_int_eq(vkBindBufferMemory(d->dev, b->buf, b->mem, 0),
			 VK_SUCCESS);
	ck_assert_int_eq(vkMapMemory(d->dev, b->mem, 0, VK_WHOLE_SIZE, 0, &p),
			 VK_SUCCESS);
	b->map = p;
}

static void tbuf_fini(struct tdev *d, struct tbuf *b)
{
	vkUnmapMemory(d->dev, b->mem);
	vkDestroyBuffer(d->dev, b->buf, NULL);
	vkFreeMemory(d->dev, b->mem, NULL);
}

static int tbuf_fd(struct tdev *d, struct tbuf *b)
{
	PFN_vkGetMemoryFdKHR get_fd = (PFN_vkGetMemoryFdKHR)
		vkGetDeviceProcAddr(d->dev, "vkGetMemoryFdKHR");
	VkMemoryGetFdInfoKHR gfi = {
		.sType = VK_STRUCTURE_TYPE_MEMORY_GET_FD_INFO_KHR,
		.memory = b->mem,
		.handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_OPAQUE_FD_BIT,
	};
	int fd = -1;

	ck_assert(get_fd);
	ck_assert_int_eq(get_fd(d->dev, &gfi, &fd), VK_SUCCESS);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static struct gpo_extbuf vkbuf(struct tbuf *b)
{
	struct gpo_extbuf eb = {
		.kind = GPO_EXTBUF_VK_BUFFER,
		.handle = b->buf,
		.fd = -1,
		.size = b->size,
		.offset = OFFSET,
		.dtype = GPO_F32,
	};

	return eb;
}

static int fd_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

/* gpuopt's own vulkan device of the physical device with @uuid */
static struct gpo_device *own_device(struct gpo_ctx *ctx, const char *uuid)
{
	struct gpo_device_info info;
	struct gpo_device *dev;
	int i;

	for (i = 0; i < gpo_device_count(ctx); i++) {
		ck_assert(!gpo_device_info(ctx, i, &info));
		if (strcmp(info.backend, "vulkan") || strcmp(info.uuid, uuid) ||
		    strstr(info.driver, "adopted"))
			continue;
		ck_assert_msg(!gpo_device_get(ctx, i, &dev), "%s: %s", info.id,
			      gpo_errmsg());
		return dev;
	}
	ck_abort_msg("no vulkan device of uuid %s", uuid);
	return NULL;
}

/* ---- the optimizers ------------------------------------------------------ */

#define NT	3	/* tensors, over two groups: padding between them */

struct model {
	uint64_t n[NT];
	uint64_t off[NT];	/* elements into the flat buffer */
	uint64_t total;		/* all the tensors' elements */
	float *p0, *g;		/* initial parameters, STEPS gradients */
};

static const char *const tname[NT] = { "w0", "w1", "b" };

static void model_init(struct model *m, uint64_t *s)
{
	int i;

	m->total = 0;
	for (i = 0; i < NT; i++) {
		/* odd sizes: tails of every kind */
		m->n[i] = 1 + 2 * (uint64_t)tu_rand(s, 100,
						     i == 2 ? 200 : 3000);
		m->total += m->n[i];
	}
	m->p0 = malloc(m->total * sizeof(float));
	m->g = malloc(STEPS * m->total * sizeof(float));
	ck_assert(m->p0 && m->g);
	tu_fill(m->p0, m->total, s, -1, 1);
	tu_fill(m->g, STEPS * m->total, s, -2, 2);
}

static void model_fini(struct model *m)
{
	free(m->p0);
	free(m->g);
}

/* tensor i's elements in the host arrays (not the flat buffer) */
static uint64_t host_off(const struct model *m, int i)
{
	uint64_t o = 0;
	int k;

	for (k = 0; k < i; k++)
		o += m->n[k];
	return o;
}

static struct gpo_optim *new_opt(struct gpo_device *dev, struct model *m,
				 const char *config)
{
	struct gpo_tensor_info ti;
	struct gpo_optim *opt;
	int i;

	ck_assert_msg(!gpo_optim_new(dev, GPO_ADAMW, &opt), "%s", gpo_errmsg());
	ck_assert_msg(!gpo_optim_configure(opt, 0, config), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_optim_add_group(opt), 1);
	ck_assert_msg(!gpo_optim_configure(opt, 1, "weight_decay=0"), "%s",
		      gpo_errmsg());
	for (i = 0; i < NT; i++) {
		ck_assert_msg(gpo_optim_add_tensor(opt, tname[i], 1, &m->n[i],
						   i == 2) == i, "%s", gpo_errmsg());
		ck_assert(!gpo_optim_tensor_info(opt, i, &ti));
		m->off[i] = ti.offset;
	}
	return opt;
}

/* every tensor of host array @x (total elements) into @slot */
static void write_all(struct gpo_optim *opt, const char *slot,
		      const struct model *m, const float *x)
{
	int i;

	for (i = 0; i < NT; i++)
		ck_assert_msg(!gpo_optim_write(opt, slot, tname[i],
					       x + host_off(m, i),
					       m->n[i] * sizeof(float)),
			      "%s %s: %s", slot, tname[i], gpo_errmsg());
}

static void read_all(struct gpo_optim *opt, const char *slot,
		     const struct model *m, float *x)
{
	int i;

	tu_poison(x, m->total);
	for (i = 0; i < NT; i++)
		ck_assert_msg(!gpo_optim_read(opt, slot, tname[i],
					      x + host_off(m, i),
					      m->n[i] * sizeof(float)),
			      "%s %s: %s", slot, tname[i], gpo_errmsg());
}

/* host array @x into the caller's mapped flat buffer at OFFSET */
static void put_map(unsigned char *map, const struct model *m, const float *x)
{
	int i;

	for (i = 0; i < NT; i++)
		memcpy(map + OFFSET + m->off[i] * sizeof(float),
		       x + host_off(m, i), m->n[i] * sizeof(float));
}

static void get_map(const unsigned char *map, const struct model *m, float *x)
{
	int i;

	tu_poison(x, m->total);
	for (i = 0; i < NT; i++)
		memcpy(x + host_off(m, i),
		       map + OFFSET + m->off[i] * sizeof(float),
		       m->n[i] * sizeof(float));
}

static void check_same(const float *got, const float *want, uint64_t n,
		       const char *what)
{
	uint64_t i;

	for (i = 0; i < n; i++)
		if (memcmp(&got[i], &want[i], sizeof(float)))
			ck_abort_msg("%s: element %llu is %a, host buffers give %a",
				     what, (unsigned long long)i, got[i],
				     want[i]);
}

/*
 * STEPS steps of @m on @bound (param and grad bound to the mapped memory
 * @pmap and @gmap) and on @plain (host buffers): the same bytes in
 * parameters and state
 */
static void run_both(struct gpo_optim *bound, unsigned char *pmap,
		     unsigned char *gmap, struct gpo_optim *plain,
		     struct model *m)
{
	size_t bytes = m->total * sizeof(float);
	float *got = malloc(bytes), *want = malloc(bytes);
	struct gpo_step_info info;
	int s;

	ck_assert(got && want);
	write_all(plain, "param", m, m->p0);
	for (s = 0; s < STEPS; s++) {
		const float *g = m->g + s * m->total;

		put_map(gmap, m, g);
		ck_assert_msg(!gpo_optim_step(bound, &info), "step %d: %s", s,
			      gpo_errmsg());
		ck_assert(!info.skipped);
		write_all(plain, "grad", m, g);
		ck_assert_msg(!gpo_optim_step(plain, &info), "%s", gpo_errmsg());
	}
	read_all(plain, "param", m, want);
	get_map(pmap, m, got);
	check_same(got, want, m->total, "parameters in the caller's memory");
	read_all(bound, "param", m, got);
	check_same(got, want, m->total, "parameters read by gpo_optim_read");
	read_all(plain, "exp_avg_sq", m, want);
	read_all(bound, "exp_avg_sq", m, got);
	check_same(got, want, m->total, "exp_avg_sq");
	free(got);
	free(want);
}

/* ---- tests --------------------------------------------------------------- */

static const char *const configs[] = {
	"lr=0.01 weight_decay=0.1",
	/* the norm sums the padding: zeroed in the caller's buffers */
	"lr=0.01 weight_decay=0.1 clip_norm=0.5",
};

START_TEST(test_interop_vulkan_adopted_steps_match_host_buffers)
{
	uint64_t s = tu_rng("adopted");
	struct gpo_device_info di;
	struct gpo_vulkan_handles h;
	struct gpo_device *adev, *own;
	struct gpo_optim *bound, *plain;
	struct gpo_extbuf eb;
	struct tbuf pb, gb;
	struct gpo_ctx *ctx;
	struct model m;
	struct tdev d;
	struct tvk t;
	uint32_t i;
	int c;

	tvk_init(&t);
	for (i = 0; i < t.nphys; i++)
		for (c = 0; c < 2; c++) {
			tdev_init(&d, t.phys[i], 0);
			ck_assert(!gpo_ctx_new(&ctx, 0));
			h = handles(&t, &d);
			ck_assert_msg(!gpo_device_adopt_vulkan(ctx, &h, &adev),
				      "%s", gpo_errmsg());
			ck_assert(!gpo_device_info(ctx, gpo_device_index(adev),
						   &di));
			ck_assert_msg(strstr(di.driver, "adopted"), "driver %s",
				      di.driver);
			ck_assert_str_eq(di.uuid, d.uuid);
			own = own_device(ctx, d.uuid);
			model_init(&m, &s);
			bound = new_opt(adev, &m, configs[c]);
			plain = new_opt(own, &m, configs[c]);
			tbuf_init(&d, &pb, OFFSET +
				  gpo_optim_buffer_bytes(bound, "param"), 0);
			tbuf_init(&d, &gb, OFFSET +
				  gpo_optim_buffer_bytes(bound, "grad"), 0);
			/* poison all: padding must be zeroed by gpuopt */
			tu_poison((float *)pb.map, pb.size / 4);
			tu_poison((float *)gb.map, gb.size / 4);
			put_map(pb.map, &m, m.p0);
			eb = vkbuf(&pb);
			ck_assert_msg(!gpo_optim_bind(bound, "param", &eb), "%s",
				      gpo_errmsg());
			eb = vkbuf(&gb);
			ck_assert_msg(!gpo_optim_bind(bound, "grad", &eb), "%s",
				      gpo_errmsg());
			run_both(bound, pb.map, gb.map, plain, &m);
			gpo_optim_free(bound);
			gpo_optim_free(plain);
			gpo_ctx_free(ctx);
			/* the caller's objects outlive gpuopt's use of them */
			tbuf_fini(&d, &pb);
			tbuf_fini(&d, &gb);
			model_fini(&m);
			tdev_fini(&d);
		}
	vkDestroyInstance(t.inst, NULL);
}
END_TEST

START_TEST(test_interop_vulkan_fd_import_matches_host_buffers)
{
	uint64_t s = tu_rng("fd");
	struct gpo_optim *bound, *plain;
	struct gpo_device *own;
	struct gpo_extbuf eb;
	struct gpo_ctx *ctx;
	struct tbuf pb, gb;
	struct model m;
	struct tdev d;
	struct tvk t;
	uint32_t i, done = 0;
	int fd;

	tvk_init(&t);
	for (i = 0; i < t.nphys; i++) {
		tdev_init(&d, t.phys[i], 1);
		if (!d.ext_fd) {
			tdev_fini(&d);
			continue;
		}
		ck_assert(!gpo_ctx_new(&ctx, 0));
		own = own_device(ctx, d.uuid);
		model_init(&m, &s);
		bound = new_opt(own, &m, configs[i % 2]);
		plain = new_opt(own, &m, configs[i % 2]);
		tbuf_init(&d, &pb, OFFSET + gpo_optim_buffer_bytes(bound, "param"),
			  1);
		tbuf_init(&d, &gb, OFFSET + gpo_optim_buffer_bytes(bound, "grad"),
			  1);
		tu_poison((float *)pb.map, pb.size / 4);
		tu_poison((float *)gb.map, gb.size / 4);
		put_map(pb.map, &m, m.p0);
		eb = vkbuf(&pb);
		eb.kind = GPO_EXTBUF_VK_FD;
		eb.handle = NULL;
		eb.vk_memory_type = pb.type;
		eb.fd = fd = tbuf_fd(&d, &pb);
		ck_assert_msg(!gpo_optim_bind(bound, "param", &eb), "%s",
			      gpo_errmsg());
		/* gpuopt owns the fd once bound, and closed it */
		ck_assert(!fd_open(fd));
		eb.vk_memory_type = gb.type;
		eb.size = gb.size;
		eb.fd = tbuf_fd(&d, &gb);
		ck_assert_msg(!gpo_optim_bind(bound, "grad", &eb), "%s",
			      gpo_errmsg());
		run_both(bound, pb.map, gb.map, plain, &m);
		gpo_optim_free(bound);
		gpo_optim_free(plain);
		gpo_ctx_free(ctx);
		tbuf_fini(&d, &pb);
		tbuf_fini(&d, &gb);
		model_fini(&m);
		tdev_fini(&d);
		done++;
	}
	vkDestroyInstance(t.inst, NULL);
	if (!done)
		printf("no Vulkan device with VK_KHR_external_memory_fd: fd import untested\n");
}
END_TEST

/* gpo_optim_write and gpo_optim_read on bound buffers: the caller's bytes */
START_TEST(test_interop_vulkan_read_write_bound_buffers)
{
	uint64_t s = tu_rng("readwrite");
	struct gpo_vulkan_handles h;
	struct gpo_device *adev;
	struct gpo_optim *opt;
	struct gpo_extbuf eb;
	struct gpo_ctx *ctx;
	struct tbuf pb;
	struct model m;
	struct tdev d;
	struct tvk t;
	float *x, *y;

	tvk_init(&t);
	tdev_init(&d, t.phys[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	h = handles(&t, &d);
	ck_assert_msg(!gpo_device_adopt_vulkan(ctx, &h, &adev), "%s",
		      gpo_errmsg());
	model_init(&m, &s);
	opt = new_opt(adev, &m, "lr=0.01");
	tbuf_init(&d, &pb, OFFSET + gpo_optim_buffer_bytes(opt, "param"), 0);
	tu_poison((float *)pb.map, pb.size / 4);
	eb = vkbuf(&pb);
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	x = malloc(m.total * sizeof(float));
	y = malloc(m.total * sizeof(float));
	ck_assert(x && y);
	/* a write lands in the caller's memory */
	write_all(opt, "param", &m, m.p0);
	get_map(pb.map, &m, x);
	check_same(x, m.p0, m.total, "written parameters in the caller's memory");
	/* the caller's own writes are what gpuopt reads */
	tu_fill(x, m.total, &s, -3, 3);
	put_map(pb.map, &m, x);
	read_all(opt, "param", &m, y);
	check_same(y, x, m.total, "parameters the caller wrote");
	free(x);
	free(y);
	gpo_optim_free(opt);
	gpo_ctx_free(ctx);
	tbuf_fini(&d, &pb);
	model_fini(&m);
	tdev_fini(&d);
	vkDestroyInstance(t.inst, NULL);
}
END_TEST

/* a refused adoption: -EINVAL with a message, no device added */
static void adopt_refused(struct gpo_ctx *ctx, struct gpo_vulkan_handles h,
			  const char *what)
{
	struct gpo_device *dev = NULL;
	int n = gpo_device_count(ctx);

	ck_assert_msg(gpo_device_adopt_vulkan(ctx, &h, &dev) == -EINVAL,
		      "%s: accepted", what);
	tu_check_errmsg(what);
	ck_assert_ptr_null(dev);
	ck_assert_int_eq(gpo_device_count(ctx), n);
}

START_TEST(test_interop_vulkan_bad_adoption_is_einval)
{
	struct gpo_vulkan_handles h, bad;
	VkQueueFamilyProperties qf[16];
	struct gpo_device *dev;
	struct gpo_ctx *ctx;
	struct tvk t, t2;
	struct tdev d;
	uint32_t nq = 16, i;

	tvk_init(&t);
	tvk_init(&t2);
	tdev_init(&d, t.phys[0], 0);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	h = handles(&t, &d);
	ck_assert_int_eq(gpo_device_adopt_vulkan(ctx, NULL, &dev), -EINVAL);
	ck_assert_int_eq(gpo_device_adopt_vulkan(ctx, &h, NULL), -EINVAL);
	bad = h;
	bad.instance = NULL;
	adopt_refused(ctx, bad, "NULL instance");
	bad = h;
	bad.physical_device = NULL;
	adopt_refused(ctx, bad, "NULL physical device");
	bad = h;
	bad.device = NULL;
	adopt_refused(ctx, bad, "NULL device");
	bad = h;
	bad.queue = NULL;
	adopt_refused(ctx, bad, "NULL queue");
	bad = h;
	bad.physical_device = t2.phys[0];
	adopt_refused(ctx, bad, "a physical device of another instance");
	vkGetPhysicalDeviceQueueFamilyProperties(d.phys, &nq, qf);
	bad = h;
	bad.queue_family = nq;
	adopt_refused(ctx, bad, "a queue family past the last");
	for (i = 0; i < nq; i++)
		if (!(qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) {
			bad = h;
			bad.queue_family = i;
			adopt_refused(ctx, bad, "a queue family without compute");
		}
	/* and nothing was left behind: the right handles work */
	ck_assert_msg(!gpo_device_adopt_vulkan(ctx, &h, &dev), "%s",
		      gpo_errmsg());
	ck_assert_int_eq(gpo_device_index(dev), gpo_device_count(ctx) - 1);
	gpo_ctx_free(ctx);
	tdev_fini(&d);
	vkDestroyInstance(t.inst, NULL);
	vkDestroyInstance(t2.inst, NULL);
}
END_TEST

/* a refused bind: @err with a message; a following good bind works */
static void bind_refused(struct gpo_optim *opt, const char *slot,
			 const struct gpo_extbuf *eb, int err, const char *what)
{
	ck_assert_msg(gpo_optim_bind(opt, slot, eb) == err, "%s: not %d: %s",
		      what, err, gpo_errmsg());
	tu_check_errmsg(what);
}

START_TEST(test_interop_vulkan_bad_bind_changes_nothing)
{
	uint64_t s = tu_rng("badbind");
	struct gpo_vulkan_handles h;
	struct gpo_device *adev, *own;
	struct gpo_optim *opt, *oown;
	struct gpo_extbuf eb, bad;
	struct gpo_ctx *ctx;
	struct tbuf pb, gb, fb;
	struct model m;
	struct tdev d;
	struct tvk t;
	float *x;
	int fd;

	tvk_init(&t);
	tdev_init(&d, t.phys[0], 1);
	ck_assert(!gpo_ctx_new(&ctx, 0));
	h = handles(&t, &d);
	ck_assert_msg(!gpo_device_adopt_vulkan(ctx, &h, &adev), "%s",
		      gpo_errmsg());
	own = own_device(ctx, d.uuid);
	model_init(&m, &s);
	opt = new_opt(adev, &m, "lr=0.01");
	tbuf_init(&d, &pb, OFFSET + gpo_optim_buffer_bytes(opt, "param"), 0);
	tbuf_init(&d, &gb, OFFSET + gpo_optim_buffer_bytes(opt, "grad"), 0);
	eb = vkbuf(&pb);

	bad = eb;
	bad.kind = GPO_EXTBUF_CL_MEM;
	bind_refused(opt, "param", &bad, -EINVAL, "a cl_mem on Vulkan");
	bad = eb;
	bad.handle = NULL;
	bind_refused(opt, "param", &bad, -EINVAL, "a NULL VkBuffer");
	bad = eb;
	bad.size = OFFSET + gpo_optim_buffer_bytes(opt, "param") - 4;
	bind_refused(opt, "param", &bad, -EINVAL, "a buffer too small");
	bad = eb;
	bad.size = pb.size + 4096;
	bind_refused(opt, "param", &bad, -EINVAL,
		     "a size past the VkBuffer's memory requirements");
	bad = eb;
	bad.offset = 100;
	bind_refused(opt, "param", &bad, -EINVAL, "a misaligned offset");
	bad = eb;
	bad.dtype = GPO_F16;
	bind_refused(opt, "param", &bad, -EINVAL, "the wrong dtype");
	bind_refused(opt, "moment", &eb, -EINVAL, "a slot other than param and grad");
	bad = eb;
	bad.kind = GPO_EXTBUF_VK_FD;
	bad.fd = dup(0);
	ck_assert_int_ge(bad.fd, 0);
	bind_refused(opt, "param", &bad, -ENOSYS, "an fd on an adopted device");
	ck_assert(fd_open(bad.fd));
	close(bad.fd);

	/* none of it bound anything: the good buffers bind */
	ck_assert_msg(!gpo_optim_bind(opt, "param", &eb), "%s", gpo_errmsg());
	bind_refused(opt, "param", &eb, -EBUSY, "a second bind");
	eb = vkbuf(&gb);
	ck_assert_msg(!gpo_optim_bind(opt, "grad", &eb), "%s", gpo_errmsg());
	x = malloc(m.total * sizeof(float));
	ck_assert(x);
	write_all(opt, "param", &m, m.p0);
	bind_refused(opt, "grad", &eb, -EBUSY, "a bind after the first use");
	read_all(opt, "param", &m, x);
	check_same(x, m.p0, m.total, "parameters after refused binds");

	/* gpuopt's own device: no VkBuffer, fds checked */
	oown = new_opt(own, &m, "lr=0.01");
	eb = vkbuf(&pb);
	bind_refused(oown, "param", &eb, -EINVAL,
		     "a VkBuffer on a device not adopted");
	if (d.ext_fd) {
		tbuf_init(&d, &fb, OFFSET + gpo_optim_buffer_bytes(oown, "param"),
			  1);
		eb.kind = GPO_EXTBUF_VK_FD;
		eb.handle = NULL;
		eb.size = fb.size;
		eb.vk_memory_type = fb.type;
		eb.fd = -1;
		bind_refused(oown, "param", &eb, -EINVAL, "fd -1");
		fd = tbuf_fd(&d, &fb);
		eb.fd = fd;
		bad = eb;
		bad.vk_memory_type = 32;
		bind_refused(oown, "param", &bad, -EINVAL, "a memory type past the last");
		bad = eb;
		bad.size = OFFSET + gpo_optim_buffer_bytes(oown, "param") - 4;
		bind_refused(oown, "param", &bad, -EINVAL, "fd memory too small");
		ck_assert(fd_open(fd));
		ck_assert_msg(!gpo_optim_bind(oown, "param", &eb), "%s",
			      gpo_errmsg());
		ck_assert(!fd_open(fd));
		write_all(oown, "param", &m, m.p0);
		get_map(fb.map, &m, x);
		check_same(x, m.p0, m.total, "parameters written to fd memory");
	}
	free(x);
	gpo_optim_free(opt);
	gpo_optim_free(oown);
	gpo_ctx_free(ctx);
	if (d.ext_fd)
		tbuf_fini(&d, &fb);
	tbuf_fini(&d, &pb);
	tbuf_fini(&d, &gb);
	model_fini(&m);
	tdev_fini(&d);
	vkDestroyInstance(t.inst, NULL);
}
END_TEST

/* ---- main --------------------------------------------------------------- */

int main(void)
{
	int skip = tu_backend_gate("vulkan");
	Suite *s;
	TCase *tc;

	if (skip)
		return skip;
	s = suite_create("interop_vulkan");
	tc = tcase_create("interop_vulkan");
	tcase_add_test(tc, test_interop_vulkan_adopted_steps_match_host_buffers);
	tcase_add_test(tc, test_interop_vulkan_fd_import_matches_host_buffers);
	tcase_add_test(tc, test_interop_vulkan_read_write_bound_buffers);
	tcase_add_test(tc, test_interop_vulkan_bad_adoption_is_einval);
	tcase_add_test(tc, test_interop_vulkan_bad_bind_changes_nothing);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
