FUZZ_SRC_cluster := daemon/cluster_proto.c daemon/etcd_msg.c daemon/ratelimit.c daemon/config.c \
	daemon/timespan.c
FUZZ_CFLAGS_cluster := $(shell pkg-config --cflags json-c)
FUZZ_LIBS_cluster := $(shell pkg-config --libs json-c)
FUZZ_RUNS_cluster := 5000
FUZZ_MAX_LEN_cluster := 4096
