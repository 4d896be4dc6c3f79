# x86 machine check records through hbm_mce_decode() (tests/fuzz/mce.c).
FUZZ_SRC_mce := kmod/mce_decode.c
FUZZ_RUNS_mce := 8000000
FUZZ_MAX_LEN_mce := 64
