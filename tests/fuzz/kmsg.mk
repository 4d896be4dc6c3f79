# /dev/kmsg records and the NVIDIA driver's lines in them (tests/fuzz/kmsg.c).
FUZZ_SRC_kmsg := daemon/nvlog.c
FUZZ_RUNS_kmsg := 1000000
FUZZ_MAX_LEN_kmsg := 8448
