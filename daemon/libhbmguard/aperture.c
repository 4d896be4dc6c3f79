// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A device's aperture mapped into the process, and the loss of its pages
 * made survivable.
 *
 * A page lost to an uncorrectable error raises SIGBUS (BUS_MCEERR_AR) on the
 * next touch, as real poison does.  A training process cannot take that
 * signal where it lands: the touch is deep in a kernel of its framework, on
 * any of its threads.  So once guarded, the library's handler puts an
 * anonymous zero page over the lost one and lets the touch go on: the step
 * computes garbage, and the loss is counted, for the training loop to see
 * at its next step boundary (hbmguard_aperture_lost()), throw the step away
 * and restore the state from a peer.  hbmguard_aperture_restore() tells the
 * kernel the owner rewrites the pages and maps the aperture back over the
 * zero pages.  A SIGBUS anywhere else goes to the handler that was there
 * before, or kills the process as it would have.
 *
 * The handler reads the list of mappings without a lock: a slot is filled
 * before it is published (release) and unpublished before its memory goes.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "hbmguard.h"

#define MAX_APERTURES 64

struct hbmguard_aperture {
	int fd;
	uint32_t device;
	uint64_t offset, length;
	void *addr;
	unsigned int slot;
};

static struct {
	_Atomic(uintptr_t) start;	/* 0: free */
	uintptr_t end;
	atomic_ulong lost;
} slots[MAX_APERTURES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sigaction previous;
static bool guarded;
static uintptr_t page_mask;

int hbmguard_device_find(int fd, const char *name, uint32_t *id)
{
	uint32_t ids[HBMGUARD_MAX_DEVICES], i;
	struct hbmguard_device_list l = { .size = sizeof(l), .capacity = HBMGUARD_MAX_DEVICES,
					  .ids = (uintptr_t)ids };

	if (ioctl(fd, HBMGUARD_IOC_LIST_DEVICES, &l))
		return -errno;
	for (i = 0; i < l.count && i < HBMGUARD_MAX_DEVICES; i++) {
		struct hbmguard_device_info di = { .size = sizeof(di), .device = ids[i] };

		if (ioctl(fd, HBMGUARD_IOC_GET_DEVICE, &di))
			continue;	/* gone meanwhile */
		if (!strcmp(di.name, name) || (di.identity[0] && !strcmp(di.identity, name))) {
			*id = ids[i];
			return 0;
		}
	}
	return -ENODEV;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	if (previous.sa_flags & SA_SIGINFO) {
		previous.sa_sigaction(sig, si, uc);
	} else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
		previous.sa_handler(sig);
	} else {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		/*
		 * Returning re-runs the touch, which now kills as it would have
		 * (the kernel does not let a fault's SIGBUS be ignored either).
		 */
		sigaction(sig, &dfl, NULL);
	}
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	unsigned int i;

	if (si->si_code == BUS_MCEERR_AR)
		for (i = 0; i < MAX_APERTURES; i++) {
			uintptr_t start = atomic_load_explicit(&slots[i].start,
							       memory_order_acquire);

			if (!start || addr < start || addr >= slots[i].end)
				continue;
			if (mmap((void *)(addr & page_mask), ~page_mask + 1,
				 PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
				break;
			atomic_fetch_add(&slots[i].lost, 1);
			return;
		}
	chain(sig, si, uc);
}

int hbmguard_aperture_guard(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO | SA_RESTART };
	int err = 0;

	sigemptyset(&sa.sa_mask);
	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	pthread_mutex_lock(&slots_lock);
	if (!guarded && sigaction(SIGBUS, &sa, &previous))
		err = -errno;
	else
		guarded = true;
	pthread_mutex_unlock(&slots_lock);
	return err;
}

int hbmguard_aperture_open(const char *device, uint64_t offset, uint64_t length,
			   struct hbmguard_aperture **out)
{
	struct hbmguard_aperture *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	a->fd = open("/dev/" HBMGUARD_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (a->fd < 0) {
		err = -errno;
		goto err_free;
	}
	err = hbmguard_device_find(a->fd, device, &a->device);
	if (err)
		goto err_close;
	a->addr = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd,
		       HBMGUARD_MMAP_APERTURE(a->device) + offset);
	if (a->addr == MAP_FAILED) {
		err = -errno;
		goto err_close;
	}
	a->offset = offset;
	a->length = length;
	pthread_mutex_lock(&slots_lock);
	for (a->slot = 0; a->slot < MAX_APERTURES && slots[a->slot].start; a->slot++)
		;
	if (a->slot < MAX_APERTURES) {
		slots[a->slot].end = (uintptr_t)a->addr + length;
		atomic_store(&slots[a->slot].lost, 0);
		atomic_store_explicit(&slots[a->slot].start, (uintptr_t)a->addr,
				      memory_order_release);
	}
	pthread_mutex_unlock(&slots_lock);
	if (a->slot == MAX_APERTURES) {
		err = -EMFILE;
		goto err_unmap;
	}
	*out = a;
	return 0;

err_unmap:
	munmap(a->addr, length);
err_close:
	close(a->fd);
err_free:
	free(a);
	return err;
}

void *hbmguard_aperture_addr(const struct hbmguard_aperture *a)
{
	return a->addr;
}

uint64_t hbmguard_aperture_lost(const struct hbmguard_aperture *a)
{
	return atomic_load(&slots[a->slot].lost);
}

int hbmguard_aperture_restore(struct hbmguard_aperture *a, uint64_t offset, uint64_t length)
{
	struct hbmguard_extent_op x = { .size = sizeof(x), .device = a->device,
					.offset = offset, .length = length };

	if (offset < a->offset || length > a->length ||
	    offset - a->offset > a->length - length)
		return -ERANGE;
	if (ioctl(a->fd, HBMGUARD_IOC_RESTORED, &x))
		return -errno;
	/* Over the zero pages the handler put there, if any. */
	if (mmap((char *)a->addr + (offset - a->offset), length, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, a->fd,
		 HBMGUARD_MMAP_APERTURE(a->device) + offset) == MAP_FAILED)
		return -errno;
	atomic_store(&slots[a->slot].lost, 0);
	return 0;
}

void hbmguard_aperture_close(struct hbmguard_aperture *a)
{
	if (!a)
		return;
	atomic_store_explicit(&slots[a->slot].start, 0, memory_order_release);
	munmap(a->addr, a->length);
	close(a->fd);
	free(a);
}
