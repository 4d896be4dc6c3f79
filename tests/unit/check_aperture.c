// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of libhbmguard's SIGBUS guard (daemon/libhbmguard/aperture.c),
 * the parts that need no kernel module: an anonymous mapping stands in for an
 * aperture, and the process queues itself the siginfo the kernel would send
 * (any si_code may be queued to one's own threads).  The file is included,
 * for its static functions and two hooks into the handler's race with
 * hbmguard_aperture_close().
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_absorbing(void);
static void test_close_waits(void);
static void test_installing(void);
#define HBMGUARD_TEST_ABSORBING()	test_absorbing()
#define HBMGUARD_TEST_CLOSE_WAITS()	test_close_waits()
#define HBMGUARD_TEST_INSTALLING()	test_installing()
#include "libhbmguard/aperture.c"

#include <check.h>
#include "unit.h"

#define PAGE 4096UL

/* What the action the guard replaced was given. */
static volatile sig_atomic_t got, got_code, got_errno;
static void *volatile got_addr;

static void recorder(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	got++;
	got_code = si->si_code;
	got_addr = si->si_addr;
	got_errno = errno;
	errno = EIO;	/* careless: the guard restores errno after it */
}

static void set_action(void (*fn)(int, siginfo_t *, void *), void (*plain)(int), int flags)
{
	struct sigaction sa = { .sa_flags = flags };

	if (fn)
		sa.sa_sigaction = fn;
	else
		sa.sa_handler = plain;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGBUS, &sa, NULL), 0);
}

/* An anonymous stand-in for an aperture of @pages pages, each its number. */
static struct hbmguard_aperture *fake_aperture(void *where, unsigned int pages)
{
	struct hbmguard_aperture *a = calloc(1, sizeof(*a));
	unsigned int i;

	ck_assert_ptr_nonnull(a);
	a->fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	a->length = pages * PAGE;
	a->addr = where;
	if (!where) {
		a->addr = mmap(NULL, a->length, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert(a->addr != MAP_FAILED);
		for (i = 0; i < pages; i++)
			memset((char *)a->addr + i * PAGE, i + 1, PAGE);
	}
	ck_assert_int_eq(publish(a), 0);
	return a;
}

/* The siginfo the kernel would send, queued to this thread. */
static void send_self(int code, void *addr)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	si.si_signo = SIGBUS;
	si.si_code = code;
	si.si_addr = addr;
	ck_assert_int_eq(syscall(SYS_rt_tgsigqueueinfo, getpid(), gettid(), SIGBUS, &si), 0);
}

enum how { RAISE, KILL, QUEUE, AO_INSIDE, AR_OUTSIDE, ADRERR_INSIDE, NR_HOW };

/* A SIGBUS that is not a touch of a lost page, sent as @how. */
static void send_other(enum how how, struct hbmguard_aperture *a)
{
	static char outside[PAGE];

	switch (how) {
	case RAISE:
		raise(SIGBUS);
		break;
	case KILL:
		kill(getpid(), SIGBUS);
		break;
	case QUEUE:
		sigqueue(getpid(), SIGBUS, (union sigval){ .sival_int = 1 });
		break;
	case AO_INSIDE:
		send_self(BUS_MCEERR_AO, (char *)a->addr + PAGE);
		break;
	case AR_OUTSIDE:
		send_self(BUS_MCEERR_AR, outside);
		break;
	default:
		send_self(BUS_ADRERR, (char *)a->addr + PAGE);
		break;
	}
}

static int expected_code(enum how how)
{
	static const int codes[NR_HOW] = { SI_TKILL, SI_USER, SI_QUEUE, BUS_MCEERR_AO,
					   BUS_MCEERR_AR, BUS_ADRERR };

	return codes[how];
}

static bool intact(struct hbmguard_aperture *a, unsigned int page)
{
	const unsigned char *p = (unsigned char *)a->addr + page * PAGE;
	size_t i;

	for (i = 0; i < PAGE; i++)
		if (p[i] != page + 1)
			return false;
	return true;
}

START_TEST(test_absorbs_lost_page)
{
	struct hbmguard_aperture *a;

	set_action(NULL, SIG_DFL, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	a = fake_aperture(NULL, 4);
	errno = EDOM;
	send_self(BUS_MCEERR_AR, (char *)a->addr + 2 * PAGE + 8);
	ck_assert_int_eq(errno, EDOM);
	ck_assert_int_eq(((unsigned char *)a->addr)[2 * PAGE + 100], 0);
	ck_assert(intact(a, 0) && intact(a, 1) && intact(a, 3));
	ck_assert_int_eq(hbmguard_aperture_lost(a), 1);
	hbmguard_aperture_close(a);
}
END_TEST

/* Everything else reaches the handler installed before, and the guard stays. */
START_TEST(test_others_reach_previous_handler)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);
	enum how how;

	set_action(recorder, NULL, SA_SIGINFO);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	for (how = 0; how < NR_HOW; how++) {
		got = 0;
		errno = EDOM;
		send_other(how, a);
		ck_assert_int_eq(got, 1);
		ck_assert_int_eq(got_code, expected_code(how));
		ck_assert_int_eq(got_errno, EDOM);
		ck_assert_int_eq(errno, EDOM);
	}
	ck_assert(intact(a, 1));
	ck_assert_int_eq(hbmguard_aperture_lost(a), 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);	/* still installed */
	send_self(BUS_MCEERR_AR, (char *)a->addr);
	ck_assert_int_eq(hbmguard_aperture_lost(a), 1);
	hbmguard_aperture_close(a);
}
END_TEST

/* A plain handler, and one the kernel resets after its first signal. */
static volatile sig_atomic_t plain_got;
static void plain(int sig)
{
	(void)sig;
	plain_got++;
}

START_TEST(test_previous_flags)
{
	pid_t pid;
	int status;

	set_action(NULL, plain, SA_RESETHAND);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	raise(SIGBUS);
	ck_assert_int_eq(plain_got, 1);
	pid = fork();
	if (!pid) {
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		raise(SIGBUS);		/* reset: the default action now */
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
}
END_TEST

/* With no handler before it, the guard kills as the kernel would have. */
START_TEST(test_default_action_kills)
{
	enum how how;

	for (how = 0; how < NR_HOW; how++) {
		pid_t pid = fork();
		int status;

		ck_assert_int_ge(pid, 0);
		if (!pid) {
			struct rlimit none = { 0, 0 };
			struct hbmguard_aperture *a = fake_aperture(NULL, 4);

			setrlimit(RLIMIT_CORE, &none);
			set_action(NULL, SIG_DFL, 0);
			if (hbmguard_aperture_guard())
				_exit(2);
			send_other(how, a);
			_exit(0);
		}
		ck_assert_int_eq(waitpid(pid, &status, 0), pid);
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS,
			      "case %d: status %#x", how, status);
	}
}
END_TEST

/* Ignored, they are ignored, and the guard stays; a fault kills regardless. */
START_TEST(test_ignored)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);
	pid_t pid;
	int status;

	set_action(NULL, SIG_IGN, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	send_other(RAISE, a);
	send_other(KILL, a);
	send_other(QUEUE, a);
	send_other(AO_INSIDE, a);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	send_self(BUS_MCEERR_AR, (char *)a->addr + PAGE);
	ck_assert_int_eq(hbmguard_aperture_lost(a), 1);
	pid = fork();
	if (!pid) {
		struct rlimit none = { 0, 0 };

		setrlimit(RLIMIT_CORE, &none);
		send_other(AR_OUTSIDE, a);	/* forced through SIG_IGN */
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
	hbmguard_aperture_close(a);
}
END_TEST

/*
 * The zero page cannot be mapped (the "aperture" is in the kernel's half):
 * the signal goes on, and neither that handler nor the interrupted code sees
 * mmap()'s errno.
 */
START_TEST(test_errno_saved)
{
	struct hbmguard_aperture *a = fake_aperture((void *)0xffff900000000000UL, 4);

	set_action(recorder, NULL, SA_SIGINFO);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	got = 0;
	errno = EDOM;
	send_self(BUS_MCEERR_AR, (char *)a->addr + PAGE);
	ck_assert_int_eq(got, 1);
	ck_assert_int_eq(got_code, BUS_MCEERR_AR);
	ck_assert_int_eq(got_errno, EDOM);
	ck_assert_int_eq(errno, EDOM);
	ck_assert_int_eq(hbmguard_aperture_lost(a), 0);
	hbmguard_aperture_close(a);
}
END_TEST

/*
 * The kernel runs a handler where its flags say: on the alternate stack
 * (SA_ONSTACK), restarting the system call it interrupted (SA_RESTART) or
 * failing it with EINTR.  The guard's flags are what the kernel sees.
 */
static char *volatile got_stack;

static void stack_recorder(int sig, siginfo_t *si, void *uc)
{
	char here;

	got_stack = &here;
	recorder(sig, si, uc);
}

START_TEST(test_previous_stack)
{
	static char alt[64 << 10];
	stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);

	ck_assert_int_eq(sigaltstack(&ss, NULL), 0);
	set_action(stack_recorder, NULL, SA_SIGINFO | SA_ONSTACK);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	got = 0;
	send_other(KILL, a);
	ck_assert_int_eq(got, 1);
	ck_assert_msg(got_stack >= alt && got_stack < alt + sizeof(alt),
		      "the handler ran at %p, not on its stack", (void *)got_stack);
	hbmguard_aperture_close(a);
}
END_TEST

struct reader {
	int fd;
	pid_t tid;
	ssize_t ret;
	int err;
};

static void *blocking_read(void *arg)
{
	struct reader *r = arg;
	char c;

	__atomic_store_n(&r->tid, gettid(), __ATOMIC_RELEASE);
	r->ret = read(r->fd, &c, 1);
	r->err = errno;
	return NULL;
}

/* Until @tid sleeps in read(): /proc shows a sleeping task's system call. */
static void wait_in_read(pid_t tid)
{
	char path[64], buf[64] = "";
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	for (;;) {
		fd = open(path, O_RDONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_gt(read(fd, buf, sizeof(buf) - 1), 0);
		close(fd);
		if (!strncmp(buf, "0 ", 2))	/* SYS_read */
			return;
		sched_yield();
	}
}

START_TEST(test_previous_restart)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);
	int restart = _i ? SA_RESTART : 0, p[2];
	struct reader r = { .tid = 0 };
	pthread_t t;

	set_action(recorder, NULL, SA_SIGINFO | restart);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	ck_assert_int_eq(pipe(p), 0);
	r.fd = p[0];
	got = 0;
	ck_assert_int_eq(pthread_create(&t, NULL, blocking_read, &r), 0);
	while (!__atomic_load_n(&r.tid, __ATOMIC_ACQUIRE))
		sched_yield();
	wait_in_read(r.tid);
	ck_assert_int_eq(pthread_kill(t, SIGBUS), 0);
	while (!got)
		sched_yield();
	ck_assert_int_eq(write(p[1], "x", 1), 1);	/* for a read() restarted */
	pthread_join(t, NULL);
	if (restart)
		ck_assert_int_eq(r.ret, 1);
	else
		ck_assert_msg(r.ret == -1 && r.err == EINTR,
			      "read() under a handler without SA_RESTART: %zd, errno %d",
			      r.ret, r.err);
	close(p[0]);
	close(p[1]);
	hbmguard_aperture_close(a);
}
END_TEST

/*
 * Another thread installs a handler between the guard's reading of the
 * action and its replacing it: what the guard replaced is that handler.
 */
static void (*install_meanwhile)(int, siginfo_t *, void *);

static void test_installing(void)
{
	if (install_meanwhile)
		set_action(install_meanwhile, NULL, SA_SIGINFO);
}

START_TEST(test_replaced_meanwhile)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);

	set_action(NULL, SIG_DFL, 0);
	install_meanwhile = recorder;
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	got = 0;
	send_other(KILL, a);
	ck_assert_int_eq(got, 1);
	send_other(AO_INSIDE, a);
	ck_assert_int_eq(got, 2);
	hbmguard_aperture_close(a);
}
END_TEST

/* A handler installed after the guard replaces it: the guard says so. */
START_TEST(test_replaced)
{
	struct sigaction guard;

	set_action(NULL, SIG_DFL, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	ck_assert_int_eq(sigaction(SIGBUS, NULL, &guard), 0);
	set_action(recorder, NULL, SA_SIGINFO);
	ck_assert_int_eq(hbmguard_aperture_guard(), -EBUSY);
	set_action(NULL, SIG_DFL, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), -EBUSY);
	ck_assert_int_eq(sigaction(SIGBUS, &guard, NULL), 0);	/* put back */
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
}
END_TEST

/*
 * hbmguard_aperture_close() while a handler is between finding the aperture
 * and mapping its zero page: close must not unmap (and let the range be
 * reused) until the handler is done.  The hooks hold the handler there and
 * say when close waits.
 */
static sem_t in_handler, go, progress;
static atomic_bool armed, closed, waiting;

static void test_absorbing(void)
{
	if (!atomic_exchange(&armed, false))
		return;
	sem_post(&in_handler);
	while (sem_wait(&go))
		;
}

static atomic_bool in_child;

static void test_close_waits(void)
{
	if (atomic_load(&in_child))
		_exit(3);	/* waits for a thread the child does not have */
	if (!atomic_exchange(&waiting, true))
		sem_post(&progress);
}

static void *fault_thread(void *arg)
{
	struct hbmguard_aperture *a = arg;

	send_self(BUS_MCEERR_AR, (char *)a->addr + PAGE);
	return NULL;
}

static void *close_thread(void *arg)
{
	hbmguard_aperture_close(arg);
	atomic_store(&closed, true);
	sem_post(&progress);
	return NULL;
}

START_TEST(test_close_waits_for_handler)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);
	char *addr = a->addr, *canary;
	pthread_t faulter, closer;
	bool early;

	sem_init(&in_handler, 0, 0);
	sem_init(&go, 0, 0);
	sem_init(&progress, 0, 0);
	set_action(NULL, SIG_DFL, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	atomic_store(&armed, true);
	ck_assert_int_eq(pthread_create(&faulter, NULL, fault_thread, a), 0);
	sem_wait(&in_handler);
	ck_assert_int_eq(pthread_create(&closer, NULL, close_thread, a), 0);
	sem_wait(&progress);		/* closed, or waiting for the handler */
	early = atomic_load(&closed);
	/* Memory of someone else's where the aperture was, if it is free. */
	canary = mmap(addr, 4 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (canary != MAP_FAILED)
		memset(canary, 0x5a, 4 * PAGE);
	sem_post(&go);
	pthread_join(faulter, NULL);
	pthread_join(closer, NULL);
	ck_assert_msg(!early, "close returned while a handler was mapping");
	if (canary == addr)
		ck_assert_int_eq(canary[PAGE + 7], 0x5a);
	ck_assert(canary == MAP_FAILED || canary == addr);
}
END_TEST

/*
 * fork() while another thread's handler is absorbing: the child has no such
 * thread, so its close() has nothing to wait for.
 */
START_TEST(test_fork_while_absorbing)
{
	struct hbmguard_aperture *a = fake_aperture(NULL, 4);
	pthread_t faulter;
	pid_t pid;
	int status;

	sem_init(&in_handler, 0, 0);
	sem_init(&go, 0, 0);
	set_action(NULL, SIG_DFL, 0);
	ck_assert_int_eq(hbmguard_aperture_guard(), 0);
	atomic_store(&armed, true);
	ck_assert_int_eq(pthread_create(&faulter, NULL, fault_thread, a), 0);
	sem_wait(&in_handler);
	pid = fork();
	if (!pid) {
		atomic_store(&in_child, true);
		hbmguard_aperture_close(a);
		_exit(0);
	}
	sem_post(&go);
	pthread_join(faulter, NULL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status %#x", status);
	ck_assert_int_eq(hbmguard_aperture_lost(a), 1);
	hbmguard_aperture_close(a);
}
END_TEST

Suite *aperture_suite(void)
{
	Suite *s = suite_create("aperture");
	TCase *tc = tcase_create("guard");

	/* Each test installs its own guard: one process each. */
	tcase_add_test(tc, test_absorbs_lost_page);
	tcase_add_test(tc, test_others_reach_previous_handler);
	tcase_add_test(tc, test_previous_flags);
	tcase_add_test(tc, test_default_action_kills);
	tcase_add_test(tc, test_ignored);
	tcase_add_test(tc, test_errno_saved);
	tcase_add_test(tc, test_replaced);
	tcase_add_test(tc, test_replaced_meanwhile);
	tcase_add_test(tc, test_previous_stack);
	tcase_add_loop_test(tc, test_previous_restart, 0, 2);
	tcase_add_test(tc, test_close_waits_for_handler);
	tcase_add_test(tc, test_fork_while_absorbing);
	suite_add_tcase(s, tc);
	return s;
}
