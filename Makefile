# SPDX-License-Identifier: Apache-2.0
# milometer: one Makefile, intermediates in .output/, binaries in bin/.
#   make            build bin/milometer
#   make demo       run the agent against a real local nginx with example CRDs
#   make check      unit tests + BPF/integration tests (root)
#   make unit       unit tests only (no root)
#   make bench      agent on/off benchmark, encode/memory figures
#   make V=1 ...    show the commands

OUTPUT   := .output
BIN      := bin
ARCH     := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CLANG    ?= clang
CC       ?= cc
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
CFLAGS   += -std=gnu11 -Wall -Wextra -Werror -Wno-unused-parameter \
	    -Wno-missing-field-initializers -D_GNU_SOURCE \
	    -I. -I$(OUTPUT) -DMM_VERSION='"$(VERSION)"'
CXXFLAGS ?= -O2 -g
CXXFLAGS += -std=c++11 -Wall -Wextra -Werror -I.
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	    -I$(OUTPUT) -Ivmlinux/$(ARCH) -I.

# policy/ and exporter/ never link libbpf: they are unit-tested without root.
POLICY_SRCS   := $(sort $(wildcard policy/*/*.c))
POLICY_CXX_SRCS := $(sort $(wildcard policy/*/*.cc))
EXPORTER_SRCS := $(sort $(wildcard exporter/*.c))
AGENT_SRCS    := $(sort $(wildcard agent/*.c))
BPF_SRCS      := $(sort $(wildcard bpf/*.bpf.c))
UNIT_SRCS     := $(sort $(wildcard selftests/unit/*.c))
TOOL_SRCS     := $(sort $(wildcard selftests/tools/*.c))
# test tooling shared by the unit tests and the tools (not part of the agent)
TOOLLIB_SRCS  := $(sort $(wildcard selftests/tools/lib/*.c))
BENCH_SRCS    := $(sort $(wildcard selftests/bench/*.c))
PROTOS        := $(sort $(wildcard exporter/*.proto))

PROTO_C   := $(patsubst exporter/%.proto,$(OUTPUT)/%.pb-c.c,$(PROTOS))
PROTO_O   := $(PROTO_C:.c=.o)
POLICY_O  := $(patsubst %.c,$(OUTPUT)/%.o,$(POLICY_SRCS)) \
	     $(patsubst %.cc,$(OUTPUT)/%.o,$(POLICY_CXX_SRCS))
EXPORTER_O:= $(patsubst %.c,$(OUTPUT)/%.o,$(EXPORTER_SRCS)) $(PROTO_O)
AGENT_O   := $(patsubst %.c,$(OUTPUT)/%.o,$(AGENT_SRCS))
BPF_O     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.bpf.o,$(BPF_SRCS))
SKELS     := $(patsubst bpf/%.bpf.c,$(OUTPUT)/%.skel.h,$(BPF_SRCS))
UNIT_O    := $(patsubst %.c,$(OUTPUT)/%.o,$(UNIT_SRCS))
TOOLLIB_O := $(patsubst %.c,$(OUTPUT)/%.o,$(TOOLLIB_SRCS))
TOOLS     := $(patsubst selftests/tools/%.c,$(BIN)/%,$(TOOL_SRCS))
BENCHES   := $(patsubst selftests/bench/%.c,$(BIN)/%,$(BENCH_SRCS))
# agent objects with no libbpf, unit-tested like policy/ and exporter/
AGENT_PURE_O := $(OUTPUT)/agent/deferred.o $(OUTPUT)/agent/options.o
# agent objects a bench tool may link: everything but main()
AGENT_LIB_O := $(filter-out $(OUTPUT)/agent/main.o,$(AGENT_O))

PURE_LIBS  := -lre2 -lstdc++ -lyaml -lcurl -lprotobuf-c -lmicrohttpd -lz -lm -lpthread
AGENT_LIBS := -lbpf -lelf $(PURE_LIBS)

# Generated sources (protoc-c, skeletons) are never "intermediate": deleting
# them makes parallel and later builds race for them.
.SECONDARY:

.PHONY: all deps demo check unit asan-unit integration bench fuzz fuzz-build \
	format vmlinux install clean
.DEFAULT_GOAL := all

all: deps-check $(BIN)/milometer $(TOOLS)

# Install missing Debian packages when root; otherwise say what is missing.
deps:
	$(Q)deploy/install-deps.sh

deps-check:
	$(Q)deploy/install-deps.sh --build-only

$(OUTPUT) $(BIN) $(OUTPUT)/policy $(OUTPUT)/exporter $(OUTPUT)/agent \
$(OUTPUT)/selftests/unit:
	$(Q)mkdir -p $@

$(OUTPUT)/%.pb-c.c $(OUTPUT)/%.pb-c.h: exporter/%.proto | $(OUTPUT)
	$(call msg,PROTOC,$<)
	$(Q)$(PROTOC_C) --proto_path=exporter --c_out=$(OUTPUT) $<

$(OUTPUT)/%.pb-c.o: $(OUTPUT)/%.pb-c.c
	$(call msg,CC,$@)
	$(Q)$(CC) -O2 -g -I$(OUTPUT) -c $< -o $@

$(OUTPUT)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) | $(OUTPUT)
	$(call msg,BPF,$@)
	$(Q)$(CLANG) $(BPF_CFLAGS) -c $< -o $@.tmp
	$(Q)$(BPFTOOL) gen object $@ $@.tmp
	$(Q)rm -f $@.tmp

$(OUTPUT)/%.skel.h: $(OUTPUT)/%.bpf.o
	$(call msg,GEN-SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name $(subst .,_,$*)_bpf > $@

# Every C object depends on generated headers so the first build is ordered.
$(OUTPUT)/%.o: %.c $(PROTO_C) | $(OUTPUT)
	$(call msg,CC,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(OUTPUT)/%.o: %.cc | $(OUTPUT)
	$(call msg,CXX,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CXXFLAGS) -MMD -MP -c $< -o $@

$(AGENT_O): $(SKELS)

$(OUTPUT)/libpolicy.a: $(POLICY_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(OUTPUT)/libexporter.a: $(EXPORTER_O)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(BIN)/milometer: $(AGENT_O) $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(AGENT_O) $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(AGENT_LIBS) -o $@.tmp
	$(Q)mv -f $@.tmp $@ # a running agent keeps its (old) inode

$(BIN)/unit_tests: $(UNIT_O) $(TOOLLIB_O) $(AGENT_PURE_O) $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $(UNIT_O) $(TOOLLIB_O) $(AGENT_PURE_O) $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(PURE_LIBS) -o $@

$(BIN)/%: selftests/tools/%.c $(TOOLLIB_O) $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(TOOLLIB_O) $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a \
		$(PURE_LIBS) -o $@

# Benchmark tools link the agent's objects too (they measure its hot paths).
$(BIN)/%: selftests/bench/%.c $(AGENT_LIB_O) $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a | $(BIN)
	$(call msg,LINK,$@)
	$(Q)$(CC) $(CFLAGS) $< $(AGENT_LIB_O) $(OUTPUT)/libpolicy.a \
		$(OUTPUT)/libexporter.a $(AGENT_LIBS) -o $@

unit: deps-check $(BIN)/unit_tests
	$(Q)$(BIN)/unit_tests $(T)

# The unit tests built apart with AddressSanitizer + UBSan (any finding
# fails the run; leaks too).
SAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	     -fno-sanitize-recover=all
# The C linker driver leaves out clang's C++ UBSan runtime: the two checks
# that need it stay off in the RE2 shim (ASan still covers it).
CLANG_CXX_SAN := -fno-sanitize=function,vptr
SAN_CXX_FLAGS = $(SAN_FLAGS) $(if $(findstring clang,$(CXX)),$(CLANG_CXX_SAN))
asan-unit: deps-check
	$(Q)CFLAGS="$(SAN_FLAGS)" CXXFLAGS="$(SAN_CXX_FLAGS)" $(MAKE) --no-print-directory -s \
		OUTPUT=$(OUTPUT)/asan BIN=$(OUTPUT)/asan/bin $(OUTPUT)/asan/bin/unit_tests
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		$(OUTPUT)/asan/bin/unit_tests $(T)

# libFuzzer targets (selftests/fuzz/README.md), built apart with clang:
# everything they link is instrumented for coverage, ASan and UBSan.
#   make fuzz                 every target FUZZ_TIME seconds (default 20)
#   make fuzz FUZZ_TIME=3600 FUZZ_TARGETS="doc cel"
FUZZ_TIME    ?= 20
FUZZ_KINDS   := gateway httproute metricdefinition metricpolicy clusterproperty
FUZZ_TARGETS ?= doc cel config route_match encoders $(addprefix kind_,$(FUZZ_KINDS))
FUZZ_OUT     := $(OUTPUT)/fuzz
FUZZ_FLAGS   := $(SAN_FLAGS) -fsanitize=fuzzer-no-link
FUZZ_LIBS     = $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a $(PURE_LIBS)
FUZZ_DEPS     = $(OUTPUT)/libpolicy.a $(OUTPUT)/libexporter.a \
		selftests/fuzz/fuzz_util.h | $(BIN)

fuzz-build: deps-check
	$(Q)CFLAGS="$(FUZZ_FLAGS)" CXXFLAGS="$(FUZZ_FLAGS) $(CLANG_CXX_SAN)" $(MAKE) --no-print-directory -s \
		CC=$(CLANG) CXX=$(CLANG)++ OUTPUT=$(FUZZ_OUT) BIN=$(FUZZ_OUT)/bin \
		$(addprefix $(FUZZ_OUT)/bin/fuzz_,$(FUZZ_TARGETS))

fuzz: fuzz-build
	$(Q)selftests/fuzz/run.sh $(FUZZ_OUT)/bin $(FUZZ_TIME) $(FUZZ_TARGETS)

$(BIN)/fuzz_%: selftests/fuzz/fuzz_%.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $< $(FUZZ_LIBS) -o $@

# one binary per manifest kind from the same source
$(BIN)/fuzz_kind_%: selftests/fuzz/fuzz_kind.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer \
		-DFUZZ_KIND_$(shell echo $* | tr a-z A-Z) $< $(FUZZ_LIBS) -o $@

# agent/options.c is libbpf-free: compiled in, not the agent's objects
$(BIN)/fuzz_config: selftests/fuzz/fuzz_config.c agent/options.c $(FUZZ_DEPS)
	$(call msg,FUZZ,$@)
	$(Q)$(CC) $(CFLAGS) -fsanitize=fuzzer $< agent/options.c $(FUZZ_LIBS) -o $@

integration: all
	$(Q)selftests/integration/run.sh $(T)

check: deps all $(BIN)/unit_tests
	$(Q)selftests/check.sh

demo: deps all
	$(Q)deploy/demo.sh

bench: deps all $(BIN)/unit_tests $(BENCHES)
	$(Q)selftests/bench/run.sh

vmlinux:
	$(Q)vmlinux/gen-vmlinux.sh $(ARCH)

format:
	$(Q)clang-format -i $$(git ls-files '*.c' '*.h' | grep -v '^vmlinux/')

install: all
	$(Q)install -D -m 0755 $(BIN)/milometer $(DESTDIR)/usr/local/bin/milometer

clean:
	$(Q)rm -rf $(OUTPUT) $(BIN)

-include $(wildcard $(OUTPUT)/*/*.d $(OUTPUT)/*/*/*.d $(OUTPUT)/*/*/*/*.d)
