// SPDX-License-Identifier: GPL-2.0
/*
 * A fake libnvidia-ml.so.1 for the NVML source's tests, built against the
 * real nvml.h (Debian bookworm non-free libnvidia-ml-dev 11.8.86, fetched by
 * scripts/deps.sh): every function below is declared there, so one whose
 * signature differed from NVIDIA's would not compile.  Each answers as that
 * header documents (NULL arguments, INSUFFICIENT_SIZE with the needed count,
 * UNINITIALIZED before nvmlInit_v2, NOT_SUPPORTED, GPU_IS_LOST) and nothing
 * more.  Built with -DFAKE_OLD it lacks nvmlDeviceGetRemappedRows (450 and
 * later), as an older driver's library does; with -DFAKE_ANCIENT it lacks
 * nvmlDeviceGetPciInfo_v3 too, without which NVML cannot be used.
 *
 * The scenario is the file named by $HBM_FAKE_NVML, read at nvmlInit_v2; one
 * fact a line, '#' comments, GPU = index in the order of the gpu lines:
 *
 *   gpu UUID PCI-BUS-ID MEMORY-BYTES NAME...
 *   retired GPU sbe|dbe ADDRESS TIMESTAMP
 *   pending GPU 0|1
 *   remap GPU CORRECTED UNCORRECTED PENDING FAILURE
 *   ecc GPU CORR-VOLATILE UNC-VOLATILE CORR-AGGREGATE UNC-AGGREGATE
 *   unsupported GPU retired|pending|remap|ecc     NVML_ERROR_NOT_SUPPORTED
 *   events GPU MASK                 nvmlDeviceGetSupportedEventTypes (default 0xb)
 *   fail FUNCTION RETURN [GPU]      FUNCTION returns RETURN (nvmlReturn_t)
 *   event MS GPU xid N | sbe | dbe  MS after nvmlInit_v2, delivered in file order;
 *                                   sbe and dbe count one error more (volatile
 *                                   and aggregate), as the driver's counters do
 *   event MS GPU xid N retire sbe|dbe ADDRESS TIMESTAMP
 *                                   the driver retires that page, then reports
 *                                   the Xid (63): nvmlDeviceGetRetiredPages_v2
 *                                   lists it from then on
 *   lost MS GPU                     the GPU falls off the bus: at once for MS 0,
 *                                   else when nvmlEventSetWait_v2 reaches the line
 *   hang MS GPU DURATION            the GPU wedges, from MS (at once for MS 0,
 *                                   else when nvmlEventSetWait_v2 reaches the
 *                                   line) for DURATION ms: a call of its that
 *                                   reads its tables (nvmlDeviceGetRetiredPages_v2,
 *                                   ..PendingStatus, nvmlDeviceGetRemappedRows,
 *                                   nvmlDeviceGetTotalEccErrors) blocks until
 *                                   then, and answers as it would have; its
 *                                   other calls and the events do not block
 *   broken GPU insufficient|success N
 *                                   a broken library, not NVML:
 *                                   nvmlDeviceGetRetiredPages_v2 answers
 *                                   INSUFFICIENT_SIZE, or SUCCESS without
 *                                   writing, with *pageCount = N whatever the
 *                                   buffer's size (what the caller must survive)
 *
 * The times only pace the events: what happens, and in which order, is the
 * file's order, however slowly the caller runs.
 *
 * Built with -DFAKE_NODES (the library the test guests get; tier 1 runs where
 * no driver is) it also opens the driver's device nodes, as the real library
 * must to talk to the driver.  NVML is closed: which nodes a management
 * client needs is taken from NVIDIA's own code that gives containers NVML
 * (the "utility" capability), libnvidia-container: src/nvc_info.c
 * lookup_devices() always lists NV_CTL_DEVICE_PATH (/dev/nvidiactl) and
 * init_nvc_device() each GPU's NV_DEVICE_PATH (/dev/nvidia<minor>);
 * src/nvc_mount.c nvc_driver_mount() mounts, for a container without the
 * compute capability, only the nodes of the driver's major (UVM is for
 * compute) and nvc_device_mount() the GPU's own.  nvmlInit_v2 opens the
 * control node; a GPU's handle opens the GPU's node (nvml.h: the handle
 * "causes NVML to initialize the target GPU"); both stay open until the last
 * nvmlShutdown.  The errors are nvml.h's: nvmlInit_v2 NO_PERMISSION "if NVML
 * does not have permission to talk to the driver" (EACCES; EPERM, what a
 * device cgroup answers), else DRIVER_NOT_LOADED "if NVIDIA driver is not
 * running" (no node, or no driver behind it); nvmlDeviceGetHandleByIndex_v2
 * NO_PERMISSION "if the user doesn't have permission to talk to this device",
 * else UNKNOWN (the header has no closer one).  The GPU of index i is minor i:
 * the driver numbers GPUs as they probe, NVML in PCI order, the same order on
 * a node whose GPUs all probed at boot.
 *
 * A line the fake does not understand aborts it: a test cannot pass on a
 * scenario it did not mean.  So does using an event set after
 * nvmlDeviceRegisterEvents failed with NVML_ERROR_UNKNOWN on it: nvml.h says
 * the set "is in undefined state and should be freed".  And so does
 * nvmlShutdown while an event set is alive or a thread waits on one, or a
 * set freed after it: "releasing all GPU resources previously allocated with
 * nvmlInit_v2()" under a waiting thread is no order a caller can rely on.
 */
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <nvml.h>

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_GPUS 8
#define MAX_PAGES 256
#define MAX_LINES 1024
#define EXPORT __attribute__((visibility("default")))

struct nvmlDevice_st {
	unsigned int index;
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
	char pci[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
	unsigned long long memory;
	unsigned int nr[NVML_PAGE_RETIREMENT_CAUSE_COUNT];
	unsigned long long addr[NVML_PAGE_RETIREMENT_CAUSE_COUNT][MAX_PAGES];
	unsigned long long time[NVML_PAGE_RETIREMENT_CAUSE_COUNT][MAX_PAGES];
	bool pending;
	unsigned int remap[4];
	unsigned long long ecc[2][2];
	bool no_retired, no_pending, no_remap, no_ecc;
	unsigned long long events;
	int broken;		/* 0, else the broken answer's nvmlReturn_t */
	unsigned int broken_count;
	bool lost;		/* fallen off the bus: every call says so */
	long hang_until;	/* ms after nvmlInit_v2 its table reads block until */
	int node;		/* /dev/nvidiaN while a handle opened it, else -1 */
};

struct nvmlEventSet_st {
	unsigned long long mask[MAX_GPUS];
	bool undefined;		/* nvmlDeviceRegisterEvents said UNKNOWN */
};

struct fail {
	char fn[64];
	nvmlReturn_t ret;
	int gpu;		/* -1: any */
};

struct step {
	long ms;
	bool lost;
	long hang;		/* a hang of this many ms; 0 none */
	unsigned int gpu;
	unsigned long long type, data;
	int retire;		/* a cause whose list the page joins; -1 none */
	unsigned long long addr, time;
};

static struct nvmlDevice_st gpus[MAX_GPUS];
static unsigned int nr_gpus;
static struct fail fails[MAX_LINES];
static unsigned int nr_fails;
static struct step steps[MAX_LINES];
static unsigned int nr_steps, next_step;
static int initialized;
static int live_sets, waiting;	/* waiting: atomic, set by the event thread */
static struct timespec t0;
static int ctl_node = -1;	/* /dev/nvidiactl from nvmlInit_v2 to nvmlShutdown */

static void bad(const char *why, const char *line)
{
	fprintf(stderr, "fake_nvml: %s: %s\n", why, line);
	abort();
}

static struct nvmlDevice_st *gpu_arg(const char *s, const char *line)
{
	char *end;
	unsigned long i = strtoul(s, &end, 0);

	if (*end || i >= nr_gpus)
		bad("no such GPU", line);
	return &gpus[i];
}

static void parse_line(char *line)
{
	char copy[512], *tok[10], *save = NULL, *rest;
	struct nvmlDevice_st *g;
	int n = 0;

	snprintf(copy, sizeof(copy), "%s", line);
	for (rest = line; n < 10 && (tok[n] = strtok_r(n ? NULL : rest, " \t\n", &save)); n++)
		;
	if (!n || tok[0][0] == '#')
		return;
	if (!strcmp(tok[0], "gpu") && n >= 5 && nr_gpus < MAX_GPUS) {
		g = &gpus[nr_gpus];
		g->index = nr_gpus++;
		snprintf(g->uuid, sizeof(g->uuid), "%s", tok[1]);
		snprintf(g->pci, sizeof(g->pci), "%s", tok[2]);
		g->memory = strtoull(tok[3], NULL, 0);
		/* The name is the rest of the line, spaces and all. */
		snprintf(g->name, sizeof(g->name), "%s", strstr(copy, tok[4]) ?
			 strstr(copy, tok[4]) : tok[4]);
		g->name[strcspn(g->name, "\n")] = '\0';
		g->events = 0xb;
		g->node = -1;
	} else if (!strcmp(tok[0], "retired") && n == 5) {
		int c = !strcmp(tok[2], "sbe") ? 0 : !strcmp(tok[2], "dbe") ? 1 : -1;

		g = gpu_arg(tok[1], copy);
		if (c < 0 || g->nr[c] >= MAX_PAGES)
			bad("bad retired line", copy);
		g->addr[c][g->nr[c]] = strtoull(tok[3], NULL, 0);
		g->time[c][g->nr[c]++] = strtoull(tok[4], NULL, 0);
	} else if (!strcmp(tok[0], "pending") && n == 3) {
		gpu_arg(tok[1], copy)->pending = atoi(tok[2]);
	} else if (!strcmp(tok[0], "remap") && n == 6) {
		g = gpu_arg(tok[1], copy);
		for (n = 0; n < 4; n++)
			g->remap[n] = strtoul(tok[2 + n], NULL, 0);
	} else if (!strcmp(tok[0], "ecc") && n == 6) {
		g = gpu_arg(tok[1], copy);
		g->ecc[0][0] = strtoull(tok[2], NULL, 0);
		g->ecc[1][0] = strtoull(tok[3], NULL, 0);
		g->ecc[0][1] = strtoull(tok[4], NULL, 0);
		g->ecc[1][1] = strtoull(tok[5], NULL, 0);
	} else if (!strcmp(tok[0], "unsupported") && n == 3) {
		g = gpu_arg(tok[1], copy);
		if (!strcmp(tok[2], "retired"))
			g->no_retired = true;
		else if (!strcmp(tok[2], "pending"))
			g->no_pending = true;
		else if (!strcmp(tok[2], "remap"))
			g->no_remap = true;
		else if (!strcmp(tok[2], "ecc"))
			g->no_ecc = true;
		else
			bad("unsupported what?", copy);
	} else if (!strcmp(tok[0], "broken") && n == 4) {
		g = gpu_arg(tok[1], copy);
		if (!strcmp(tok[2], "insufficient"))
			g->broken = NVML_ERROR_INSUFFICIENT_SIZE;
		else if (!strcmp(tok[2], "success"))
			g->broken = NVML_SUCCESS + 1000;	/* told apart from 0 */
		else
			bad("broken how?", copy);
		g->broken_count = strtoul(tok[3], NULL, 0);
	} else if (!strcmp(tok[0], "events") && n == 3) {
		gpu_arg(tok[1], copy)->events = strtoull(tok[2], NULL, 0);
	} else if (!strcmp(tok[0], "fail") && (n == 3 || n == 4) && nr_fails < MAX_LINES) {
		struct fail *f = &fails[nr_fails++];

		snprintf(f->fn, sizeof(f->fn), "%s", tok[1]);
		f->ret = (nvmlReturn_t)strtol(tok[2], NULL, 0);
		f->gpu = n == 4 ? (int)gpu_arg(tok[3], copy)->index : -1;
	} else if (!strcmp(tok[0], "hang") && n == 4) {
		struct step *s = &steps[nr_steps];
		char *end;

		if (nr_steps >= MAX_LINES)
			bad("too many steps", copy);
		s->ms = strtol(tok[1], NULL, 0);
		s->gpu = gpu_arg(tok[2], copy)->index;
		s->hang = strtol(tok[3], &end, 0);
		if (*end || s->hang <= 0)
			bad("hang for how long?", copy);
		s->retire = -1;
		if (!s->ms)
			gpus[s->gpu].hang_until = s->hang;	/* from nvmlInit_v2 */
		nr_steps++;
	} else if ((!strcmp(tok[0], "event") && n >= 4) || (!strcmp(tok[0], "lost") && n == 3)) {
		struct step *s = &steps[nr_steps];

		if (nr_steps >= MAX_LINES)
			bad("too many steps", copy);
		s->ms = strtol(tok[1], NULL, 0);
		s->gpu = gpu_arg(tok[2], copy)->index;
		s->lost = tok[0][0] == 'l';
		s->retire = -1;
		if (s->lost) {
			if (!s->ms)
				gpus[s->gpu].lost = true;
		} else if (!strcmp(tok[3], "xid") && (n == 5 || (n == 9 &&
							       !strcmp(tok[5], "retire")))) {
			s->type = nvmlEventTypeXidCriticalError;
			s->data = strtoull(tok[4], NULL, 0);
			if (n == 9) {
				s->retire = !strcmp(tok[6], "sbe") ? 0 : !strcmp(tok[6], "dbe") ? 1 : -1;
				if (s->retire < 0)
					bad("retire sbe or dbe?", copy);
				s->addr = strtoull(tok[7], NULL, 0);
				s->time = strtoull(tok[8], NULL, 0);
			}
		} else if (!strcmp(tok[3], "sbe") && n == 4) {
			s->type = nvmlEventTypeSingleBitEccError;
		} else if (!strcmp(tok[3], "dbe") && n == 4) {
			s->type = nvmlEventTypeDoubleBitEccError;
		} else {
			bad("bad event", copy);
		}
		nr_steps++;
	} else {
		bad("not understood", copy);
	}
}

static void load(void)
{
	const char *path = getenv("HBM_FAKE_NVML");
	char line[512];
	FILE *f;

	if (!path)
		bad("no scenario", "$HBM_FAKE_NVML unset");
	f = fopen(path, "r");
	if (!f)
		bad("cannot open the scenario", path);
	while (fgets(line, sizeof(line), f))
		parse_line(line);
	fclose(f);
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
}

static void sleep_ms(long ms)
{
	struct timespec t = { ms / 1000, (ms % 1000) * 1000000 };

	if (ms > 0)
		nanosleep(&t, NULL);
}

/* What the scenario says FUNCTION returns for @g (NULL: not for a GPU). */
static nvmlReturn_t failing(const char *fn, const struct nvmlDevice_st *g)
{
	unsigned int i;

	for (i = 0; i < nr_fails; i++)
		if (!strcmp(fails[i].fn, fn) && (fails[i].gpu < 0 || (g && fails[i].gpu ==
									 (int)g->index)))
			return fails[i].ret;
	return NVML_SUCCESS;
}

/* The event thread sets it, the caller's thread reads it. */
static bool is_lost(const struct nvmlDevice_st *g)
{
	return __atomic_load_n(&g->lost, __ATOMIC_SEQ_CST);
}

/* A call reading a wedged GPU's tables: blocks until its hang is over. */
static void hang(const struct nvmlDevice_st *g)
{
	sleep_ms(__atomic_load_n(&g->hang_until, __ATOMIC_SEQ_CST) - now_ms());
}

/* The checks every device function starts with, in the header's order. */
#define DEVICE_CALL(dev)							\
	do {									\
		nvmlReturn_t r_;						\
		if (!initialized)						\
			return NVML_ERROR_UNINITIALIZED;			\
		if (!(dev) || (dev) < gpus || (dev) >= gpus + nr_gpus)		\
			return NVML_ERROR_INVALID_ARGUMENT;			\
		if (is_lost(dev))						\
			return NVML_ERROR_GPU_IS_LOST;				\
		r_ = failing(__func__, (dev));					\
		if (r_ != NVML_SUCCESS)						\
			return r_;						\
	} while (0)

/* Open a device node of the driver into *@fd; @other: the error but EACCES/EPERM's. */
static nvmlReturn_t open_node(const char *path, int *fd, nvmlReturn_t other)
{
#ifdef FAKE_NODES
	if (*fd >= 0)
		return NVML_SUCCESS;
	*fd = open(path, O_RDWR | O_CLOEXEC);
	if (*fd >= 0)
		return NVML_SUCCESS;
	return errno == EACCES || errno == EPERM ? NVML_ERROR_NO_PERMISSION : other;
#else
	(void)path;
	(void)fd;
	(void)other;
	return NVML_SUCCESS;
#endif
}

static void close_node(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t r;

	if (!initialized) {
		memset(gpus, 0, sizeof(gpus));
		nr_gpus = nr_fails = nr_steps = next_step = 0;
		load();
		clock_gettime(CLOCK_MONOTONIC, &t0);
		r = open_node("/dev/nvidiactl", &ctl_node, NVML_ERROR_DRIVER_NOT_LOADED);
		if (r != NVML_SUCCESS)
			return r;
	}
	r = failing(__func__, NULL);
	if (r != NVML_SUCCESS) {
		if (!initialized)
			close_node(&ctl_node);
		return r;
	}
	initialized++;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
	unsigned int i;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (initialized == 1 && (live_sets || __atomic_load_n(&waiting, __ATOMIC_SEQ_CST)))
		bad("nvmlShutdown", "with an event set alive or a thread waiting on one");
	if (--initialized)
		return NVML_SUCCESS;
	for (i = 0; i < nr_gpus; i++)
		close_node(&gpus[i].node);
	close_node(&ctl_node);
	return NVML_SUCCESS;
}

EXPORT const char *nvmlErrorString(nvmlReturn_t result)
{
	switch (result) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
	case NVML_ERROR_TIMEOUT: return "Timeout";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	default: return "Unknown Error";
	}
}

EXPORT nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length < sizeof("580.159.04"))
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(version, "580.159.04");
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
	nvmlReturn_t r;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!deviceCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = failing(__func__, NULL);
	if (r != NVML_SUCCESS)
		return r;
	*deviceCount = nr_gpus;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	char node[32];
	nvmlReturn_t r;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= nr_gpus || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	DEVICE_CALL(&gpus[index]);
	snprintf(node, sizeof(node), "/dev/nvidia%u", index);
	r = open_node(node, &gpus[index].node, NVML_ERROR_UNKNOWN);
	if (r != NVML_SUCCESS)
		return r;
	*device = &gpus[index];
	return NVML_SUCCESS;
}

static nvmlReturn_t copy_out(char *dst, unsigned int length, const char *src)
{
	if (!dst)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (length < strlen(src) + 1)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(dst, src);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
	DEVICE_CALL(device);
	return copy_out(uuid, length, device->uuid);
}

EXPORT nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	DEVICE_CALL(device);
	return copy_out(name, length, device->name);
}

#ifndef FAKE_ANCIENT
EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t *pci)
{
	DEVICE_CALL(device);
	if (!pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busId, sizeof(pci->busId), "%s", device->pci);
	sscanf(device->pci, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
	return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	DEVICE_CALL(device);
	if (!memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	memory->total = device->memory;
	memory->used = device->memory / 100;
	memory->free = memory->total - memory->used;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device,
						 nvmlPageRetirementCause_t cause,
						 unsigned int *pageCount,
						 unsigned long long *addresses,
						 unsigned long long *timestamps)
{
	unsigned int i, n;

	DEVICE_CALL(device);
	hang(device);
	if (!pageCount || (unsigned int)cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->no_retired)
		return NVML_ERROR_NOT_SUPPORTED;
	if (device->broken) {
		*pageCount = device->broken_count;
		return device->broken == NVML_ERROR_INSUFFICIENT_SIZE ?
		       NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
	}
	n = __atomic_load_n(&device->nr[cause], __ATOMIC_ACQUIRE);	/* retire() */
	if (*pageCount < n) {
		*pageCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	if (!addresses && n)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (i = 0; i < n; i++) {
		addresses[i] = device->addr[cause][i];
		if (timestamps)
			timestamps[i] = device->time[cause][i];
	}
	*pageCount = n;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
							   nvmlEnableState_t *isPending)
{
	DEVICE_CALL(device);
	hang(device);
	if (!isPending)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->no_pending)
		return NVML_ERROR_NOT_SUPPORTED;
	*isPending = device->pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED;
	return NVML_SUCCESS;
}

#if !defined(FAKE_OLD) && !defined(FAKE_ANCIENT)
EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int *corrRows,
					      unsigned int *uncRows, unsigned int *isPending,
					      unsigned int *failureOccurred)
{
	DEVICE_CALL(device);
	hang(device);
	if (!corrRows || !uncRows || !isPending || !failureOccurred)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->no_remap)
		return NVML_ERROR_NOT_SUPPORTED;
	*corrRows = device->remap[0];
	*uncRows = device->remap[1];
	*isPending = device->remap[2];
	*failureOccurred = device->remap[3];
	return NVML_SUCCESS;
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device,
						nvmlMemoryErrorType_t errorType,
						nvmlEccCounterType_t counterType,
						unsigned long long *eccCounts)
{
	DEVICE_CALL(device);
	hang(device);
	if (!eccCounts || (unsigned int)errorType > 1 || (unsigned int)counterType > 1)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (device->no_ecc)
		return NVML_ERROR_NOT_SUPPORTED;
	*eccCounts = __atomic_load_n(&device->ecc[errorType][counterType], __ATOMIC_ACQUIRE);
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device,
						     unsigned long long *eventTypes)
{
	DEVICE_CALL(device);
	if (!eventTypes)
		return NVML_ERROR_INVALID_ARGUMENT;
	*eventTypes = device->events;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
	nvmlReturn_t r;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = failing(__func__, NULL);
	if (r != NVML_SUCCESS)
		return r;
	*set = calloc(1, sizeof(**set));
	if (!*set)
		return NVML_ERROR_MEMORY;
	live_sets++;
	return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
					     nvmlEventSet_t set)
{
	nvmlReturn_t r = NVML_ERROR_INVALID_ARGUMENT;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!set)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (set->undefined)
		bad("nvmlDeviceRegisterEvents", "on a set in undefined state");
	if (device >= gpus && device < gpus + nr_gpus)
		r = is_lost(device) ? NVML_ERROR_GPU_IS_LOST : failing(__func__, device);
	/* "If function reports NVML_ERROR_UNKNOWN, event set is in undefined state" */
	if (r == NVML_ERROR_UNKNOWN)
		set->undefined = true;
	if (r != NVML_SUCCESS)
		return r;
	/* "NOT_SUPPORTED if ... some of requested event types" are not */
	if (eventTypes & ~device->events)
		return NVML_ERROR_NOT_SUPPORTED;
	set->mask[device->index] |= eventTypes;
	return NVML_SUCCESS;
}

/*
 * The event thread adds, the caller's thread lists: the count is published
 * after the page (release), read before it (acquire, in the getter).
 */
static void retire(struct nvmlDevice_st *g, int cause, unsigned long long addr,
		   unsigned long long time)
{
	unsigned int n = g->nr[cause];

	if (n >= MAX_PAGES)
		bad("too many pages", "retire");
	g->addr[cause][n] = addr;
	g->time[cause][n] = time;
	__atomic_store_n(&g->nr[cause], n + 1, __ATOMIC_RELEASE);
}

/* An ECC event is the driver's counters growing: both counters, by one. */
static void count_error(struct nvmlDevice_st *g, bool uncorrected)
{
	__atomic_add_fetch(&g->ecc[uncorrected][0], 1, __ATOMIC_RELEASE);
	__atomic_add_fetch(&g->ecc[uncorrected][1], 1, __ATOMIC_RELEASE);
}

static nvmlReturn_t event_wait(nvmlEventSet_t set, nvmlEventData_t *data,
					unsigned int timeoutms)
{
	nvmlReturn_t r;

	if (!initialized)
		return NVML_ERROR_UNINITIALIZED;
	if (!set || !data)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (set->undefined)
		bad("nvmlEventSetWait_v2", "on a set in undefined state");
	r = failing("nvmlEventSetWait_v2", NULL);
	if (r != NVML_SUCCESS)
		return r;
	while (next_step < nr_steps) {
		const struct step *s = &steps[next_step];
		long wait = s->ms - now_ms();

		if (wait > (long)timeoutms) {
			sleep_ms(timeoutms);
			return NVML_ERROR_TIMEOUT;
		}
		sleep_ms(wait);
		next_step++;
		if (s->retire >= 0)
			retire(&gpus[s->gpu], s->retire, s->addr, s->time);
		if (s->type == nvmlEventTypeSingleBitEccError ||
		    s->type == nvmlEventTypeDoubleBitEccError)
			count_error(&gpus[s->gpu], s->type == nvmlEventTypeDoubleBitEccError);
		if (s->lost)
			__atomic_store_n(&gpus[s->gpu].lost, true, __ATOMIC_SEQ_CST);
		if (s->hang) {
			__atomic_store_n(&gpus[s->gpu].hang_until, now_ms() + s->hang,
					 __ATOMIC_SEQ_CST);
			continue;	/* no event: NVML has none for a wedged GPU */
		}
		if (!set->mask[s->gpu])
			continue;
		if (s->lost)
			return NVML_ERROR_GPU_IS_LOST;
		if (is_lost(&gpus[s->gpu]) || !(set->mask[s->gpu] & s->type))
			continue;
		memset(data, 0, sizeof(*data));
		data->device = &gpus[s->gpu];
		data->eventType = s->type;
		data->eventData = s->data;
		data->gpuInstanceId = 0xFFFFFFFF;
		data->computeInstanceId = 0xFFFFFFFF;
		return NVML_SUCCESS;
	}
	sleep_ms(timeoutms);
	return NVML_ERROR_TIMEOUT;
}

EXPORT nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data,
					unsigned int timeoutms)
{
	nvmlReturn_t r;

	__atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
	r = event_wait(set, data, timeoutms);
	__atomic_sub_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
	return r;
}

EXPORT nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
	if (!initialized)
		bad("nvmlEventSetFree", "after nvmlShutdown");
	if (set) {
		live_sets--;
		free(set);
	}
	return NVML_SUCCESS;
}
