# /etc/subuid as read for the control socket's tenants (tests/fuzz/subuid.c).
FUZZ_SRC_subuid := daemon/subuid.c daemon/sha256.c daemon/state.c
FUZZ_RUNS_subuid := 250000
FUZZ_MAX_LEN_subuid := 4096
