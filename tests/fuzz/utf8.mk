# Any bytes made valid UTF-8 for JSON and the metrics (tests/fuzz/utf8.c).
FUZZ_SRC_utf8 := daemon/utf8.c
FUZZ_RUNS_utf8 := 1000000
FUZZ_MAX_LEN_utf8 := 1024
