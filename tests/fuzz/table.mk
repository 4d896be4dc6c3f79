# The module's table core as one device's ioctls, commands and RAS paths
# drive it, against a model (tests/fuzz/table.c); the mapped table read
# through libhbmguard's reader; kmod/core.h's userspace shim, the unit
# tests' (allocation failures injected, WARN_ON_ONCE()s counted).
FUZZ_SRC_table := kmod/table.c kmod/policy.c kmod/mtree.c daemon/libhbmguard/table.c tests/unit/shim.c
FUZZ_CFLAGS_table := -Idaemon/libhbmguard
FUZZ_RUNS_table := 3000
FUZZ_MAX_LEN_table := 4096
