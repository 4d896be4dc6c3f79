# A device's state file, damaged every way, read as hbmguardd reads it,
# and what the store does with it (tests/fuzz/state.c).
FUZZ_SRC_state := daemon/state.c
FUZZ_RUNS_state := 100000
FUZZ_MAX_LEN_state := 8192
