FUZZ_SRC_etcd := daemon/etcd_msg.c
FUZZ_CFLAGS_etcd := $(shell pkg-config --cflags json-c)
FUZZ_LIBS_etcd := $(shell pkg-config --libs json-c)
FUZZ_RUNS_etcd := 150000
FUZZ_MAX_LEN_etcd := 4096
