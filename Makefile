# gpuopt - top-level Makefile. Everything builds under $(BUILD).
#   make            build the library, daemon, tools, tests and benchmarks
#                   (missing dependencies: the apt-get line, never installs)
#   make run        the main job (see README.md); installs its deps as root
#   make check      the test suite; SANITIZE=1 for ASan+UBSan; installs the
#                   tests' deps as root
#   make valgrind   the unit tests under valgrind on the cpu device
#   make bench      the benchmarks
#   make install    PREFIX=/usr/local DESTDIR= (library, header, gpuopt.pc,
#                   man pages, gpuoptfs, gpuoptctl, gpuopt-ckpt, udev rules,
#                   the service unit)
#   BACKENDS="cpu vulkan"  any subset of cpu opencl vulkan (cpu is always
#                   built); a set other than all three builds in
#                   build-<set> (build-cpu-vulkan), so sets never mix objects

SANITIZE ?= 0
# MPI=1: also libgpuopt-mpi (libgpuopt/src/comm/, Open MPI), gpuopt-train
# and bench_comm with MPI, tests/mpi; in build-mpi (build-san-mpi, ...):
# the plain library never links MPI
MPI ?= 0
BACKENDS_ALL := cpu opencl vulkan
BACKENDS ?= $(BACKENDS_ALL)
ifneq ($(filter-out $(BACKENDS_ALL),$(BACKENDS)),)
$(error BACKENDS: unknown $(filter-out $(BACKENDS_ALL),$(BACKENDS)) (of $(BACKENDS_ALL)))
endif
# in canonical order, cpu always
BACKENDS_SET := $(filter cpu $(BACKENDS),$(BACKENDS_ALL))
ifeq ($(BACKENDS_SET),$(BACKENDS_ALL))
BACKENDS_TAG :=
else
BACKENDS_TAG := -$(subst $() ,-,$(BACKENDS_SET))
endif
have = $(filter $(1),$(BACKENDS_SET))

ifeq ($(MPI),1)
BACKENDS_TAG := $(BACKENDS_TAG)-mpi
endif
ifeq ($(SANITIZE),1)
BUILD ?= build-san$(BACKENDS_TAG)
else
BUILD ?= build$(BACKENDS_TAG)
endif

PREFIX ?= /usr/local
CC ?= cc
GLSLC ?= glslc
PKGS := OpenCL vulkan fuse3 liburing libcap check libxxhash jansson zlib

# The version is written once, in gpuopt.h's GPUOPT_VERSION_* macros.
version_part = $(shell sed -n 's/^\#define GPUOPT_VERSION_$(1)  *\([0-9][0-9]*\)$$/\1/p' \
	libgpuopt/include/gpuopt.h)
VERSION := $(call version_part,MAJOR).$(call version_part,MINOR).$(call version_part,PATCH)
ifeq ($(filter-out .,$(subst ., . ,$(VERSION))),)
$(error cannot read GPUOPT_VERSION_* from libgpuopt/include/gpuopt.h)
endif
# the ABI's number in the soname: not the release's
SOVER := 0

WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes
CFLAGS ?= -O2 -g
BASE_CFLAGS := -std=gnu11 $(WARN) -pthread -D_GNU_SOURCE \
	-I. -Ilibgpuopt/include -Ilibgpuopt/src -Ikernels -I$(BUILD)/gen
ifeq ($(SANITIZE),1)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDSAN := -fsanitize=address,undefined
# every program (never the library) keeps the CPU drivers resident, so
# their own leaks keep their names (tests/unit/keep_drivers.c)
SAN_KEEP := $(BUILD)/tests/unit/keep_drivers.o
endif
LDPROG = $(LDSAN) $(SAN_KEEP)
# GPO_HAVE_OPENCL, GPO_HAVE_VULKAN: the backends built (device.c's list,
# the tests that must know what was left out on purpose)
BASE_CFLAGS += $(if $(call have,opencl),-DGPO_HAVE_OPENCL) \
	$(if $(call have,vulkan),-DGPO_HAVE_VULKAN)
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)
LIB_LIBS := $(if $(call have,opencl),-lOpenCL) $(if $(call have,vulkan),-lvulkan) \
	-luring -ljansson -lz -lm -lpthread

# common/: the helpers of the library, the daemon and the tools, in the
# library and, for gpuoptctl, alone in libgpocommon.a
COMMON_SRCS := $(sort $(wildcard common/*.c))
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
COMMON_LIB := $(BUILD)/lib/libgpocommon.a
LIB_SRCS := $(sort $(wildcard libgpuopt/src/*/*.c libgpuopt/src/*/*/*.c))
# comm/ is libgpuopt-mpi's (MPI=1), never the plain library's
LIB_SRCS := $(filter-out libgpuopt/src/comm/%,$(LIB_SRCS))
LIB_SRCS := $(filter-out $(foreach b,$(filter-out $(BACKENDS_SET),$(BACKENDS_ALL)),\
	libgpuopt/src/backend/$(b)/%),$(LIB_SRCS))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(COMMON_OBJS) \
	$(if $(call have,opencl),$(BUILD)/gen/cl_sources.o) \
	$(if $(call have,vulkan),$(BUILD)/gen/spv_sources.o)
# OpenCL C: common.cl, one folder per op family, and the abi headers the
# kernels include (the backend expands #include from the embedded copies)
CL_SRCS := $(sort $(wildcard kernels/opencl/*.cl kernels/opencl/*/*.cl \
	kernels/abi/*.h))
# SPIR-V: one module per (op, dtype), build/spv/<op>.<dtype>.spv, from
# kernels/vulkan/<family>/<op>.comp with -DGPO_DTYPE_<DTYPE>. A shader
# names its dtypes in its first lines ("// dtypes: f32 i32"; f32 if not).
COMP_SRCS := $(sort $(wildcard kernels/vulkan/*/*.comp))
GLSL_DEPS := $(wildcard kernels/vulkan/*.glsl kernels/vulkan/*/*.glsl \
	kernels/abi/*.h)
spv_dtypes = $(or $(shell sed -n '1,5s|^// dtypes: *||p' $(1)),f32)
# and may name glslc's optimization ("// glslc: -O0"; -O if not): a
# kernel whose driver compiles it better from the unoptimized module
# (matmul_big.comp says why)
spv_opt = $(or $(shell sed -n '1,5s|^// glslc: *\(-O[0s]*\) *$$|\1|p' $(1)),-O)
spv_upper = $(subst b,B,$(subst f,F,$(subst i,I,$(subst u,U,$(1)))))
# an update kernel whose dtypes are its parameters' (f32 f16 bf16) is
# told so in every module: its f32 one then has no half path at all
# (update.glsl, "param_*")
spv_half = $(if $(filter f16,$(call spv_dtypes,$(1))),-DGPO_HALF_VARIANTS)
SPVS :=
define spv_rule
$(BUILD)/spv/$(basename $(notdir $(1))).$(2).spv: $(1) $$(GLSL_DEPS)
	@mkdir -p $$(dir $$@)
	$$(GLSLC) --target-env=vulkan1.1 $$(call spv_opt,$(1)) \
		-Ikernels -Ikernels/vulkan \
		-DGPO_DTYPE_$(call spv_upper,$(2)) $$(call spv_half,$(1)) \
		-o $$@ $$<
SPVS += $(BUILD)/spv/$(basename $(notdir $(1))).$(2).spv
endef
$(foreach c,$(COMP_SRCS),$(foreach d,$(call spv_dtypes,$(c)),\
	$(eval $(call spv_rule,$(c),$(d)))))
# steps: a shader marked "// recorded: yes" in its first lines is also
# built with -DGPO_ARGS_BUF as <op>.<dtype>.ab.spv, which reads its
# parameter struct from a buffer (binding GPO_ARGS_BINDING) instead of push
# constants, for command buffers recorded once and replayed (graph.c)
spv_recorded = $(shell sed -n '1,5s|^// recorded: *yes|yes|p' $(1))
define spv_ab_rule
$(BUILD)/spv/$(basename $(notdir $(1))).$(2).ab.spv: $(1) $$(GLSL_DEPS)
	@mkdir -p $$(dir $$@)
	$$(GLSLC) --target-env=vulkan1.1 $$(call spv_opt,$(1)) \
		-Ikernels -Ikernels/vulkan \
		-DGPO_DTYPE_$(call spv_upper,$(2)) $$(call spv_half,$(1)) \
		-DGPO_ARGS_BUF -o $$@ $$<
SPVS += $(BUILD)/spv/$(basename $(notdir $(1))).$(2).ab.spv
endef
$(foreach c,$(COMP_SRCS),$(if $(call spv_recorded,$(c)),\
	$(foreach d,$(call spv_dtypes,$(c)),\
		$(eval $(call spv_ab_rule,$(c),$(d))))))

SOLIB := $(BUILD)/lib/libgpuopt.so.$(VERSION)
ALIB := $(BUILD)/lib/libgpuopt.a

TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))
# a left-out backend's own test program (test_vulkan.c needs its headers)
TEST_SRCS := $(filter-out $(patsubst %,tests/unit/test_%.c,\
	$(filter-out $(BACKENDS_SET),$(BACKENDS_ALL))),$(TEST_SRCS))
# and its interop test (test_interop_opencl.c: CL/cl.h and -lOpenCL)
TEST_SRCS := $(filter-out $(patsubst %,tests/unit/test_interop_%.c,\
	$(filter-out $(BACKENDS_SET),$(BACKENDS_ALL))),$(TEST_SRCS))
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
# the table-driven op test (tests/ops): every op on every device
OPS_SRCS := $(sort $(wildcard tests/ops/test_*.c))
TEST_BINS += $(OPS_SRCS:tests/ops/%.c=$(BUILD)/tests/%)
TEST_HELPERS := $(filter-out tests/unit/test_%.c,$(sort $(wildcard tests/unit/*.c)))
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(BUILD)/%.o)

EXAMPLES := $(patsubst libgpuopt/examples/%.c,$(BUILD)/bin/%,\
	$(wildcard libgpuopt/examples/*.c))
# interop_<api>.c calls that API itself: built with its backend only
EXAMPLES := $(filter-out $(patsubst %,$(BUILD)/bin/interop_%,\
	$(filter-out $(BACKENDS_SET),$(BACKENDS_ALL))),$(EXAMPLES))
TOOLS := $(patsubst tools/%.c,$(BUILD)/bin/%,$(wildcard tools/*.c)) \
	$(BUILD)/bin/gpuoptctl
BENCHES := $(patsubst bench/%.c,$(BUILD)/bin/bench_%,$(wildcard bench/*.c))
# bench/comm.c times MPI collectives: MPI=1 only
BENCHES := $(filter-out $(BUILD)/bin/bench_comm,$(BENCHES))
FSD_SRCS := $(sort $(wildcard fsd/*.c))
FSD_OBJS := $(FSD_SRCS:%.c=$(BUILD)/%.o)
FSD_BIN := $(if $(FSD_SRCS),$(BUILD)/bin/gpuoptfs $(BUILD)/bin/gpuoptfs-worker)
WORKER_SRCS := $(sort $(wildcard fsd/worker/*.c))
WORKER_OBJS := $(WORKER_SRCS:%.c=$(BUILD)/%.o)

.PHONY: all deps lib check check-unit check-fs check-train run valgrind bench install \
	clean fuzz
.DEFAULT_GOAL := all

# What this build dir was configured with, for the tests (sourced by sh)
# and as a stamp: rewritten only when it changes, and every object depends
# on it, so `make BUILD=x BACKENDS=cpu` then `make BUILD=x` rebuilds.
BUILD_CONF := $(BUILD)/build.conf
ifeq ($(filter clean,$(MAKECMDGOALS)),)
$(shell mkdir -p $(BUILD) && \
	printf "BACKENDS='%s'\nLIB_LIBS='%s'\nLDSAN='%s'\n" \
	"$(BACKENDS_SET)" "$(strip $(LIB_LIBS))" "$(LDSAN)" >$(BUILD_CONF).new && \
	{ cmp -s $(BUILD_CONF).new $(BUILD_CONF) && rm -f $(BUILD_CONF).new || \
	mv -f $(BUILD_CONF).new $(BUILD_CONF); })
endif

# The dependency check runs before anything else, for what the goals
# need (tools/deps.sh's modes): `make` only checks the build's and prints
# the apt-get line; run and check (valgrind, fuzz: check's; bench: run's)
# also install their own as root. A stamp per set of modes; `make deps
# DEPS_MODES=check` runs one by hand.
DEPS_MODES := $(strip $(if $(filter run bench,$(MAKECMDGOALS)),run) \
	$(if $(filter check valgrind fuzz,$(MAKECMDGOALS)),check))
DEPS_MODES := $(or $(DEPS_MODES),build)
DEPS_STAMP := $(BUILD)/.deps-$(subst $() ,-,$(DEPS_MODES))
$(DEPS_STAMP): tools/deps.sh
	@BACKENDS="$(BACKENDS_SET)" MPI="$(MPI)" tools/deps.sh $(DEPS_MODES)
	@mkdir -p $(BUILD) && touch $@
deps: $(DEPS_STAMP)

all: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
build-all: lib $(EXAMPLES) $(TOOLS) $(BENCHES) $(FSD_BIN) $(TEST_BINS)
.PHONY: build-all

lib: $(SOLIB) $(ALIB) $(BUILD)/lib/libgpuopt.so $(COMMON_LIB)

$(BUILD)/%.o: %.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -MMD -MP -c -o $@ $<

# The cpu backend's loops are where vectorisation matters.
$(BUILD)/libgpuopt/src/backend/cpu/%.o: CFLAGS += -O3 -fno-math-errno -ffp-contract=off

$(BUILD)/gen/cl_sources.c: $(CL_SRCS) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh cl $@ $(CL_SRCS)

$(BUILD)/gen/spv_sources.c: $(SPVS) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh spv $@ $(SPVS)

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<

$(SOLIB): $(LIB_OBJS) libgpuopt/libgpuopt.map $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libgpuopt.so.$(SOVER) \
		-Wl,--version-script=libgpuopt/libgpuopt.map -Wl,-z,defs \
		$(LDSAN) -pthread -o $@ $(LIB_OBJS) $(LIB_LIBS)
	ln -sf libgpuopt.so.$(VERSION) $(BUILD)/lib/libgpuopt.so.$(SOVER)

$(BUILD)/lib/libgpuopt.so: $(SOLIB)
	ln -sf libgpuopt.so.$(VERSION) $@

$(ALIB): $(LIB_OBJS) $(BUILD_CONF) | $(SAN_KEEP)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $(LIB_OBJS)

$(COMMON_LIB): $(COMMON_OBJS) | $(SAN_KEEP)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# Programs link the static library so they run from the tree.
$(BUILD)/bin/%: libgpuopt/examples/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDPROG)

# vkinter: interop_vulkan embeds its own kernel, SPIR-V from glslc as a C
# initializer
$(BUILD)/gen/interop_vulkan_grad.spv.h: libgpuopt/examples/interop_vulkan_grad.comp
	@mkdir -p $(dir $@)
	$(GLSLC) --target-env=vulkan1.1 -O -mfmt=c -o $@ $<
$(BUILD)/bin/interop_vulkan: $(BUILD)/gen/interop_vulkan_grad.spv.h

$(BUILD)/bin/%: tools/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDPROG)

# gpuoptctl only reads and writes the tree: it needs libc, libm,
# libsmartcols (its tables) and common/ alone; one file per command family
# in tools/gpuoptctl/.
CTL_SRCS := $(sort $(wildcard tools/gpuoptctl/*.c))
CTL_OBJS := $(CTL_SRCS:%.c=$(BUILD)/%.o)
CTL_CFLAGS := $(shell pkg-config --cflags smartcols 2>/dev/null)
CTL_LIBS := $(or $(shell pkg-config --libs smartcols 2>/dev/null),-lsmartcols)
$(BUILD)/tools/gpuoptctl/%.o: tools/gpuoptctl/%.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CTL_CFLAGS) -MMD -MP -c -o $@ $<
$(BUILD)/bin/gpuoptctl: $(CTL_OBJS) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(CTL_OBJS) $(COMMON_LIB) $(CTL_LIBS) -lm $(LDPROG)

$(BUILD)/bin/bench_%: bench/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDPROG)

$(BUILD)/bin/gpuoptfs: $(FSD_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(FSD_OBJS) $(ALIB) \
		$$(pkg-config --libs fuse3 libcap libsystemd) $(LIB_LIBS) $(LDPROG)

# one job's device work, run by gpuoptfs as the job's owner: no FUSE here
$(BUILD)/bin/gpuoptfs-worker: $(WORKER_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(WORKER_OBJS) $(ALIB) $(LIB_LIBS) $(LDPROG)

$(BUILD)/fsd/worker/%.o: fsd/worker/%.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/fsd/%.o: fsd/%.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $$(pkg-config --cflags fuse3) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(TEST_HELPER_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(TEST_HELPER_OBJS) $(ALIB) \
		$$(pkg-config --libs check) $(LIB_LIBS) $(LDPROG)

$(BUILD)/tests/%: tests/ops/%.c $(TEST_HELPER_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(TEST_HELPER_OBJS) $(ALIB) \
		$$(pkg-config --libs check) $(LIB_LIBS) $(LDPROG)

# test helpers are linked again later (keep_drivers.o by LDPROG): keep them
.SECONDARY: $(TEST_HELPER_OBJS)

$(BUILD)/tests/unit/%.o: tests/unit/%.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -MMD -MP -c -o $@ $<

# ---- libgpuopt-mpi (MPI=1) ------------------------------------------------
# libgpuopt-mpi.a (comm/) beside libgpuopt.a; gpuopt-train built with
# -DGPO_HAVE_MPI links both and Open MPI. `make check-mpi` builds them in
# build-mpi and runs tests/mpi (real mpirun processes); `make check` runs
# it when mpicc and mpirun are installed.
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS := $(or $(shell pkg-config --libs ompi-c 2>/dev/null),-lmpi)
COMM_SRCS := $(sort $(wildcard libgpuopt/src/comm/*.c))
COMM_OBJS := $(COMM_SRCS:%.c=$(BUILD)/%.o)
MPI_ALIB := $(BUILD)/lib/libgpuopt-mpi.a
ifeq ($(MPI),1)
$(BUILD)/libgpuopt/src/comm/%.o: libgpuopt/src/comm/%.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -fPIC -MMD -MP -c -o $@ $<

$(MPI_ALIB): $(COMM_OBJS) $(BUILD_CONF)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $(COMM_OBJS)

# MPI_LINK_ALIB: the libgpuopt.a to link (check-mpi passes the plain
# build's, the same objects, so that it is not compiled twice)
MPI_LINK_ALIB ?= $(ALIB)
$(BUILD)/bin/gpuopt-train: tools/gpuopt-train.c $(MPI_ALIB) $(MPI_LINK_ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -DGPO_HAVE_MPI -o $@ $< $(MPI_ALIB) \
		$(MPI_LINK_ALIB) $(MPI_LIBS) $(LIB_LIBS) $(LDPROG)

$(BUILD)/bin/bench_comm: bench/comm.c $(MPI_ALIB) $(MPI_LINK_ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -o $@ $< $(MPI_ALIB) $(MPI_LINK_ALIB) \
		$(MPI_LIBS) $(LIB_LIBS) $(LDPROG)

# tests/mpi's C programs, run by its scripts under mpirun
MPI_TESTS := $(patsubst tests/mpi/%.c,$(BUILD)/tests/mpi/%,\
	$(wildcard tests/mpi/*.c))
$(BUILD)/tests/mpi/%: tests/mpi/%.c $(MPI_ALIB) $(MPI_LINK_ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -o $@ $< $(MPI_ALIB) \
		$(MPI_LINK_ALIB) $(MPI_LIBS) $(LIB_LIBS) $(LDPROG)

mpi-all: $(DEPS_STAMP) $(MPI_ALIB) $(BUILD)/bin/gpuopt-train $(MPI_TESTS) \
	$(if $(wildcard bench/comm.c),$(BUILD)/bin/bench_comm)
# (build-all's prerequisites were read above: name bench_comm here too)
build-all: $(MPI_ALIB) $(if $(wildcard bench/comm.c),$(BUILD)/bin/bench_comm)
BENCHES += $(if $(wildcard bench/comm.c),$(BUILD)/bin/bench_comm)
endif
.PHONY: mpi-all check-mpi bench-comm

# gpuoptfs-worker-mpi: the worker of jobs with ranks=, the worker's
# sources and comm/ built with MPI beside the plain worker, wherever Open
# MPI's headers are (any MPI=; not under the sanitizers: Open MPI's own
# allocations would be leaks); without it gpuoptfs refuses ranks=
MPI_PRESENT := $(if $(filter 1,$(SANITIZE)),,$(shell pkg-config --exists ompi-c 2>/dev/null && echo 1))
ifneq ($(MPI_PRESENT),)
WORKER_MPI := $(if $(FSD_SRCS),$(BUILD)/bin/gpuoptfs-worker-mpi)
WORKER_MPI_OBJS := $(WORKER_SRCS:%.c=$(BUILD)/mpiw/%.o) \
	$(COMM_SRCS:%.c=$(BUILD)/mpiw/%.o)
$(BUILD)/mpiw/%.o: %.c $(BUILD_CONF)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(MPI_CFLAGS) -DGPO_HAVE_MPI -MMD -MP -c -o $@ $<
$(BUILD)/bin/gpuoptfs-worker-mpi: $(WORKER_MPI_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(WORKER_MPI_OBJS) $(ALIB) $(MPI_LIBS) \
		$(LIB_LIBS) $(LDPROG)
build-all: $(WORKER_MPI)
endif

# the MPI build is its own build dir: build it there, run tests/mpi
# (without the sanitizers: Open MPI's own allocations would be leaks);
# run it from the plain build (make check-mpi), whose gpuopt-train the
# tests also need
MPI_BUILD := build$(BACKENDS_TAG)$(if $(filter 1,$(MPI)),,-mpi)
check-mpi:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) $(BUILD)/bin/gpuopt-train
	@$(MAKE) --no-print-directory MPI=1 SANITIZE=0 BUILD=$(MPI_BUILD) \
		BACKENDS="$(BACKENDS_SET)" \
		$(if $(filter 1,$(MPI) $(SANITIZE)),,MPI_LINK_ALIB=$(abspath $(ALIB))) mpi-all
	@tests/mpi/run.sh $(MPI_BUILD) $(BUILD)

bench-comm:
	@$(MAKE) --no-print-directory BUILD=$(BUILD) $(ALIB)
	@$(MAKE) --no-print-directory MPI=1 SANITIZE=0 BUILD=$(MPI_BUILD) \
		BACKENDS="$(BACKENDS_SET)" \
		$(if $(filter 1,$(MPI) $(SANITIZE)),,MPI_LINK_ALIB=$(abspath $(ALIB))) mpi-all
	@bench/comm.sh $(MPI_BUILD)

run: all
	@tools/run-demo.sh $(BUILD)

# CHECK_MPI=0: make check without tests/mpi (.ci/run's sanitizer pass:
# the MPI build has no sanitizers, and the plain pass ran them)
CHECK_MPI ?= 1

check: all
	@tests/run-unit.sh $(BUILD) $(TEST_BINS)
	@CC="$(CC)" CKPT_CFLAGS="$(ALL_CFLAGS)" CKPT_LIBS="$(LIB_LIBS) $(LDPROG)" \
		tests/ckpt/run.sh $(BUILD)
	@if [ -n "$(FSD_BIN)" ] && [ -d tests/fs ] && \
		ls tests/fs/*.sh >/dev/null 2>&1; then \
		tests/run-fs.sh $(BUILD); fi
	@tests/run-tools.sh $(BUILD)
	@if [ "$(MPI)" = 1 ]; then :; \
	elif [ "$(CHECK_MPI)" = 0 ]; then echo "SKIP  mpi tests: CHECK_MPI=0"; \
	elif command -v mpicc >/dev/null && command -v mpirun >/dev/null; then \
		$(MAKE) --no-print-directory check-mpi; \
	else echo "SKIP  mpi tests: no mpicc/mpirun (libopenmpi-dev, openmpi-bin)"; fi

valgrind: all
	@VALGRIND=1 tests/run-unit.sh $(BUILD) $(TEST_BINS)

# The Fashion-MNIST job of tests/fs on the GPU code paths too (PoCL and
# lavapipe take it over from the cpu's checkpoint), and a gpt learning the
# GPL's text on the cpu backend (minutes), then taken over on each.
check-train: all
	@GPUOPT_FS_TRAIN_DEVICES="cpu opencl vulkan" GPUOPT_FS_TIMEOUT=1800 \
		tests/run-fs.sh $(BUILD) tests/fs/train_mlp_fashion_mnist.sh \
		tests/fs/train_gpt_gpl.sh

bench: all
	@bench/run.sh $(BUILD)
	@bench/ckpt.sh $(BUILD)
	@bench/xfer.sh $(BUILD)
	@bench/ctl.sh $(BUILD)
	@bench/train.sh $(BUILD)

# libFuzzer over the checkpoint reader: the reader's files built with
# clang's coverage, the rest from $(ALIB). FUZZ_TIME seconds (default 180).
FUZZ_CC ?= clang
FUZZ_TIME ?= 180
FUZZ_SRCS := $(addprefix libgpuopt/src/,ckpt/safetensors.c ckpt/meta.c ckpt/checkpoint.c \
	optim/hparam.c) common/num.c common/kv.c
FUZZ_FLAGS := -std=gnu11 $(WARN) -pthread -D_GNU_SOURCE -I. -Ilibgpuopt/include \
	-Ilibgpuopt/src -Ikernels -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
fuzz: $(DEPS_STAMP) $(ALIB)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $(BUILD)/fuzz/fuzz_ckpt \
		tests/fuzz/fuzz_ckpt.c $(FUZZ_SRCS) $(ALIB) $(LIB_LIBS)
	@tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_ckpt $(FUZZ_TIME)

install: all
	tools/install.sh "$(BUILD)" "$(DESTDIR)" "$(PREFIX)" "$(VERSION)" \
		"$(SOVER)" "$(strip $(LIB_LIBS))"

clean:
	rm -rf build build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
