# hbmguardd.conf and its drop-ins as an operator may write them
# (tests/fuzz/config.c).
FUZZ_SRC_config := daemon/config.c daemon/timespan.c
FUZZ_RUNS_config := 60000
FUZZ_MAX_LEN_config := 4096
