# The incidents file of the state directory, damaged every way (tests/fuzz/incidents.c).
FUZZ_SRC_incidents := daemon/incidents.c daemon/state.c daemon/ctl.c
FUZZ_RUNS_incidents := 600000
FUZZ_MAX_LEN_incidents := 8192
