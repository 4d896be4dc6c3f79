FUZZ_SRC_ctl := daemon/ctl.c
FUZZ_RUNS_ctl := 5000000
FUZZ_MAX_LEN_ctl := 1024
