# SPDX-License-Identifier: GPL-2.0
#
#   make            the module (against KDIR) and the programs make install installs
#   make check      install what is missing, build everything, run every tier
#   make check-debug tier 2 again on a debug kernel (KASAN, lockdep, kmemleak...),
#                   alone (make check runs it beside the other guests)
#   make bench      the benchmark table
#   make demo       a qemu guest with the module and simulated HBM, faults, table
#   make install    (DESTDIR-aware) the module into /lib/modules/<ver>/updates
#
# KDIR is /lib/modules/$(uname -r)/build as on any real node; where that does
# not exist (a build machine whose own kernel has no headers) it is the
# newest Debian headers installed.

SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD := build
CACHE := $(TOP)/.cache

# Debian's headers, newest last: the kernels `make check` tests against.
DEB_KVERS := $(shell ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | \
		sed 's|.*/linux-headers-||' | sort -V)
RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
KDIR ?= $(if $(wildcard $(RUNNING_KDIR)),$(RUNNING_KDIR),$(if $(DEB_KVERS),/usr/src/linux-headers-$(lastword $(DEB_KVERS))))

CC ?= cc
# The project's version, in one place: dkms.conf's PACKAGE_VERSION, which
# DKMS needs there; the programs' --version is given it from here.
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)
VERSION_DEF := -DHBM_VERSION='"$(VERSION)"'
# What Debian builds a package's programs with (dpkg-buildflags of dpkg
# 1.21.22, bookworm, hardening=+all; -fPIE is GCC's own default there):
# hbmguardd runs as root and parses what the kernel, its peers and its
# clients send it.  The stack protector, glibc's checked string and memory
# calls, and the GOT read-only once the program is loaded, every symbol
# bound then.
HARDEN := -fstack-protector-strong -U_FORTIFY_SOURCE -D_FORTIFY_SOURCE=2 -Wformat \
	-Werror=format-security -Wl,-z,relro -Wl,-z,now
# A packager's own (dpkg-buildflags' CPPFLAGS, CFLAGS and LDFLAGS, from the
# environment or the command line) come after, so that theirs win:
# -ffile-prefix-map for a reproducible build, a later release's
# _FORTIFY_SOURCE=3 (ours undefined first where theirs name it, -Wp,-D...
# too: a redefinition is an error here).
PACKAGER_FLAGS := $(if $(findstring _FORTIFY_SOURCE,$(CPPFLAGS) $(CFLAGS)),-U_FORTIFY_SOURCE) \
	$(CPPFLAGS) $(CFLAGS) $(LDFLAGS)
CFLAGS_USER := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -g $(HARDEN) $(PACKAGER_FLAGS) \
	-I$(TOP)/uapi -I$(TOP)/kmod -I$(TOP)/daemon
CHECK_LIBS := $(shell pkg-config --libs check 2>/dev/null)
# float-cast-overflow: a double out of an integer's range converted to it
# (undefined); GCC's -fsanitize=undefined leaves it out.
# glibc's checked calls (_FORTIFY_SOURCE) are not ASan's: it checks the
# plain ones itself, so the sanitized build has them plain.
SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all \
	-fno-omit-frame-pointer -U_FORTIFY_SOURCE

CORE_SRC := kmod/table.c kmod/policy.c kmod/mce_decode.c kmod/mtree.c
CORE_HDR := kmod/core.h kmod/mce_decode.h kmod/mtree.h uapi/linux/hbmguard.h
UNIT_SRC := $(wildcard tests/unit/*.c)
DAEMON_SRC := daemon/state.c daemon/config.c daemon/timespan.c daemon/journal.c daemon/ctl.c daemon/seen.c daemon/incidents.c \
	daemon/losses.c daemon/sha256.c daemon/ratelimit.c
DAEMON_HDR := daemon/timespan.h daemon/seen.h daemon/losses.h daemon/incidents.h daemon/state.h daemon/config.h daemon/journal.h daemon/ctl.h daemon/systemd/hbmguard.catalog \
	daemon/core.h daemon/daemon.h daemon/client.h daemon/recovery.h daemon/sha256.h daemon/ratelimit.h \
	daemon/restore_msg.h
# hbmguardd's source, core and sinks (daemon/hbmguardd.c says how they fit).
DAEMON_MAIN := daemon/hbmguardd.c daemon/daemon.c daemon/core.c daemon/kernel.c daemon/store.c daemon/amdgpu.c \
	daemon/status.c daemon/client.c daemon/control.c daemon/recovery.c daemon/genl.c daemon/metrics.c \
	daemon/scheduler.c daemon/signals.c daemon/cluster.c daemon/etcd.c daemon/curl_dl.c daemon/dl.c \
	daemon/mhd_dl.c
DAEMON_MAIN_HDR := daemon/hbmguardd.h daemon/parts.h daemon/kernel.h daemon/store.h daemon/status.h daemon/amdgpu.h \
	daemon/control.h daemon/genl.h daemon/metrics.h daemon/scheduler.h daemon/signals.h \
	daemon/cluster.h daemon/etcd.h daemon/curl_dl.h daemon/dl.h daemon/mhd_dl.h
# The metrics endpoint's HTTP server (daemon/metrics.c), Debian's libmicrohttpd-dev:
# its header only, the library loaded when the endpoint first listens (mhd_dl.h).
MHD_CFLAGS := $(shell pkg-config --cflags libmicrohttpd 2>/dev/null)
# The GPU sources' parsers (issue 13): pure code, unit-tested before their wiring.
DAEMON_SRC += daemon/nvlog.c daemon/amdgpu_ras.c daemon/kmsg.c
DAEMON_HDR += daemon/nvlog.h daemon/amdgpu_ras.h daemon/kmsg.h
# Names made valid UTF-8, for hbmctl's JSON and the metrics' exposition.
DAEMON_SRC += daemon/utf8.c
DAEMON_HDR += daemon/utf8.h
# The sockets systemd passes (socket activation): the control socket's and the metrics'.
DAEMON_SRC += daemon/passed.c
DAEMON_HDR += daemon/passed.h
# The control socket's connections, released by a child (fdsink.c), and
# whose each is (subuid.c: /etc/subuid's users).
DAEMON_SRC += daemon/fdsink.c daemon/subuid.c
DAEMON_HDR += daemon/fdsink.h daemon/subuid.h
# The cluster link's pure parts (issue 14): etcd's messages and the incident
# protocol across nodes, unit-tested; its I/O (etcd.c: libcurl driven by
# sd-event; cluster.c, in hbmguardd) is run by check-cluster's agents
# against a real etcd.
CLUSTER_PURE := daemon/etcd_msg.c daemon/cluster_proto.c daemon/etcd_msg.h daemon/cluster_proto.h
CLUSTER_SRC := daemon/cluster.c daemon/etcd.c daemon/curl_dl.c daemon/dl.c daemon/etcd_msg.c daemon/cluster_proto.c \
	daemon/config.c daemon/timespan.c daemon/ctl.c daemon/ratelimit.c
CLUSTER_HDR := daemon/cluster.h daemon/etcd.h daemon/curl_dl.h daemon/dl.h daemon/etcd_msg.h daemon/cluster_proto.h \
	daemon/config.h daemon/timespan.h daemon/ctl.h daemon/ratelimit.h
KMOD_SRC := Kbuild $(wildcard kmod/*.c kmod/*.h) uapi/linux/hbmguard.h

.PHONY: all module modules-all programs userspace system-guest check check-host check-unit check-unit-plain \
	check-unit-san check-unit-san-apart check-unit-san-rest check-config-keys check-cli \
	check-ynl check-readme check-unitfile check-install \
	check-shape check-cluster check-fuzz fuzz check-kernel check-debug check-system check-after-deps bench demo \
	clean-module FORCE \
	deps install install-dkms clean

all: module programs

deps:
	@$(TOP)/scripts/deps.sh

# The module in the source tree, as DKMS builds it.
module:
	@test -n "$(KDIR)" || { echo "no kernel headers: install linux-headers-$$(uname -r) or set KDIR" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(TOP) W=1 modules

# One build per kernel, each in its own copy of the sources so that their
# objects do not mix: build/<kver>/hbmguard.ko.  A kver is one of Debian's
# (its installed headers) or "debug", the debug kernel's own tree
# (scripts/debug-kernel.sh, found through build/debug/kernel).
kdir = $(if $(filter debug,$(1)),$(shell cat $(TOP)/$(BUILD)/debug/kernel)/build,/usr/src/linux-headers-$(1))

$(BUILD)/%/hbmguard.ko: $(KMOD_SRC)
	@mkdir -p $(BUILD)/$*
	@cp -p --parents $(KMOD_SRC) $(BUILD)/$*/
	$(MAKE) -C $(call kdir,$*) M=$(TOP)/$(BUILD)/$* W=1 \
		$(if $(filter debug,$*),HBMGUARD_DEBUG=y) modules 2>&1 | \
		tee $(BUILD)/$*/build.log
	@! grep -iE 'warning:|error:' $(BUILD)/$*/build.log || \
		{ echo "build for $* has warnings" >&2; rm -f $@; exit 1; }

# The test-only modules (tests/kmod), against the hbmguard.ko just built.
$(BUILD)/%/testmods/hbm_test_provider.ko: $(BUILD)/%/hbmguard.ko $(wildcard tests/kmod/*) kmod/hbmguard_provider.h kmod/nvidia_xid.h
	@mkdir -p $(BUILD)/$*/testmods
	@# Kbuild does not notice hbmguard's symbol CRCs changing: start afresh.
	@rm -rf $(BUILD)/$*/testmods/*
	@cp -p tests/kmod/* $(BUILD)/$*/testmods/
	$(MAKE) -C $(call kdir,$*) M=$(TOP)/$(BUILD)/$*/testmods HBM_TOP=$(TOP) \
		KBUILD_EXTRA_SYMBOLS=$(TOP)/$(BUILD)/$*/Module.symvers W=1 modules 2>&1 | \
		tee $(BUILD)/$*/testmods/build.log
	@! grep -iE 'warning:|error:' $(BUILD)/$*/testmods/build.log || \
		{ echo "test modules for $* have warnings" >&2; rm -f $@; exit 1; }

# The debug kernel, built once per machine into .cache/; its directory is
# rewritten only when it changes, so that the modules follow a new kernel.
$(BUILD)/debug/kernel: FORCE
	@mkdir -p $(@D)
	@+$(TOP)/scripts/debug-kernel.sh >$@.new
	@if cmp -s $@.new $@; then rm $@.new; else mv $@.new $@; fi
$(BUILD)/debug/hbmguard.ko: $(BUILD)/debug/kernel
FORCE:

modules-all: $(foreach v,$(DEB_KVERS),$(BUILD)/$(v)/hbmguard.ko $(BUILD)/$(v)/testmods/hbm_test_provider.ko)

LIB_SRC := daemon/libhbmguard/table.c daemon/libhbmguard/rank.c daemon/libhbmguard/aperture.c \
	daemon/ctl.c
LIB_HDR := daemon/libhbmguard/hbmguard.h uapi/linux/hbmguard.h daemon/ctl.h
PREFIX ?= /usr/local

$(BUILD)/libhbmguard.a: $(LIB_SRC) $(LIB_HDR)
	@mkdir -p $(BUILD)/lib
	cd $(BUILD)/lib && $(CC) $(filter-out -Wl%,$(CFLAGS_USER)) -c $(addprefix $(TOP)/,$(LIB_SRC))
	$(AR) rcs $@ $(patsubst %.c,$(BUILD)/lib/%.o,$(notdir $(LIB_SRC)))

$(BUILD)/libhbmguard.so: $(LIB_SRC) $(LIB_HDR) daemon/libhbmguard/libhbmguard.map
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -fPIC -shared -Wl,-soname,libhbmguard.so.0 \
		-Wl,--version-script=daemon/libhbmguard/libhbmguard.map $(LIB_SRC) -o $@

$(BUILD)/hbmguard.pc: daemon/libhbmguard/hbmguard.pc.in
	@mkdir -p $(@D)
	sed 's|@PREFIX@|$(PREFIX)|' $< >$@

# What make install lays down; userspace adds the tests' and the bench's.
programs: $(BUILD)/libhbmguard.a $(BUILD)/libhbmguard.so $(BUILD)/hbmguard.pc \
	$(BUILD)/hbmguardd $(BUILD)/hbmctl
userspace: programs $(BUILD)/unit $(BUILD)/unit-san $(BUILD)/guest/hbmtest \
	$(BUILD)/guest/hbmnl $(BUILD)/guest/hbmrank $(BUILD)/bench-core $(BUILD)/guest/hbmbench \
	$(BUILD)/guest/hbmrankbench $(BUILD)/cluster-agent $(BUILD)/cluster-unwatch

# The NVML source and the GPU registrar (issue 13), against the real nvml.h.
DAEMON_NVML := daemon/nvml_source.c daemon/nvml_facts.c daemon/gpus.c
$(BUILD)/hbmguardd: $(DAEMON_MAIN) $(DAEMON_MAIN_HDR) $(DAEMON_SRC) $(DAEMON_HDR) \
		uapi/linux/hbmguard.h $(DAEMON_NVML) daemon/gpus.h daemon/nvml_source.h daemon/nvml_facts.h $(CACHE)/nvml/include/nvml.h \
		dkms.conf $(CLUSTER_PURE)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(VERSION_DEF) -I$(CACHE)/nvml/include -pthread \
		$(shell pkg-config --cflags libnl-genl-3.0 libsystemd json-c libcurl) $(MHD_CFLAGS) \
		$(DAEMON_MAIN) $(DAEMON_SRC) $(DAEMON_NVML) $(filter %.c,$(CLUSTER_PURE)) \
		$(shell pkg-config --libs libnl-genl-3.0 libsystemd json-c) -o $@

# hbmctl's JSON is json-c's (daemon/cli.c); the advisor and systemd's time
# spans are pure code of their own (advise.c, timespan.c).
HBMCTL_SRC := daemon/hbmctl.c daemon/cli.c daemon/utf8.c daemon/advise.c daemon/timespan.c
HBMCTL_DEPS := $(HBMCTL_SRC) daemon/cli.h daemon/utf8.h daemon/advise.h daemon/timespan.h \
	$(BUILD)/libhbmguard.a dkms.conf
$(BUILD)/hbmctl: $(HBMCTL_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(VERSION_DEF) -Idaemon/libhbmguard $(shell pkg-config --cflags json-c) \
		$(HBMCTL_SRC) $(BUILD)/libhbmguard.a $(shell pkg-config --libs json-c) -lm -o $@

# Static copies for the busybox guests.
$(BUILD)/guest/hbmctl: $(HBMCTL_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(VERSION_DEF) -Idaemon/libhbmguard -static \
		$(shell pkg-config --cflags json-c) $(HBMCTL_SRC) $(BUILD)/libhbmguard.a \
		$(shell pkg-config --libs --static json-c) -lm -o $@

# recovery.c too, its neighbours stubbed (tests/unit/check_recovery.c); the
# core and the store, behind a source of the test's own (check_core.c); the
# SIGBUS guard, included by tests/unit/check_aperture.c.
UNIT_DAEMON := $(DAEMON_SRC) daemon/advise.c daemon/recovery.c daemon/core.c daemon/store.c daemon/amdgpu.c \
	daemon/metrics.c daemon/mhd_dl.c daemon/dl.c daemon/scheduler.c $(MHD_CFLAGS) \
	$(shell pkg-config --cflags libnl-genl-3.0 libsystemd)
UNIT_DAEMON += -DHBM_FIXTURES='"$(TOP)/tests/unit/fixtures"'
UNIT_DAEMON += daemon/cli.c $(shell pkg-config --cflags json-c)
UNIT_DAEMON += $(filter %.c,$(CLUSTER_PURE))
# genl.c against this host's own generic netlink controller (tests/unit/check_genl.c).
UNIT_DAEMON += daemon/genl.c
UNIT_LIBS := $(CHECK_LIBS) $(shell pkg-config --libs libsystemd json-c libnl-genl-3.0) -lm
UNIT_DEPS := $(UNIT_SRC) $(CORE_SRC) $(CORE_HDR) $(DAEMON_SRC) $(DAEMON_HDR) daemon/recovery.c \
	daemon/core.c daemon/store.c daemon/amdgpu.c daemon/amdgpu.h daemon/metrics.c daemon/scheduler.c \
	daemon/mhd_dl.c daemon/mhd_dl.h daemon/dl.c daemon/dl.h \
	$(DAEMON_MAIN_HDR) \
	daemon/hbmguardd.h daemon/libhbmguard/aperture.c daemon/libhbmguard/rank.c daemon/libhbmguard/hbmguard.h \
	daemon/cli.c daemon/cli.h daemon/advise.c daemon/advise.h $(CLUSTER_PURE) daemon/genl.c daemon/genl.h

$(BUILD)/unit: $(UNIT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -DHBM_CATALOG='"$(TOP)/daemon/systemd/hbmguard.catalog"' \
		$(UNIT_SRC) $(CORE_SRC) $(UNIT_DAEMON) $(UNIT_LIBS) -o $@

$(BUILD)/unit-san: $(UNIT_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -DHBM_CATALOG='"$(TOP)/daemon/systemd/hbmguard.catalog"' \
		-O1 $(SAN) $(UNIT_SRC) $(CORE_SRC) $(UNIT_DAEMON) $(UNIT_LIBS) -o $@

# NVIDIA's nvml.h from Debian's libnvidia-ml-dev (scripts/deps.sh nvml, not
# installed): the NVML source, hbmnvml and the fake library are built against it.
NVML_INC := $(CACHE)/nvml/include
NVML_H := $(NVML_INC)/nvml.h
NVML_SRC := daemon/nvml_source.c daemon/nvml_source.h daemon/nvml_facts.c daemon/nvml_facts.h
.PHONY: gpu-bundle check-nvml-view
programs: $(BUILD)/hbmnvml
$(NVML_H):
	$(TOP)/scripts/deps.sh nvml

$(BUILD)/hbmnvml: daemon/hbmnvml.c $(NVML_SRC) $(NVML_H) daemon/ctl.c daemon/ctl.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -I$(NVML_INC) -pthread daemon/hbmnvml.c daemon/nvml_source.c \
		daemon/ctl.c -o $@

# The test double of libnvidia-ml.so.1 (tests/nvml/fake_nvml.c); an older
# driver's library, without nvmlDeviceGetRemappedRows; and one without a
# function NVML cannot be used without.  The guests' (nodes/) also opens the
# driver's device nodes, as the real one does: tier 1 runs without them.
FAKE_NVML := $(BUILD)/nvml/libnvidia-ml.so.1 $(BUILD)/nvml/old/libnvidia-ml.so.1 \
	$(BUILD)/nvml/ancient/libnvidia-ml.so.1 $(BUILD)/nvml/nodes/libnvidia-ml.so.1
$(FAKE_NVML): tests/nvml/fake_nvml.c $(NVML_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -I$(NVML_INC) -fPIC -shared -fvisibility=hidden \
		-Wl,-soname,libnvidia-ml.so.1 $(if $(findstring /old/,$@),-DFAKE_OLD) \
		$(if $(findstring /ancient/,$@),-DFAKE_ANCIENT) \
		$(if $(findstring /nodes/,$@),-DFAKE_NODES) $< -o $@

# hbmnvml with bookworm's loader and libc, for a GPU node whose libc is not
# bookworm's or whose loader is elsewhere (scripts/gpu-check.sh runs it).
# libpthread, libdl, libm and librt too: the driver's libnvidia-ml.so.1 names
# them, and they must come from the same glibc as the libc already loaded.
# And busybox-static, for the script's tools where a node lacks them.
GLIBC_LIBS := libc.so.6 libpthread.so.0 libdl.so.2 libm.so.6 librt.so.1
gpu-bundle: $(BUILD)/hbmnvml
	@rm -rf $(BUILD)/gpu-bundle
	@mkdir -p $(BUILD)/gpu-bundle
	cp $(BUILD)/hbmnvml $(BUILD)/gpu-bundle/
	libdir=$$(dirname "$$(ldd $(BUILD)/hbmnvml | awk '$$1 == "libc.so.6" { print $$3 }')") && \
		for l in $(GLIBC_LIBS); do cp -L "$$libdir/$$l" $(BUILD)/gpu-bundle/ || exit 1; done
	cp -L /lib64/ld-linux-x86-64.so.2 $(BUILD)/gpu-bundle/ld-linux-x86-64.so.2
	cp /bin/busybox $(BUILD)/gpu-bundle/busybox

# The unit tests load the fake by path (tests/unit/check_nvml.c); before
# them, hbmnvml through gpu-check.sh's bundled loader, on the fake.
UNIT_DAEMON += daemon/nvml_source.c daemon/nvml_facts.c daemon/gpus.c \
	-I$(NVML_INC) -pthread \
	-DHBM_FAKE_NVML_DIR='"$(TOP)/$(BUILD)/nvml"' -DHBM_NVML_SCENARIOS='"$(TOP)/tests/nvml"'
$(BUILD)/unit $(BUILD)/unit-san: $(NVML_SRC) $(NVML_H) $(FAKE_NVML) $(wildcard tests/nvml/*.scn) \
	daemon/gpus.c daemon/gpus.h daemon/core.c
check-nvml-view: gpu-bundle $(FAKE_NVML)
	@echo "== tier 1: hbmnvml through gpu-check.sh's bundled loader, on the fake NVML"
	tests/nvml/gpu-check-view.sh
check-unit: check-nvml-view

# The in-guest test program: static, the initramfs has no libc.
$(BUILD)/guest/hbmtest: tests/guest/hbmtest.c tests/guest/hbmtest.h tests/guest/caps.h \
		$(BUILD)/libhbmguard.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon/libhbmguard -static -pthread tests/guest/hbmtest.c \
		$(BUILD)/libhbmguard.a -o $@

# A training rank's side of the recovery, static for the busybox guests.
$(BUILD)/guest/hbmrank: tests/guest/hbmrank.c $(BUILD)/libhbmguard.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon/libhbmguard -static tests/guest/hbmrank.c \
		$(BUILD)/libhbmguard.a -o $@

# The netlink test client, static with libnl for the busybox guests.
$(BUILD)/guest/hbmnl: tests/guest/hbmnl.c tests/guest/caps.h daemon/genl.c daemon/genl.h \
		uapi/linux/hbmguard.h $(BUILD)/libhbmguard.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon/libhbmguard -static $(shell pkg-config --cflags libnl-genl-3.0) \
		tests/guest/hbmnl.c daemon/genl.c $(BUILD)/libhbmguard.a \
		$(shell pkg-config --libs --static libnl-genl-3.0) -o $@

$(BUILD)/guest/hbmbench: tests/bench/hbmbench.c tests/bench/bench.h tests/bench/translate_bench.h \
		$(BUILD)/libhbmguard.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon/libhbmguard -static tests/bench/hbmbench.c \
		$(BUILD)/libhbmguard.a -o $@

$(BUILD)/guest/hbmrankbench: tests/bench/rankbench.c tests/bench/bench.h $(BUILD)/libhbmguard.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon/libhbmguard -static tests/bench/rankbench.c \
		$(BUILD)/libhbmguard.a -o $@

$(BUILD)/guest/hbmstatebench: tests/bench/statebench.c tests/bench/bench.h daemon/state.c daemon/state.h \
		daemon/restore_msg.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -Idaemon -static -pthread tests/bench/statebench.c daemon/state.c -o $@

$(BUILD)/bench-core: tests/bench/bench_core.c tests/bench/bench.h tests/bench/translate_bench.h \
		tests/unit/shim.c $(CORE_SRC) $(CORE_HDR) daemon/libhbmguard/table.c daemon/state.c daemon/state.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -O2 -Idaemon/libhbmguard tests/bench/bench_core.c tests/unit/shim.c \
		$(CORE_SRC) daemon/state.c -o $@

# Check's per-test timeouts catch a hang, not slowness: make check runs
# these beside each other, the debug kernel's build and the root filesystem's.
check-unit: check-unit-plain check-unit-san check-config-keys
# The sanitized run in two processes at once: the suites that take it
# longest (SAN_APART, about half its time), and the rest.
SAN_APART := mtree nvml metrics
check-unit-san: check-unit-san-apart check-unit-san-rest
check-unit-plain check-unit-san-apart check-unit-san-rest: export CK_TIMEOUT_MULTIPLIER ?= 4
check-unit-plain: $(BUILD)/unit
	@echo "== tier 1: unit tests"
	$(BUILD)/unit
check-unit-san-apart: $(BUILD)/unit-san
	@echo "== tier 1: unit tests under ASan+UBSan: $(SAN_APART)"
	ASAN_OPTIONS=detect_leaks=1 $(BUILD)/unit-san $(SAN_APART)
check-unit-san-rest: $(BUILD)/unit-san
	@echo "== tier 1: unit tests under ASan+UBSan: the other suites"
	ASAN_OPTIONS=detect_leaks=1 $(BUILD)/unit-san -x $(SAN_APART)
check-config-keys:
	@echo "== tier 1: every configuration key in hbmguardd.conf(5)"
	tests/man/config-keys.sh

# The programs' command lines, on this machine (no module, no daemon), and
# their man pages in step with their --help.
check-unit: check-cli
check-cli: $(BUILD)/hbmctl $(BUILD)/hbmguardd
	@echo "== tier 1: hbmctl and hbmguardd command lines, exit statuses"
	tests/cli/check.sh
	@echo "== tier 1: every command and option of hbmctl(8) and hbmguardd(8)"
	tests/man/cli-options.sh

# amdgpu's sysfs as the fixtures have it, for tests/kernel/amdgpu.sh.
AMDGPU_FIXTURE := $(shell find tests/unit/fixtures/amdgpu -type f 2>/dev/null)
$(BUILD)/amdgpu.tar: $(AMDGPU_FIXTURE)
	@mkdir -p $(@D)
	tar -C tests/unit/fixtures/amdgpu --exclude=README -cf $@ .

# What every tier-2 guest runs beside its kernel's modules.
GUEST_PROGS := $(BUILD)/guest/hbmtest $(BUILD)/guest/hbmctl $(BUILD)/guest/hbmnl \
	$(BUILD)/guest/hbmrank $(BUILD)/hbmguardd $(BUILD)/nvml/nodes/libnvidia-ml.so.1 \
	$(BUILD)/amdgpu.tar
# Each kernel's tier 2 in two guests that make check runs at once: the
# module's scripts and hbmguardd's (tests/kernel/run.sh PART).
KERNEL_PARTS := module daemon
KERNEL_TIERS := $(foreach v,$(DEB_KVERS),check-kernel-$(v))
GUESTS_2 := $(foreach v,$(DEB_KVERS) debug,$(foreach p,$(KERNEL_PARTS),check-kernel-$(v)-$(p)))
.PHONY: $(KERNEL_TIERS) $(GUESTS_2) check-system-boots check-system-ddp check-system-cluster \
	system-rootfs

check-kernel: $(KERNEL_TIERS)
define kernel_guest
check-kernel-$(1)-$(2): $(BUILD)/$(1)/hbmguard.ko $(BUILD)/$(1)/testmods/hbm_test_provider.ko $(GUEST_PROGS) \
		| $(GUESTS_AFTER)
	$(TOP)/tests/kernel/run.sh $(1) $(2)
endef
$(foreach v,$(DEB_KVERS) debug,$(foreach p,$(KERNEL_PARTS),$(eval $(call kernel_guest,$(v),$(p)))))
$(KERNEL_TIERS): check-kernel-%: $(foreach p,$(KERNEL_PARTS),check-kernel-%-$(p))

# Tier 2 again, on a kernel that reports what the stock ones let pass.
check-debug: $(foreach p,$(KERNEL_PARTS),check-kernel-debug-$(p))
	@echo "== tier 2 on the debug kernel (KASAN, lockdep, kmemleak, UBSAN, KFENCE): passed"

# Tier 3 boots bookworm's own kernel, the one a node of this release runs: the
# boots of tests/system/run.sh and, beside them, the DDP job's.  Each installs
# the tree (make install), so all of userspace is built before either starts.
SYSTEM_KVER := $(firstword $(DEB_KVERS))
# What tests/system/run.sh puts in its guest beside what make install does
# (the test modules hbm_fake_nvdev.ko among them): make bench's and make
# demo's guests too.
SYSTEM_GUEST := $(BUILD)/guest/hbmnl $(BUILD)/$(SYSTEM_KVER)/testmods/hbm_test_provider.ko \
	$(BUILD)/nvml/nodes/libnvidia-ml.so.1
SYSTEM_DEPS := userspace system-rootfs $(SYSTEM_GUEST)
# By name, for a make started after deps.sh installed the headers: the
# kernel in these paths is read when make starts (make bench, make demo).
system-guest: $(SYSTEM_GUEST)
system-rootfs:
	@$(TOP)/scripts/rootfs.sh $(SYSTEM_KVER) >/dev/null
check-system: check-system-boots check-system-ddp
check-system-boots: $(SYSTEM_DEPS) | $(GUESTS_AFTER)
	@echo "== tier 3: system tests in a systemd guest"
	$(TOP)/tests/system/run.sh $(SYSTEM_KVER)
check-system-ddp: $(SYSTEM_DEPS) | $(GUESTS_AFTER)
	@echo "== tier 3: the DDP job through a fault, in a systemd guest"
	$(TOP)/tests/system/run.sh $(SYSTEM_KVER) ddp
# Two guests at once, one job across them (issue 14): both of a 2-core host's.
check-system-cluster: $(SYSTEM_DEPS) | $(GUESTS_AFTER)
	@echo "== tier 3: one DDP job on two nodes, etcd between their daemons"
	$(TOP)/tests/system/run.sh $(SYSTEM_KVER) cluster

# Each tier stops the run on its first failure, so reaching the end means all
# passed: the unit runs, the spec, unit file, install, shape and cluster checks, two
# guests per kernel (the debug kernel's too), the system tests' two guests.
check-ynl:
	@echo "== the YNL spec, with the kernel's ynl library"
	/usr/bin/python3 tests/ynl/check_spec.py $(CACHE)/ynl/linux-source-6.12

# Each command the README shows is run: make targets and scripts here, the
# rest in tier 3 (tests/readme/readme.py says how each is run).
check-readme: $(BUILD)/libhbmguard.a
	@echo "== the README's commands"
	/usr/bin/python3 tests/readme/readme.py --host

check-unitfile: $(BUILD)/hbmguardd
	@echo "== the systemd unit"
	tests/unitfile/check.sh

# hbmguardd's files import no one in a circle; hbmguardd.c stays short.  The
# check must see the circle of a fixture shaped as hbmguardd.c once was, and
# the same circle hidden behind "./", <x.h> or an extern object.
check-shape:
	@echo "== the shape of hbmguardd"; mkdir -p $(BUILD)
	! /usr/bin/python3 tests/shape/check.py tests/shape/circle >$(BUILD)/shape-circle.out
	grep -qx "circle of imports: control -> hbmguardd -> control" $(BUILD)/shape-circle.out
	! /usr/bin/python3 tests/shape/check.py tests/shape/dotslash >$(BUILD)/shape-dotslash.out
	grep -qx "circle of imports: control -> hbmguardd -> control" $(BUILD)/shape-dotslash.out
	! /usr/bin/python3 tests/shape/check.py tests/shape/angle >$(BUILD)/shape-angle.out
	grep -qx "circle of imports: control -> hbmguardd -> control" $(BUILD)/shape-angle.out
	! /usr/bin/python3 tests/shape/check.py tests/shape/extern >$(BUILD)/shape-extern.out
	grep -qx "circle of imports: hbmguardd -> kernel -> hbmguardd" $(BUILD)/shape-extern.out
	/usr/bin/python3 tests/shape/check.py

# One simulated node of a job: the cluster link against a fake local side
# (tests/cluster/agent.c); check-cluster runs many against one etcd.
$(BUILD)/cluster-agent: tests/cluster/agent.c $(CLUSTER_SRC) $(CLUSTER_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) $(shell pkg-config --cflags libsystemd json-c libcurl) \
		tests/cluster/agent.c $(CLUSTER_SRC) \
		$(shell pkg-config --libs libsystemd json-c) -o $@

# A watch unwatched from its own callbacks, under ASan (tests/cluster/unwatch.c).
$(BUILD)/cluster-unwatch: tests/cluster/unwatch.c $(CLUSTER_SRC) $(CLUSTER_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS_USER) -O1 $(SAN) $(shell pkg-config --cflags libsystemd json-c libcurl) \
		tests/cluster/unwatch.c $(CLUSTER_SRC) \
		$(shell pkg-config --libs libsystemd json-c) -o $@

# Tier 1's fuzzing (tests/fuzz/README.md): one libFuzzer target per input a
# hostile party or a damaged file writes, built by clang under ASan and
# UBSan.  tests/fuzz/T.c is target T; tests/fuzz/T.mk names the sources it
# needs (FUZZ_SRC_T, FUZZ_LIBS_T) and how many inputs check-fuzz runs
# (FUZZ_RUNS_T, from seed 1; run.sh says how far that repeats) and how long one may
# be (FUZZ_MAX_LEN_T); `make fuzz FUZZ_SECONDS=N` explores further.
FUZZ_CC ?= clang
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,%,$(wildcard tests/fuzz/*.c))
include $(wildcard tests/fuzz/*.mk)
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined,float-cast-overflow -fno-sanitize-recover=all \
	-Itests/fuzz -I$(TOP)/uapi -I$(TOP)/kmod -I$(TOP)/daemon
FUZZ_SECONDS ?= 300
define fuzz_target
$(BUILD)/fuzz/$(1): tests/fuzz/$(1).c tests/fuzz/$(1).mk tests/fuzz/fuzz.h $(filter %.c,$(FUZZ_SRC_$(1))) \
		$(wildcard daemon/*.h kmod/*.h uapi/linux/*.h)
	@mkdir -p $$(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_CFLAGS_$(1)) tests/fuzz/$(1).c $(FUZZ_SRC_$(1)) $(FUZZ_LIBS_$(1)) -o $$@
endef
$(foreach t,$(FUZZ_TARGETS),$(eval $(call fuzz_target,$(t))))
check-fuzz: $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))
	@echo "== tier 1: fuzzing, $(words $(FUZZ_TARGETS)) targets"
	@$(foreach t,$(FUZZ_TARGETS),tests/fuzz/run.sh check $(BUILD)/fuzz/$(t) \
		$(or $(FUZZ_RUNS_$(t)),100000) $(or $(FUZZ_MAX_LEN_$(t)),4096) &&) true
fuzz: $(addprefix $(BUILD)/fuzz/,$(FUZZ_TARGETS))
	@$(foreach t,$(FUZZ_TARGETS),tests/fuzz/run.sh explore $(BUILD)/fuzz/$(t) \
		$(FUZZ_SECONDS) $(or $(FUZZ_MAX_LEN_$(t)),4096) &&) true

# Incidents across 2 to 64 simulated nodes, TLS with client certificates,
# and hostile keys, against Debian's etcd in a network namespace of the
# test's own (no guest); a watch unwatched from its own callbacks.
check-cluster: $(BUILD)/cluster-agent $(BUILD)/cluster-unwatch
	@echo "== the cluster link against etcd, simulated nodes"
	tests/cluster/run.sh

# The host's checks, all at once in a make of their own, outside make check's
# jobserver: most of their time is spent waiting (the hangs, timeouts and
# restarts they provoke, etcd), not computing, and each is output whole when
# it ends.  Userspace is built before them, so that check-install's own make
# (which builds the module in the source tree) finds nothing else to build.
HOST_CHECKS := check-unit-plain check-unit-san-apart check-unit-san-rest check-config-keys check-cli check-nvml-view \
	check-ynl check-readme check-unitfile check-install check-shape check-cluster check-fuzz
HOST_JOBS ?= 4
check-host: userspace gpu-bundle $(FAKE_NVML)
	@MAKEFLAGS="$(filter-out -j% --jobserver-auth=%,$(MAKEFLAGS))" \
		$(MAKE) --no-print-directory -j$(HOST_JOBS) -Otarget $(HOST_CHECKS)

# make check: the host's checks first, then the guests, each one qemu on one
# host thread (scripts/guest-run says why), as many at once as the host has
# cores, under make's jobserver; each tier's output is shown whole when it
# ends (its live log is in build/logs/).  What the longest chains wait for
# starts at once: the root filesystem (mostly downloads: outside the
# jobserver, its own lock making system-rootfs wait for it), and the debug
# kernel's build (a `+` recipe), in the slot the host's checks leave and
# then in those no guest holds.  The guests wait for the host's checks
# (GUESTS_AFTER), longest first.
GUEST_JOBS ?= $(shell nproc)
# After deps.sh, in a make of its own: this one read DEB_KVERS before the
# headers deps.sh installs were there (on a fresh machine, none), and
# would test on neither of Debian's kernels.
check: deps
	@$(MAKE) --no-print-directory check-after-deps

check-after-deps:
	@test -n "$(filter 6.1.%,$(DEB_KVERS))" -a -n "$(filter 6.12.%,$(DEB_KVERS))" || \
		{ echo "make check: Debian's 6.1 and 6.12 headers are not both in /usr/src" \
			"(found: $(or $(DEB_KVERS),none)); scripts/deps.sh installs them" >&2; exit 1; }
	@mkdir -p $(BUILD)/logs
	@$(TOP)/scripts/rootfs.sh $(SYSTEM_KVER) >/dev/null 2>$(BUILD)/logs/rootfs.log & \
	$(MAKE) --no-print-directory -j$(GUEST_JOBS) -Otarget GUESTS_AFTER=check-host check-host \
		$(foreach p,$(KERNEL_PARTS),check-kernel-debug-$(p)) \
		check-system-boots check-system-ddp $(filter-out check-kernel-debug-%,$(GUESTS_2)); \
	s=$$?; wait; exit $$s
	@# two guests at once, each a core: alone, after the rest (about 5 min)
	@$(MAKE) --no-print-directory check-system-cluster
	@echo "check: $$((10 + $(words $(GUESTS_2)))) passed, 0 failed"

bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench-core modules-all $(BUILD)/guest/hbmbench \
		$(BUILD)/guest/hbmnl $(BUILD)/guest/hbmrankbench $(BUILD)/guest/hbmctl $(BUILD)/hbmguardd \
		$(BUILD)/guest/hbmstatebench $(BUILD)/cluster-agent system-guest
	@$(TOP)/tests/bench/run.sh

demo:
	@$(TOP)/scripts/deps.sh demo
	@$(MAKE) --no-print-directory system-guest
	@$(TOP)/scripts/demo.sh

# Where Debian's python3 looks for the package (its sysconfig's schemes,
# /usr/lib/python3.11/sysconfig.py in bookworm's libpython3.11-stdlib):
# deb_system for /usr, the packages' own; posix_local, the default, for
# /usr/local; the same form under another prefix, which python3 then finds
# through PYTHONPATH.
PYTHON_MINOR := $(shell /usr/bin/python3 -c 'import sys; print(sys.version_info[1])' 2>/dev/null)
PYTHON_SITE ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python3.$(PYTHON_MINOR)/dist-packages)

# DESTDIR-aware.  depmod and ldconfig run only when installing into the
# running system.
install: module programs
	$(MAKE) -C $(KDIR) M=$(TOP) INSTALL_MOD_PATH=$(DESTDIR) INSTALL_MOD_DIR=updates \
		DEPMOD=/bin/true modules_install
	[ -n "$(DESTDIR)" ] || depmod -a $$($(MAKE) -s -C $(KDIR) kernelrelease)
	install -D -m 0755 $(BUILD)/hbmguardd $(DESTDIR)/usr/sbin/hbmguardd
	install -D -m 0755 $(BUILD)/hbmctl $(DESTDIR)/usr/sbin/hbmctl
	install -D -m 0755 $(BUILD)/hbmnvml $(DESTDIR)/usr/sbin/hbmnvml
	install -D -m 0644 daemon/systemd/hbmguardd.service \
		$(DESTDIR)/usr/lib/systemd/system/hbmguardd.service
	install -D -m 0644 daemon/systemd/hbmguardd.socket \
		$(DESTDIR)/usr/lib/systemd/system/hbmguardd.socket
	install -D -m 0644 daemon/systemd/hbmguard.catalog \
		$(DESTDIR)/usr/lib/systemd/catalog/hbmguard.catalog
	install -D -m 0644 daemon/systemd/60-hbmguard.rules \
		$(DESTDIR)/usr/lib/udev/rules.d/60-hbmguard.rules
	install -D -m 0644 daemon/systemd/hbmguard.sysusers \
		$(DESTDIR)/usr/lib/sysusers.d/hbmguard.conf
	install -D -m 0644 daemon/systemd/hbmguard-modules-load.conf \
		$(DESTDIR)/usr/lib/modules-load.d/hbmguard.conf
	install -D -m 0644 daemon/systemd/hbmguard-modprobe.conf \
		$(DESTDIR)/etc/modprobe.d/hbmguard.conf
	install -D -m 0644 uapi/linux/hbmguard.h $(DESTDIR)$(PREFIX)/include/linux/hbmguard.h
	install -D -m 0644 daemon/libhbmguard/hbmguard.h $(DESTDIR)$(PREFIX)/include/hbmguard.h
	install -D -m 0644 $(BUILD)/libhbmguard.a $(DESTDIR)$(PREFIX)/lib/libhbmguard.a
	install -D -m 0755 $(BUILD)/libhbmguard.so $(DESTDIR)$(PREFIX)/lib/libhbmguard.so.0
	ln -sf libhbmguard.so.0 $(DESTDIR)$(PREFIX)/lib/libhbmguard.so
	mkdir -p $(DESTDIR)$(PREFIX)/lib/pkgconfig
	sed 's|@PREFIX@|$(PREFIX)|' daemon/libhbmguard/hbmguard.pc.in \
		>$(DESTDIR)$(PREFIX)/lib/pkgconfig/hbmguard.pc
	install -D -m 0644 -t $(DESTDIR)$(PYTHON_SITE)/hbmguard \
		daemon/libhbmguard/python/hbmguard/__init__.py \
		daemon/libhbmguard/python/hbmguard/torch.py \
		daemon/libhbmguard/python/hbmguard/run.py
	[ -n "$(DESTDIR)" ] || ldconfig
	install -D -m 0644 daemon/man/hbmctl.8 $(DESTDIR)$(PREFIX)/share/man/man8/hbmctl.8
	install -D -m 0644 daemon/man/hbmnvml.8 $(DESTDIR)$(PREFIX)/share/man/man8/hbmnvml.8
	install -D -m 0644 daemon/man/hbmguardd.8 $(DESTDIR)$(PREFIX)/share/man/man8/hbmguardd.8
	install -D -m 0644 daemon/man/hbmguardd.conf.5 \
		$(DESTDIR)$(PREFIX)/share/man/man5/hbmguardd.conf.5
	install -D -m 0644 daemon/man/hbmguard.4 $(DESTDIR)$(PREFIX)/share/man/man4/hbmguard.4

# The module's sources where DKMS takes them: dkms add/build/install then
# rebuild hbmguard.ko for each kernel installed later.
install-dkms:
	rm -rf $(DESTDIR)/usr/src/hbmguard-$(VERSION)
	mkdir -p $(DESTDIR)/usr/src/hbmguard-$(VERSION)
	cp -p --parents $(KMOD_SRC) dkms.conf $(DESTDIR)/usr/src/hbmguard-$(VERSION)/

# What make install lays down, into a scratch DESTDIR.
check-install:
	@echo "== make install into a scratch DESTDIR"
	tests/install/check.sh

# The in-tree objects of `make module`.  Not kbuild's clean: that would reach
# into build/ and delete the per-kernel modules too.
clean-module:
	rm -f hbmguard.ko hbmguard.mod hbmguard.mod.c hbmguard.mod.o hbmguard.o \
		Module.symvers modules.order .*.cmd .module-common.o kmod/*.o \
		kmod/.*.cmd kmod/.*.d

clean: clean-module
	rm -rf $(BUILD)
