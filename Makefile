# gpuopt - top-level Makefile. Everything builds under $(BUILD).
#   make            build the library, daemon, tools, tests and benchmarks
#   make run        the main job (see README.md)
#   make check      the test suite; SANITIZE=1 for ASan+UBSan
#   make valgrind   the unit tests under valgrind on the cpu device
#   make bench      the benchmarks
#   make install    PREFIX=/usr/local DESTDIR= (library, header, gpuopt.pc,
#                   man pages, gpuoptfs, gpuoptctl, gpuopt-ckpt, udev rules,
#                   the service unit)

SANITIZE ?= 0
ifeq ($(SANITIZE),1)
BUILD ?= build-san
else
BUILD ?= build
endif

PREFIX ?= /usr/local
CC ?= cc
GLSLC ?= glslc
PKGS := OpenCL vulkan fuse3 liburing libcap check libxxhash jansson

VERSION := 0.1.0
SOVER := 0

WARN := -Wall -Wextra -Werror -Wno-unused-parameter -Wshadow \
	-Wstrict-prototypes -Wmissing-prototypes
CFLAGS ?= -O2 -g
BASE_CFLAGS := -std=gnu11 $(WARN) -pthread -D_GNU_SOURCE \
	-I. -Ilibgpuopt/include -Ilibgpuopt/src -I$(BUILD)/gen
ifeq ($(SANITIZE),1)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
LDSAN := -fsanitize=address,undefined
endif
ALL_CFLAGS = $(BASE_CFLAGS) $(CFLAGS)
LIB_LIBS := -lOpenCL -lvulkan -luring -ljansson -lm -lpthread

# common/: the helpers of the library, the daemon and the tools, in the
# library and, for gpuoptctl, alone in libgpocommon.a
COMMON_SRCS := $(sort $(wildcard common/*.c))
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
COMMON_LIB := $(BUILD)/lib/libgpocommon.a
LIB_SRCS := $(sort $(wildcard libgpuopt/src/*/*.c libgpuopt/src/*/*/*.c))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o) $(COMMON_OBJS) \
	$(BUILD)/gen/cl_sources.o $(BUILD)/gen/spv_sources.o
CL_SRCS := $(sort $(wildcard kernels/opencl/*.cl))
COMP_SRCS := $(sort $(wildcard kernels/vulkan/*.comp))
SPVS := $(COMP_SRCS:kernels/vulkan/%.comp=$(BUILD)/spv/%.spv)

SOLIB := $(BUILD)/lib/libgpuopt.so.$(VERSION)
ALIB := $(BUILD)/lib/libgpuopt.a

TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)
TEST_HELPERS := $(filter-out $(TEST_SRCS),$(sort $(wildcard tests/unit/*.c)))
TEST_HELPER_OBJS := $(TEST_HELPERS:%.c=$(BUILD)/%.o)

EXAMPLES := $(patsubst libgpuopt/examples/%.c,$(BUILD)/bin/%,\
	$(wildcard libgpuopt/examples/*.c))
TOOLS := $(patsubst tools/%.c,$(BUILD)/bin/%,$(wildcard tools/*.c))
BENCHES := $(patsubst bench/%.c,$(BUILD)/bin/bench_%,$(wildcard bench/*.c))
FSD_SRCS := $(sort $(wildcard fsd/*.c))
FSD_OBJS := $(FSD_SRCS:%.c=$(BUILD)/%.o)
FSD_BIN := $(if $(FSD_SRCS),$(BUILD)/bin/gpuoptfs)

.PHONY: all deps lib check check-unit check-fs run valgrind bench install \
	clean fuzz
.DEFAULT_GOAL := all

# The dependency check runs before anything else (and installs as root).
DEPS_STAMP := $(BUILD)/.deps-ok
$(DEPS_STAMP): tools/deps.sh
	@tools/deps.sh
	@mkdir -p $(BUILD) && touch $@
deps: $(DEPS_STAMP)

all: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
build-all: lib $(EXAMPLES) $(TOOLS) $(BENCHES) $(FSD_BIN) $(TEST_BINS)
.PHONY: build-all

lib: $(SOLIB) $(ALIB) $(BUILD)/lib/libgpuopt.so $(COMMON_LIB)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fPIC -MMD -MP -c -o $@ $<

# The cpu backend's loops are where vectorisation matters.
$(BUILD)/libgpuopt/src/backend/cpu/cpu.o: CFLAGS += -O3 -fno-math-errno -ffp-contract=off

$(BUILD)/gen/cl_sources.c: $(CL_SRCS) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh cl $@ $(CL_SRCS)

$(BUILD)/spv/%.spv: kernels/vulkan/%.comp $(wildcard kernels/vulkan/*.glsl)
	@mkdir -p $(dir $@)
	$(GLSLC) --target-env=vulkan1.1 -O -Ikernels/vulkan -o $@ $<

$(BUILD)/gen/spv_sources.c: $(SPVS) tools/embed.sh
	@mkdir -p $(dir $@)
	tools/embed.sh spv $@ $(SPVS)

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(ALL_CFLAGS) -fPIC -c -o $@ $<

$(SOLIB): $(LIB_OBJS) libgpuopt/libgpuopt.map
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libgpuopt.so.$(SOVER) \
		-Wl,--version-script=libgpuopt/libgpuopt.map -Wl,-z,defs \
		$(LDSAN) -pthread -o $@ $(LIB_OBJS) $(LIB_LIBS)
	ln -sf libgpuopt.so.$(VERSION) $(BUILD)/lib/libgpuopt.so.$(SOVER)

$(BUILD)/lib/libgpuopt.so: $(SOLIB)
	ln -sf libgpuopt.so.$(VERSION) $@

$(ALIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

$(COMMON_LIB): $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# Programs link the static library so they run from the tree.
$(BUILD)/bin/%: libgpuopt/examples/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDSAN)

$(BUILD)/bin/%: tools/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDSAN)

# gpuoptctl only reads and writes the tree: it needs libc, libm and
# common/ alone.
$(BUILD)/bin/gpuoptctl: tools/gpuoptctl.c $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(COMMON_LIB) -lm $(LDSAN)

$(BUILD)/bin/bench_%: bench/%.c $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(ALIB) $(LIB_LIBS) $(LDSAN)

$(BUILD)/bin/gpuoptfs: $(FSD_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(FSD_OBJS) $(ALIB) \
		$$(pkg-config --libs fuse3 libcap) $(LIB_LIBS) $(LDSAN)

$(BUILD)/fsd/%.o: fsd/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $$(pkg-config --cflags fuse3) -MMD -MP -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(TEST_HELPER_OBJS) $(ALIB)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(TEST_HELPER_OBJS) $(ALIB) \
		$$(pkg-config --libs check) $(LIB_LIBS) $(LDSAN)

$(BUILD)/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -Itests/unit -MMD -MP -c -o $@ $<

run: all
	@tools/run-demo.sh $(BUILD)

check: all
	@tests/run-unit.sh $(BUILD) $(TEST_BINS)
	@CC="$(CC)" CKPT_CFLAGS="$(ALL_CFLAGS)" CKPT_LIBS="$(LIB_LIBS) $(LDSAN)" \
		tests/ckpt/run.sh $(BUILD)
	@if [ -n "$(FSD_BIN)" ] && [ -d tests/fs ] && \
		ls tests/fs/*.sh >/dev/null 2>&1; then \
		tests/run-fs.sh $(BUILD); fi
	@tests/run-tools.sh $(BUILD)

valgrind: all
	@VALGRIND=1 tests/run-unit.sh $(BUILD) $(TEST_BINS)

bench: all
	@bench/run.sh $(BUILD)
	@bench/ckpt.sh $(BUILD)
	@bench/ctl.sh $(BUILD)

# libFuzzer over the checkpoint reader: the reader's files built with
# clang's coverage, the rest from $(ALIB). FUZZ_TIME seconds (default 180).
FUZZ_CC ?= clang
FUZZ_TIME ?= 180
FUZZ_SRCS := $(addprefix libgpuopt/src/,ckpt/safetensors.c ckpt/checkpoint.c \
	optim/hparam.c) common/num.c common/kv.c
FUZZ_FLAGS := -std=gnu11 $(WARN) -pthread -D_GNU_SOURCE -I. -Ilibgpuopt/include \
	-Ilibgpuopt/src -g -O1 -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined
fuzz: $(ALIB)
	@mkdir -p $(BUILD)/fuzz
	$(FUZZ_CC) $(FUZZ_FLAGS) -fsanitize=fuzzer -o $(BUILD)/fuzz/fuzz_ckpt \
		tests/fuzz/fuzz_ckpt.c $(FUZZ_SRCS) $(ALIB) $(LIB_LIBS)
	@tests/fuzz/run.sh $(BUILD)/fuzz/fuzz_ckpt $(FUZZ_TIME)

install: all
	tools/install.sh "$(BUILD)" "$(DESTDIR)" "$(PREFIX)" "$(VERSION)" \
		"$(SOVER)"

clean:
	rm -rf build build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
