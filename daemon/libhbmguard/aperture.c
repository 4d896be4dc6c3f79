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
 * zero pages.
 *
 * The guard is a SIGBUS handler, so it runs anywhere, on any thread, in the
 * middle of anything: it calls only async-signal-safe functions (and mmap(),
 * which POSIX does not list but glibc makes a bare system call), takes no
 * lock and saves errno.  It absorbs exactly what the kernel raises for a
 * touch of a lost page, BUS_MCEERR_AR at an address of a guarded aperture:
 * the module's fault handler answers VM_FAULT_HWPOISON for a lost page, which
 * x86's do_sigbus() turns into force_sig_mceerr(BUS_MCEERR_AR)
 * (arch/x86/mm/fault.c, 6.1 and 6.12), as memory_failure()'s kill_proc() does
 * for the consumer of real poison (mm/memory-failure.c).  A device gone is
 * VM_FAULT_SIGBUS, BUS_ADRERR, not a loss.  Everything else (kill -BUS,
 * raise(), sigqueue(), the early warning BUS_MCEERR_AO, an address outside
 * every aperture) goes on as if the guard were not there: to the action it
 * replaced, that action's mask, flags (its stack and SA_RESTART the guard's
 * own) and errno included; ignored if it was SIG_IGN, but for a fault's,
 * which the kernel forces through SIG_IGN; or to the default action, which
 * kills with a core.
 *
 * The handler reads the table of apertures without a lock: a slot is filled
 * before it is published (release), and a handler marks itself busy on a
 * slot before it reads it; hbmguard_aperture_close() unpublishes the slot,
 * waits until no handler is busy on it and unmaps before the slot can be
 * reused, so a handler never maps a zero page over memory that is no longer
 * the aperture's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hbmguard.h"

#define MAX_APERTURES 64

/* Only tests/unit/check_aperture.c, which includes this file, defines them. */
#ifndef HBMGUARD_TEST_ABSORBING
#define HBMGUARD_TEST_ABSORBING()	do { } while (0)
#define HBMGUARD_TEST_CLOSE_WAITS()	do { } while (0)
#define HBMGUARD_TEST_INSTALLING()	do { } while (0)
#endif

/* What a signal handler may touch: lock-free, never a hidden lock. */
_Static_assert(ATOMIC_LONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2 &&
	       ATOMIC_BOOL_LOCK_FREE == 2 && sizeof(uintptr_t) == sizeof(long),
	       "the SIGBUS handler needs lock-free atomics");

struct hbmguard_aperture {
	int fd;
	uint32_t device;
	uint64_t offset, length;
	void *addr;
	unsigned int slot;
};

static struct {
	_Atomic(uintptr_t) start;	/* 0: not published */
	uintptr_t end;
	atomic_ulong lost;
	atomic_uint busy;		/* handlers reading the slot */
	bool used;			/* under slots_lock */
} slots[MAX_APERTURES];
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
/*
 * The action the guard replaced: as read before the guard went in ([0]), or
 * as its sigaction() replaced it when another thread changed it meanwhile
 * ([1]).  Each is written once, before the handler may read it, so a handler
 * never reads one half written.
 */
static struct sigaction replaced[2];
static atomic_uint replaced_at;
static atomic_bool previous_reset;	/* its SA_RESETHAND took effect */
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

/*
 * The kernel forces a fault's SIGBUS through SIG_IGN and a blocked mask
 * (force_sig_info_to_task(), kernel/signal.c); a signal sent by a process,
 * or BUS_MCEERR_AO (send_sig_mceerr()), it delivers as the action says.
 */
static bool forced(const siginfo_t *si)
{
	return si->si_code > 0 && si->si_code != BUS_MCEERR_AO;
}

/*
 * The default action, as the kernel would have taken it: the signal again,
 * its siginfo unchanged, pending until the handler returns, then fatal with a
 * core.  For a fault, the registers in the core are the faulting touch's.  A
 * process may queue any si_code to its own threads (do_rt_tgsigqueueinfo(),
 * kernel/signal.c).
 */
static void die(int sig, siginfo_t *si)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };

	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	if (syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), sig, si))
		raise(sig);
}

/* Give the signal to the action the guard replaced, as the kernel would. */
static void chain(int sig, siginfo_t *si, void *uc, int err)
{
	const struct sigaction *previous = &replaced[atomic_load(&replaced_at)];
	int flags = previous->sa_flags;
	void (*handler)(int) = previous->sa_handler;
	sigset_t mask, old;

	if (handler == SIG_IGN) {
		if (!forced(si))
			return;
		handler = SIG_DFL;
	}
	/* One-shot: the kernel gives one signal, of all threads', the handler. */
	if (handler != SIG_DFL && (flags & SA_RESETHAND) && atomic_exchange(&previous_reset, true))
		handler = SIG_DFL;
	if (handler == SIG_DFL) {
		die(sig, si);
		return;
	}
	mask = previous->sa_mask;
	if (!(flags & SA_NODEFER))
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, &old);
	if (flags & SA_NODEFER) {
		sigemptyset(&mask);
		sigaddset(&mask, sig);
		pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
	}
	errno = err;
	if (flags & SA_SIGINFO)
		previous->sa_sigaction(sig, si, uc);
	else
		handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* A lost page of a guarded aperture: a zero page over it, counted. */
static bool absorb(const siginfo_t *si)
{
	uintptr_t addr = (uintptr_t)si->si_addr;
	bool done = false;
	unsigned int i;

	if (si->si_code != BUS_MCEERR_AR)
		return false;
	for (i = 0; i < MAX_APERTURES; i++) {
		uintptr_t start;
		bool hit;

		/* busy before start: close() sees one or we see its 0 */
		atomic_fetch_add(&slots[i].busy, 1);
		start = atomic_load(&slots[i].start);
		hit = start && addr >= start && addr < slots[i].end;
		if (hit) {
			HBMGUARD_TEST_ABSORBING();
			done = mmap((void *)(addr & page_mask), ~page_mask + 1,
				    PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED;
			if (done)
				atomic_fetch_add(&slots[i].lost, 1);
		}
		atomic_fetch_sub(&slots[i].busy, 1);
		if (hit)
			break;
	}
	return done;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	int err = errno;

	if (!absorb(si))
		chain(sig, si, uc, err);
	errno = err;
}

static bool is_guard(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_sigbus;
}

/*
 * The flags of the action replaced that the kernel reads from the guard's
 * instead: on which stack the handler runs, and whether the system call the
 * signal interrupted restarts or fails with EINTR.  Ignored or killing, the
 * signal would have interrupted nothing, so that restarts.
 */
static int kernel_flags(const struct sigaction *sa)
{
	if (sa->sa_handler == SIG_DFL || sa->sa_handler == SIG_IGN)
		return SA_RESTART;
	return sa->sa_flags & (SA_ONSTACK | SA_RESTART);
}

int hbmguard_aperture_guard(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigbus, .sa_flags = SA_SIGINFO }, cur;
	int err = 0;

	sigemptyset(&sa.sa_mask);
	pthread_mutex_lock(&slots_lock);
	if (guarded) {
		/* A handler installed since replaced the guard: say so. */
		if (sigaction(SIGBUS, NULL, &cur))
			err = -errno;
		else if (!is_guard(&cur))
			err = -EBUSY;
		goto out;
	}
	page_mask = ~((uintptr_t)sysconf(_SC_PAGESIZE) - 1);
	/*
	 * replaced[0] is complete before the handler can run: sigaction()
	 * copies the old action out only after the new one is in place.
	 * Unless another thread changed it in between, what was replaced is
	 * that.
	 */
	if (sigaction(SIGBUS, NULL, &replaced[0])) {
		err = -errno;
		goto out;
	}
	sa.sa_flags |= kernel_flags(&replaced[0]);
	HBMGUARD_TEST_INSTALLING();
	if (sigaction(SIGBUS, &sa, &cur)) {
		err = -errno;
		goto out;
	}
	if (cur.sa_handler != replaced[0].sa_handler || cur.sa_flags != replaced[0].sa_flags) {
		replaced[1] = cur;
		atomic_store(&replaced_at, 1);
	}
	guarded = true;
out:
	pthread_mutex_unlock(&slots_lock);
	return err;
}

/* Into a free slot, for the handler to see; -EMFILE when none is free. */
static int publish(struct hbmguard_aperture *a)
{
	int err = -EMFILE;

	pthread_mutex_lock(&slots_lock);
	for (a->slot = 0; a->slot < MAX_APERTURES; a->slot++) {
		if (slots[a->slot].used)
			continue;
		slots[a->slot].used = true;
		slots[a->slot].end = (uintptr_t)a->addr + a->length;
		atomic_store(&slots[a->slot].lost, 0);
		atomic_store_explicit(&slots[a->slot].start, (uintptr_t)a->addr,
				      memory_order_release);
		err = 0;
		break;
	}
	pthread_mutex_unlock(&slots_lock);
	return err;
}

/* Out of the handler's sight, and unmapped before its slot is free again. */
static void unpublish_unmap(struct hbmguard_aperture *a)
{
	pthread_mutex_lock(&slots_lock);
	atomic_store(&slots[a->slot].start, 0);
	while (atomic_load(&slots[a->slot].busy)) {
		HBMGUARD_TEST_CLOSE_WAITS();
		sched_yield();
	}
	munmap(a->addr, a->length);
	slots[a->slot].used = false;
	pthread_mutex_unlock(&slots_lock);
}

/*
 * fork() copies the table as it is: a handler busy on a thread the child does
 * not have would keep the child's close() waiting forever, and slots_lock
 * could be held by such a thread.  So fork() takes the lock, and the child,
 * alone, has no handler busy.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&slots_lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&slots_lock);
}

static void fork_child(void)
{
	unsigned int i;

	for (i = 0; i < MAX_APERTURES; i++)
		atomic_store(&slots[i].busy, 0);
	pthread_mutex_init(&slots_lock, NULL);
}

__attribute__((constructor)) static void register_fork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int hbmguard_aperture_open(const char *device, uint64_t offset, uint64_t length,
			   struct hbmguard_aperture **out)
{
	struct hbmguard_aperture *a = calloc(1, sizeof(*a));
	int err;

	if (!a)
		return -ENOMEM;
	/*
	 * The writers' node; a module older than it has only the other, and
	 * a container may be let into that one alone (its device cgroup: EPERM).
	 */
	a->fd = open("/dev/" HBMGUARD_APERTURE_DEVICE_NAME, O_RDWR | O_CLOEXEC);
	if (a->fd < 0 && (errno == ENOENT || errno == EPERM))
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
	err = publish(a);
	if (err)
		goto err_unmap;
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
	unsigned long seen = atomic_load(&slots[a->slot].lost), left;

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
	/*
	 * The losses counted before: a handler on another thread may have put
	 * its zero page over the mapping just made, and counted it since.
	 * Another restore() may have taken them away already.
	 */
	left = atomic_load(&slots[a->slot].lost);
	while (!atomic_compare_exchange_weak(&slots[a->slot].lost, &left,
					     left > seen ? left - seen : 0))
		;
	return 0;
}

void hbmguard_aperture_close(struct hbmguard_aperture *a)
{
	if (!a)
		return;
	unpublish_unmap(a);
	close(a->fd);
	free(a);
}
