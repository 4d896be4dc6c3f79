# amdgpu's RAS sysfs files: the bad-page list, the error counts (tests/fuzz/amdgpu.c).
FUZZ_SRC_amdgpu := daemon/amdgpu_ras.c
FUZZ_RUNS_amdgpu := 400000
FUZZ_MAX_LEN_amdgpu := 4096
