FUZZ_SRC_accept := daemon/metrics.c daemon/mhd_dl.c daemon/dl.c daemon/utf8.c daemon/ratelimit.c \
	daemon/passed.c
FUZZ_CFLAGS_accept := $(MHD_CFLAGS) $(shell pkg-config --cflags libsystemd)
FUZZ_LIBS_accept := $(shell pkg-config --libs libsystemd) -ldl -lm
FUZZ_RUNS_accept := 3000000
FUZZ_MAX_LEN_accept := 512
