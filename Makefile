# SPDX-License-Identifier: Apache-2.0
# milometer: one Makefile, intermediates in .output/, binaries in bin/.
#   make            build bin/milometer
#   make demo       run the agent against a real local nginx with example CRDs
#   make check      unit tests + BPF/integration tests (root)
#   make unit       unit tests only (no root)
#   make bpf-tests  build bin/bpf_tests: the BPF parser run by BPF_PROG_TEST_RUN (root)
#   make bench      agent on/off benchmark, encode/memory figures
#   make kernel-matrix  the agent on Debian 11's 5.10, 12's 6.1 and 13's 6.12 kernels (x86-64, arm64; qemu) and the host's
#   make ARCH=arm64 cross build for arm64 on x86-64: bin/arm64/, see
#                   docs/architectures.md
#   make V=1 ...    show the commands

OUTPUT   := .output
BIN      := bin
HOST_ARCH:= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
ARCH     := $(HOST_ARCH)
CLANG    ?= clang
CC       ?= cc
ifeq ($(filter $(ARCH),x86 arm64),)
$(error ARCH=$(ARCH) is not supported: milometer builds for x86 (x86_64) and arm64 (aarch64); see docs/architectures.md)
endif
# Cross build: clang for the target triple against a Debian 12 root of the
# target architecture (its -dev packages), deploy/cross-root.sh makes it.
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_TRIPLE := $(if $(filter arm64,$(ARCH)),aarch64-linux-gnu,x86_64-linux-gnu)
SYSROOT  ?= /var/cache/milometer/roots/$(ARCH)
CC       := clang --target=$(CROSS_TRIPLE) --sysroot=$(SYSROOT)
CXX      := clang++ --target=$(CROSS_TRIPLE) --sysroot=$(SYSROOT)
OUTPUT   := .output/$(ARCH)
BIN      := bin/$(ARCH)
DEPS_STAMP := $(OUTPUT)/.deps-cross
endif
# RE2 (policy/regex/) is C++: a C++ compiler of the same family as CC, or
# whichever one is installed (a fresh Debian with clang has clang++ only).
ifeq ($(origin CXX),default)
CXX := $(if $(findstring clang,$(CC)),clang++,$(if $(shell command -v g++),g++,clang++))
endif
BPFTOOL  ?= bpftool
PROTOC_C ?= protoc-c

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)";
endif

VERSION  := $(shell git describe --always --dirty 2>/dev/null || echo 0.1.0)
CFLAGS   ?= -O2 -g
# `override`: `make CFLAGS=-O0` replaces the optimisation flags, never the
# warnings, includes and defines the tree needs (a plain += is ignored for a
# variable set on the command line).
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	    -Wno-missing-field-initializers -D_GNU_SOURCE \
	    -I. -I$(OUTPUT) -DMM_VERSION='"$(VERSION)"'
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++11 -Wall -Wextra -Werror -I.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	    -I$(OUTPUT) -Ivmlinux/$(ARCH) -I.

# policy/ and exporter/ never link libbpf: they are unit-tested without root.
# the metric model and the leaf helpers: below policy/ and exporter/ both
MODEL_SRCS    := $(sort $(wildcard policy/model/*.c policy/util/*.c))
POLICY_SRCS   := $(filter-out $(MODEL_SRCS),$(sort $(wildcard policy/*/*.c)))
POLICY_CXX_SRCS := $(sort $(wildcard policy/*/*.cc))
EXPORTER_SRCS := $(sort $(wildcard exporter/*.c))
AGENT_SRCS    := $(filter-out agent/k8s/%,$(sort $(wildcard agent/*.c agent/*/*.c)))
# the Kubernetes API client: no libbpf, linked into the agent, tools, tests
K8S_SRCS      := $(sort $(wildcard agent/k8s/*.c))
BPF_SRCS      := $(sort $(wildcard bpf/*.bpf.c))
UNIT_SRCS     := $(sort $(wildcard selftests/unit/*.c))
TOOL_SRCS     := $(sort $(wildcard selftests/tools/*.c))
# test tooling shared by the unit tests and the tools (not part of the agent)
TOOLLIB_SRCS  := $(sort $(wildcard selftests/tools/lib/*.c))
BENCH_SRCS    := $(sort $(wildcard selftests/bench/*.c))
PROTOS        := $(sort $(wildcard exporter/*.proto))

PROTO_C   := $(patsubst exporter/%.proto,$(OUTPUT)/%.pb-c.c,$(PROTOS))
PROTO_O   := $(PROTO_C:.c=.o)
MODEL_O   := $(patsubst %.c,$(OUTPUT)/%.o,$(MODEL_SRCS))
POLICY_O  := $(patsubst %.c,$(OUTPUT)/%.o,$(POLICY_SRCS)) \
	     $(patsubst %.cc,$(OUTPUT)/%.o,$(POLICY_CXX_SRCS))
EXPORTER_O:= $(patsubst %.c,$(OUTPUT)/%.o,$(EXPORTER_SRCS)) $(PROTO_O)
AGENT_O   := $(patsubst %.c,$(OUTPUT)/%.o,$(AGENT_SRCS))
K8S_O     := $(patsubst %.c,$(OUTPUT)/%.o,$(K8S_SRCS))
BPF_O     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
# the data path built with bounded loops, for kernels without bpf_loop (bpf/compat.bpf.h)
SKELS     += $(OUTPUT)/milometer_bl.skel.h $(OUTPUT)/tls_bl.skel.h
UNIT_O    := $(patsubst %.c,$(OUTPUT)/%.o,$(UNIT_SRCS))
TOOLLIB_O := $(patsubst %.c,$(OUTPUT)/%.o,$(TOOLLIB_SRCS))
TOOLS     := $(patsubst selftests/tools/%.c,$(BIN)/%,$(TOOL_SRCS))
BENCHES   := $(patsubst selftests/bench/%.c,$(BIN)/%,$(BENCH_SRCS))
# agent objects with no libbpf, unit-tested like policy/ and exporter/
# (by folder: what in agent/ may not include libbpf)
AGENT_PURE_DIRS := agent/config agent/pipeline agent/node agent/h2 agent/tls agent/controller agent/authz agent/metrics
AGENT_PURE_O := $(patsubst %.c,$(OUTPUT)/%.o,$(sort $(foreach d,$(AGENT_PURE_DIRS),$(wildcard $(d)/*.c))))
# the subcommands' fronts, as an archive: a test links the one it calls
CMD_O := $(patsubst %.c,$(OUTPUT)/%.o,$(sort $(wildcard agent/cmd/*.c)))
# agent objects a bench tool may link: everything but main()
AGENT_LIB_O := $(filter-out $(OUTPUT)/agent/cmd/main.o,$(AGENT_O))

PURE_LIBS  := -lre2 -lstdc++ -ljson-c -lcrypto -lyaml -lcurl -lprotobuf-c -lmicrohttpd -luuid -lz -lm -lpthread \
	      -lnghttp2 -lelf -lcapstone
AGENT_LIBS := -lbpf -lelf $(PURE_LIBS)

# Generated sources (protoc-c, skeletons) are never "intermediate": deleting
# them makes parallel and later builds race for them.
.SECONDARY:
# A recipe that fails leaves no half-written target (skeleton, .pb-c.c) that
# a later make would take as up to date.
.DELETE_ON_ERROR:

# Dependency installation is one step, a stamp every generated file and
# object waits for (order-only, as libbpf-bootstrap orders libbpf and
# bpftool before any object): `make -jN` on a fresh machine never runs
# protoc-c or clang before their packages are there. The goals that run
# things (check, demo, bench, integration, deps) install the run packages
# in that same step, so no two apt-gets ever race for the dpkg lock; demo
# alone installs only what the demo runs.
ifneq ($(filter check bench integration deps,$(MAKECMDGOALS)),)
DEPS_STAMP ?= $(OUTPUT)/.deps-all
else ifneq ($(filter demo,$(MAKECMDGOALS)),)
DEPS_STAMP ?= $(OUTPUT)/.deps-demo
else
DEPS_STAMP ?= $(OUTPUT)/.deps-build
endif

.PHONY: all deps demo check unit asan-unit integration bench fuzz fuzz-build \
	format format-check vmlinux install clean kernel-matrix build-all other-cc image image-multiarch
.DEFAULT_GOAL := all

all: $(BIN)/milometer $(TOOLS)

# Everything that compiles: what `make check` builds with the second compiler.
build-all: all $(BIN)/unit_tests $(BENCHES)

# Install missing Debian packages when root; otherwise say what is missing.
deps: $(DEPS_STAMP)

$(OUTPUT)/.deps-build: deploy/install-deps.sh
	$(call msg,DEPS,build packages)
	$(Q)mkdir -p $(@D)
	$(Q)deploy/install-deps.sh --build-only
	$(Q)touch $@

$(OUTPUT)/.deps-cross: deploy/install-deps.sh deploy/cross-root.sh
	$(call msg,DEPS,build packages + $(ARCH) cross toolchain and root)
	$(Q)mkdir -p $(@D)
	$(Q)deploy/install-deps.sh --build-only
	$(Q)deploy/install-deps.sh --cross $(ARCH)
	$(Q)touch $@

$(OUTPUT)/.deps-demo: deploy/install-deps.sh
	$(call msg,DEPS,build + demo packages)
	$(Q)mkdir -p $(@D)
	$(Q)deploy/install-deps.sh --demo
	$(Q)touch $@ $(OUTPUT)/.deps-build

$(OUTPUT)/.deps-all: deploy/install-deps.sh
	$(call msg,DEPS,build + demo + test packages)
	$(Q)mkdir -p $(@D)
	$(Q)deploy/install-deps.sh
	$(Q)touch $@ $(OUTPUT)/.deps-demo $(OUTPUT)/.deps-build

$(OUTPUT) $(BIN) $(OUTPUT)/policy $(OUTPUT)/exporter $(OUTPUT)/agent \
$(OUTPUT)/selftests/unit:
	$(Q)mkdir -p $@

# Which compilers built $(OUTPUT)'s objects: when they change (installing
# gcc moves Debian's cc from clang to gcc, as `make check` after `make demo`
# does) every object is rebuilt, so the tree is one compiler's and
# other-cc's second build is really the other one.
$(OUTPUT)/.cc-id: FORCE | $(OUTPUT) $(DEPS_STAMP)
	$(Q)id="$$($(CC) --version 2>/dev/null | head -1) / $$($(CXX) --version 2>/dev/null | head -1)"; \
	[ "$$id" = "$$(cat $@ 2>/dev/null)" ] || echo "$$id" >$@

.PHONY: FORCE
FORCE:

$(OUTPUT)/%.pb-c.c $(OUTPUT)/%.pb-c.h: exporter/%.proto | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,PROTOC,$<)
	$(Q)$(PROTOC_C) --proto_path=exporter --c_out=$(OUTPUT) $<

$(OUTPUT)/%.pb-c.o: $(OUTPUT)/%.pb-c.c $(OUTPUT)/.cc-id | $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -I$(OUTPUT) -c $< -o $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUTPUT)/%_bl.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -DMM_BOUNDED_LOOPS -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

# The agent opens the bounded build through the default build's skeleton
# (agent/loader.c): the same maps, programs and global variables by name.
$(OUTPUT)/%_bl.skel.h: $(OUTPUT)/%_bl.bpf.o $(OUTPUT)/%.skel.h
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bl_bpf > $@.tmp
	$(Q)members() { sed -n "/^struct $$2 {/,/^};/p" "$$1" | grep -o '\*[a-z_0-9]*;\|__[a-z0-9_]* [a-z_0-9]*;' | sort; }; \
	if [ "$$(members $@.tmp $(subst .,_,$*)_bl_bpf)" != "$$(members $(OUTPUT)/$*.skel.h $(subst .,_,$*)_bpf)" ]; then \
		echo "$@: the bounded build's maps, programs or globals differ from $*.bpf.o's (bpf/compat.bpf.h)" >&2; \
		rm -f $@.tmp; exit 1; fi
	$(Q)mv $@.tmp $@

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@

# The /ui page as a C array (no xxd on a minimal system: od is coreutils).
$(OUTPUT)/ui_index.h: exporter/ui_index.html | $(OUTPUT)
	$(call msg,GEN,$@)
	$(Q){ echo 'static const unsigned char ui_index_html[] = {'; \
	  od -An -v -tx1 $< | sed -e 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; } > $@.tmp && mv $@.tmp $@
$(OUTPUT)/exporter/ui_pages.o: $(OUTPUT)/ui_index.h

# Every C object depends on generated headers so the first build is ordered.
$(OUTPUT)/%.o: %.c $(PROTO_C) $(OUTPUT)/.cc-id | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/%.o: %.cc $(OUTPUT)/.cc-id | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(AGENT_O): $(SKELS)

$(OUTPUT)/libpolicy.a: $(POLICY_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/libk8s.a: $(K8S_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/libexporter.a: $(EXPORTER_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/libmodel.a: $(MODEL_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/libcmd.a: $(CMD_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN)/milometer: $(AGENT_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(AGENT_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a $(AGENT_LIBS) -o $@.tmp
	$(Q)mv -f $@.tmp $@ # a running agent keeps its (old) inode

# The runner's own cases (one test of each outcome), run by test_runner.c.
$(BIN)/unit_runner_cases: $(OUTPUT)/selftests/unit/runner/runner_cases.o \
		$(OUTPUT)/selftests/unit/test_main.o | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

$(BIN)/unit_tests: $(UNIT_O) $(TOOLLIB_O) $(AGENT_PURE_O) $(OUTPUT)/libcmd.a $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a | $(BIN) $(DEPS_STAMP) $(BIN)/unit_runner_cases
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(UNIT_O) $(TOOLLIB_O) $(AGENT_PURE_O) $(OUTPUT)/libcmd.a $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a $(PURE_LIBS) -o $@

$(BIN)/%: selftests/tools/%.c $(TOOLLIB_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(TOOLLIB_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a \
		$(PURE_LIBS) -o $@

# The cgroup id probe checks agent/node/pod_cgroup.c against BPF.
$(BIN)/cgroup_id_probe: selftests/tools/cgroup_id_probe.c $(OUTPUT)/agent/node/pod_cgroup.o | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $^ -o $@

# h2_decode runs the agent's libbpf-free HTTP/2 decoder over recorded
# connections: it links agent/h2/ and libnghttp2.
H2_O := $(patsubst %.c,$(OUTPUT)/%.o,$(sort $(wildcard agent/h2/*.c)))
$(BIN)/h2_decode: selftests/tools/h2_decode.c $(H2_O) | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(H2_O) -lnghttp2 -o $@

# tls_discover prints what TLS capture would hook in a process.
TLS_O := $(patsubst %.c,$(OUTPUT)/%.o,$(sort $(wildcard agent/tls/*.c)))
$(BIN)/tls_discover: selftests/tools/tls_discover.c $(TLS_O) | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(TLS_O) -lelf -lcapstone -o $@

# Benchmark tools link the agent's objects too (they measure its hot paths).
$(BIN)/%: selftests/bench/%.c $(AGENT_LIB_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(AGENT_LIB_O) $(OUTPUT)/libk8s.a $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a $(AGENT_LIBS) -o $@

unit: $(BIN)/unit_tests
	$(Q)$(BIN)/unit_tests $(T)

# The unit tests built apart with AddressSanitizer + UBSan (any finding
# fails the run; leaks too). A crash is left to the runner (handle_segv=0),
# which reports it per test, as in the plain build.
SAN_FLAGS := -O1 -g -fsanitize=address,undefined,float-cast-overflow -fno-omit-frame-pointer \
	     -fno-sanitize-recover=all
# The C linker driver leaves out clang's C++ UBSan runtime: the two checks
# that need it stay off in the RE2 shim (ASan still covers it).
CLANG_CXX_SAN := -fno-sanitize=function,vptr
SAN_CXX_FLAGS = $(SAN_FLAGS) $(if $(findstring clang,$(CXX)),$(CLANG_CXX_SAN))
asan-unit: | $(DEPS_STAMP)
	$(Q)CFLAGS="$(SAN_FLAGS)" CXXFLAGS="$(SAN_CXX_FLAGS)" $(MAKE) --no-print-directory -s \
		OUTPUT=$(OUTPUT)/asan BIN=$(OUTPUT)/asan/bin $(OUTPUT)/asan/bin/unit_tests
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:handle_segv=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(OUTPUT)/asan/bin/unit_tests $(T)

# libFuzzer targets (selftests/fuzz/README.md), built apart with clang:
# everything they link is instrumented for coverage, ASan and UBSan.
#   make fuzz                 every target FUZZ_TIME seconds (default 20)
#   make fuzz FUZZ_TIME=3600 FUZZ_TARGETS="doc cel"
FUZZ_TIME    ?= 20
FUZZ_KINDS   := gateway httproute metricdefinition metricpolicy clusterproperty
FUZZ_TARGETS ?= doc cel config route_match encoders k8s_watch $(addprefix kind_,$(FUZZ_KINDS))
FUZZ_OUT     := $(OUTPUT)/fuzz
FUZZ_FLAGS   := $(SAN_FLAGS) -fsanitize=fuzzer-no-link
FUZZ_LIBS     = $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a $(PURE_LIBS)
FUZZ_DEPS     = $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a \
		selftests/fuzz/fuzz_util.h | $(BIN)

fuzz-build: | $(DEPS_STAMP)
	$(Q)CFLAGS="$(FUZZ_FLAGS)" CXXFLAGS="$(FUZZ_FLAGS) $(CLANG_CXX_SAN)" $(MAKE) --no-print-directory -s \
		CC=$(CLANG) CXX=$(CLANG)++ OUTPUT=$(FUZZ_OUT) BIN=$(FUZZ_OUT)/bin \
		$(addprefix $(FUZZ_OUT)/bin/fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	$(Q)selftests/fuzz/run.sh $(FUZZ_OUT)/bin $(FUZZ_TIME) $(FUZZ_TARGETS)
	$(Q)$(MAKE) --no-print-directory fuzz-bpf-parser-run FUZZ_TIME=$(FUZZ_TIME)

$(BIN)/fuzz_%: selftests/fuzz/fuzz_%.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIBS) -o $@

# one binary per manifest kind from the same source, through `check`'s
# front (compiled in: the other fronts need the agent)
$(BIN)/fuzz_kind_%: selftests/fuzz/fuzz_kind.c agent/cmd/check.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer \
		-DFUZZ_KIND_$(shell echo $* | tr a-z A-Z) $< agent/cmd/check.c $(FUZZ_LIBS) -o $@

# the watch stream's framing: json-c only, compiled in
$(BIN)/fuzz_k8s_watch: selftests/fuzz/fuzz_k8s_watch.c agent/k8s/json_stream.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer -I. $< agent/k8s/json_stream.c $(FUZZ_LIBS) -o $@

# agent/config/options.c (and the feature gates it parses) are libbpf-free:
# compiled in, not the agent's objects
$(BIN)/fuzz_config: selftests/fuzz/fuzz_config.c agent/config/options.c agent/config/features.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $< agent/config/options.c agent/config/features.c \
		$(FUZZ_LIBS) -o $@

integration: all | $(DEPS_STAMP)
	$(Q)selftests/integration/run.sh $(T)

# The tree must compile cleanly with gcc and with clang (a fresh Debian's cc
# may be either): check builds everything a second time with the compiler
# that $(CC) is not, into its own output dir. Both are build packages.
other-cc: | $(DEPS_STAMP)
	$(Q)if $(CC) --version 2>/dev/null | grep -qi clang; then o=gcc; else o=clang; fi; \
	command -v $$o >/dev/null || { echo "make check also builds with $$o, which is missing: run deploy/install-deps.sh as root (or remove $(DEPS_STAMP) and make check again)" >&2; exit 1; }; \
	printf '  %-8s %s\n' OTHER-CC "build-all with $$o in $(OUTPUT)/cc-$$o"; \
	$(MAKE) --no-print-directory CC=$$o OUTPUT=$(OUTPUT)/cc-$$o \
		BIN=$(OUTPUT)/cc-$$o/bin DEPS_STAMP=$(DEPS_STAMP) build-all

check: all $(BIN)/unit_tests other-cc | $(DEPS_STAMP)
	$(Q)selftests/check.sh

demo: all | $(DEPS_STAMP)
	$(Q)deploy/demo.sh

bench: all $(BENCHES) | $(DEPS_STAMP)
	$(Q)selftests/bench/run.sh

# KERNEL_MATRIX_QUICK=1 for the bounded run `make check` does. The full run
# has arm64 legs (the cross-built agent) and renders docs/support-matrix.md
# from its results.
kernel-matrix: deps all
ifeq ($(HOST_ARCH),x86)
	$(Q)$(MAKE) --no-print-directory ARCH=arm64 bin/arm64/milometer
endif
	$(Q)rm -f $(OUTPUT)/kernel-matrix.tsv
	$(Q)selftests/kernel/run.sh --results $(OUTPUT)/kernel-matrix.tsv; s=$$?; \
	if [ -z "$$KERNEL_MATRIX_QUICK$$MM_KERNELS" ]; then \
		selftests/kernel/support_matrix.sh $(OUTPUT)/kernel-matrix.tsv "make kernel-matrix" \
			>docs/support-matrix.md && \
		echo "wrote docs/support-matrix.md"; \
	fi; exit $$s

vmlinux:
	$(Q)vmlinux/gen-vmlinux.sh $(ARCH)

# Every tracked C file but the generated vmlinux.h, in .clang-format's style.
#   make format        rewrite them
#   make format-check  list the ones that differ; fails when any does
FORMAT_FILES = $(shell git ls-files '*.c' '*.h' | grep -v '^vmlinux/')
format: | $(DEPS_STAMP)
	$(Q)clang-format -i $(FORMAT_FILES)

format-check: | $(DEPS_STAMP)
	$(Q)command -v clang-format >/dev/null || { echo "format-check: clang-format is missing: run deploy/install-deps.sh --build-only as root" >&2; exit 1; }; \
	bad=0; for f in $(FORMAT_FILES); do \
		clang-format "$$f" | cmp -s - "$$f" || { echo "  not formatted: $$f"; bad=$$((bad + 1)); }; \
	done; \
	if [ $$bad -ne 0 ]; then echo "format-check: $$bad of $(words $(FORMAT_FILES)) files differ from .clang-format's style: run make format" >&2; exit 1; fi; \
	echo "format-check: $(words $(FORMAT_FILES)) files formatted"

# The container image (FROM scratch + binary + ldd closure), as an OCI
# archive; selftests/integration/test_image.sh builds and runs it in check.
image: deps $(BIN)/milometer
	$(Q)deploy/image/build.sh $(BIN)/milometer $(BIN)/milometer-image.oci.tar

# One tag for x86-64 and arm64 nodes: both images (the arm64 one cross-built,
# docs/architectures.md) under an OCI image index, checked by the image-spec.
image-multiarch: image
	$(Q)$(MAKE) --no-print-directory ARCH=$(if $(filter x86,$(HOST_ARCH)),arm64,x86) image
	$(Q)deploy/image/build-index.sh $(BIN)/milometer-index.oci.tar localhost/milometer:dev \
		bin/milometer-image.oci.tar bin/$(if $(filter x86,$(HOST_ARCH)),arm64,x86)/milometer-image.oci.tar
	$(Q)selftests/integration/oci_index_check.py $(BIN)/milometer-index.oci.tar localhost/milometer:dev amd64 arm64

install: all
	$(Q)install -D -m 0755 $(BIN)/milometer $(DESTDIR)/usr/local/bin/milometer

clean:
	$(Q)rm -rf $(OUTPUT) $(BIN)

# (not the second compiler's tree in $(OUTPUT)/cc-*: its sub-make reads it)
-include $(filter-out $(OUTPUT)/cc-%,$(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d $(OUTPUT)/*/*/*/*.d))

# --- BPF program tests (selftests/bpf) ------------------------------------
# The data path's headers compiled into a test object whose raw_tp programs
# BPF_PROG_TEST_RUN runs on inputs from user space (as the kernel's
# tools/testing/selftests/bpf/prog_tests do). Needs root; see check.sh.
BPFTEST_OUT := $(OUTPUT)/selftests/bpf
BPFTEST_SRCS := $(sort $(wildcard selftests/bpf/*.c))
BPFTEST_O := $(patsubst %.c,$(OUTPUT)/%.o,$(BPFTEST_SRCS))

.PHONY: bpf-tests
bpf-tests: $(BIN)/bpf_tests

check: $(BIN)/bpf_tests

$(BPFTEST_OUT)/%.bpf.o: selftests/bpf/progs/%.bpf.c $(wildcard bpf/*.h) | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(BPFTEST_OUT)/%.skel.h: $(BPFTEST_OUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@

$(BPFTEST_O): $(BPFTEST_OUT)/parse_test.skel.h

$(BIN)/bpf_tests: $(BPFTEST_O) $(OUTPUT)/selftests/unit/test_main.o $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(BPFTEST_O) $(OUTPUT)/selftests/unit/test_main.o \
		$(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(OUTPUT)/libmodel.a $(AGENT_LIBS) -o $@

# The data path's cost per exchange through the same harness (make bench).
$(BIN)/bench_bpf_exchange: selftests/bench/bpf/bench_bpf_exchange.c \
		$(BPFTEST_OUT)/bpf_fixture.o | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(BPFTEST_OUT)/bpf_fixture.o $(AGENT_LIBS) -o $@

bench: $(BIN)/bench_bpf_exchange

# Floors of the data path's cost (selftests/bench/bpf/floor.bpf.c): the
# attach point, a per-socket state, a prefix copy, each without milometer.
$(OUTPUT)/selftests/bench/floor.bpf.o: selftests/bench/bpf/floor.bpf.c | $(OUTPUT) $(DEPS_STAMP)
	$(call msg,BPF,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUTPUT)/selftests/bench/floor.skel.h: $(OUTPUT)/selftests/bench/floor.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name floor_bpf > $@

$(BIN)/bench_floor: selftests/bench/bench_floor.c $(OUTPUT)/selftests/bench/floor.skel.h | $(BIN) $(DEPS_STAMP)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) -I$(OUTPUT)/selftests/bench $< $(AGENT_LIBS) -o $@

# --- libFuzzer: the BPF parsing headers as user-space C (selftests/fuzz) ---
# Part of `make fuzz` (its own rules: the glue is compiled against vmlinux.h
# with bpf_shim/ in place of libbpf's helper headers). clang only (libFuzzer
# runtime: Debian's libclang-rt-14-dev). The split-consistency check is on.
BFUZZ_SAN   := -g -O1 -fno-omit-frame-pointer -fno-sanitize-recover=undefined
BFUZZ_FLAGS := $(BFUZZ_SAN) -fsanitize=fuzzer,address,undefined
BFUZZ_OUT   := $(OUTPUT)/selftests/fuzz
BFUZZ_ENV   ?=

.PHONY: fuzz-bpf-parser fuzz-bpf-parser-run
fuzz-bpf-parser: $(BIN)/fuzz_bpf_parser

$(BFUZZ_OUT)/bpf_parser_glue.o: selftests/fuzz/bpf_parser_glue.c selftests/fuzz/bpf_parser_glue.h \
		$(wildcard selftests/fuzz/bpf_shim/bpf/*.h) $(wildcard bpf/*.h) | $(OUTPUT)
	$(call msg,FUZZ-CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BFUZZ_SAN) -fsanitize=fuzzer-no-link,address,undefined -Wall -Werror \
		-Wno-unused-function -D__TARGET_ARCH_$(ARCH) -Iselftests/fuzz/bpf_shim -I. -Ivmlinux/$(ARCH) -c $< -o $@

$(BIN)/fuzz_bpf_parser: selftests/fuzz/fuzz_bpf_parser.c $(BFUZZ_OUT)/bpf_parser_glue.o \
		selftests/fuzz/bpf_parser_glue.h | $(BIN)
	$(call msg,FUZZ-LD,$@)
	$(Q)$(CLANG) $(BFUZZ_FLAGS) -Wall -Wextra -Werror -I. $< $(BFUZZ_OUT)/bpf_parser_glue.o -o $@

# A bounded run from the seed corpus (new inputs go to a scratch corpus).
fuzz-bpf-parser-run: $(BIN)/fuzz_bpf_parser
	$(Q)mkdir -p $(BFUZZ_OUT)/corpus_parser
	$(Q)$(BFUZZ_ENV) $(BIN)/fuzz_bpf_parser -max_total_time=$(FUZZ_TIME) -max_len=4096 \
		-dict=selftests/fuzz/bpf_parser.dict -print_final_stats=1 \
		-artifact_prefix=$(BFUZZ_OUT)/ \
		$(BFUZZ_OUT)/corpus_parser selftests/fuzz/corpus_parser
