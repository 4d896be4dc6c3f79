// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the sockets systemd passes (daemon/passed.c): the
 * environment sd_listen_fds(3) reads, set up as systemd sets it for a
 * socket-activated service ($LISTEN_PID, $LISTEN_FDS, $LISTEN_FDNAMES,
 * the fds from 3 on).  Each case runs in a child of its own: it moves its
 * sockets onto fds 3 and up, which the test runner may be using, and its
 * environment must not reach the other tests.  The child exits with the
 * line of the first expectation that failed, 0 if none.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <systemd/sd-daemon.h>

#include "passed.h"
#include "unit.h"

#define EXPECT(cond) do { if (!(cond)) return __LINE__ % 250 + 1; } while (0)

static char dir[] = "/tmp/hbm-passed-XXXXXX";

/* A listening AF_UNIX socket of @type at @name in the test's directory, or unbound. */
static int unix_listener(int type, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, type, 0);

	if (fd < 0)
		return -1;
	if (name) {
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name);
		unlink(sa.sun_path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4))
			return -1;
	}
	return fd;
}

/* The fds @fds passed as systemd passes them, under @names (colon-separated), to @pid. */
static int pass(const int *fds, int n, const char *names, pid_t pid)
{
	char buf[32];
	int i, moved[8];

	for (i = 0; i < n; i++)	/* out of the way of 3 and up first */
		if ((moved[i] = fcntl(fds[i], F_DUPFD, 64)) < 0)
			return -1;
	for (i = 0; i < n; i++)
		if (dup2(moved[i], SD_LISTEN_FDS_START + i) < 0)
			return -1;
	snprintf(buf, sizeof(buf), "%d", (int)pid);
	setenv("LISTEN_PID", buf, 1);
	snprintf(buf, sizeof(buf), "%d", n);
	setenv("LISTEN_FDS", buf, 1);
	if (names)
		setenv("LISTEN_FDNAMES", names, 1);
	return 0;
}

static char *path_of(const char *name)
{
	static char p[sizeof(((struct sockaddr_un *)0)->sun_path)];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void in_child(int (*body)(void))
{
	pid_t pid;
	int status;

	ck_assert_ptr_nonnull(mkdtemp(strcpy(dir, "/tmp/hbm-passed-XXXXXX")));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid)
		_exit(body());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	unlink(path_of("control.sock"));
	unlink(path_of("other.sock"));
	unlink(path_of("stream.sock"));
	rmdir(dir);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status),
		      "an expectation failed (exit status %d: its line, mod 250, + 1)",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1);
}

static int by_name(void)
{
	int fds[2] = { unix_listener(SOCK_STREAM, "stream.sock"),
		       unix_listener(SOCK_SEQPACKET, "control.sock") };

	EXPECT(fds[0] >= 0 && fds[1] >= 0);
	EXPECT(!pass(fds, 2, "metrics:control", getpid()));
	EXPECT(passed_socket("control") == SD_LISTEN_FDS_START + 1);
	EXPECT(passed_socket("metrics") == SD_LISTEN_FDS_START);
	EXPECT(passed_socket("other") == -ENOENT);
	EXPECT(passed_socket("") == -ENOENT);
	/* asked again (a reload): the environment is still there */
	EXPECT(passed_socket("control") == SD_LISTEN_FDS_START + 1);
	return 0;
}

static int not_ours(void)
{
	int fds[1] = { unix_listener(SOCK_SEQPACKET, "control.sock") };

	EXPECT(fds[0] >= 0);
	/* A parent's environment, inherited: meant for the parent, not us. */
	EXPECT(!pass(fds, 1, "control", getppid()));
	EXPECT(passed_socket("control") == -ENOENT);
	return 0;
}

static int none(void)
{
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	EXPECT(passed_socket("control") == -ENOENT);
	/* Named fds that are not open: an error, not "none passed" (the
	 * caller would bind the path anew, over systemd's socket). */
	close(SD_LISTEN_FDS_START);
	setenv("LISTEN_FDNAMES", "control", 1);
	EXPECT(!pass(NULL, 0, NULL, getpid()));
	setenv("LISTEN_FDS", "1", 1);
	EXPECT(passed_socket("control") == -EBADF);
	return 0;
}

/* Fewer names than fds (a unit's FileDescriptorName= and a mangled
 * environment): an error, not "none passed". */
static int names_mismatch(void)
{
	int fds[2] = { unix_listener(SOCK_SEQPACKET, "control.sock"),
		       unix_listener(SOCK_SEQPACKET, "other.sock") };

	EXPECT(fds[0] >= 0 && fds[1] >= 0);
	EXPECT(!pass(fds, 2, "control", getpid()));
	EXPECT(passed_socket("control") == -EINVAL);
	return 0;
}

static int control_kinds(void)
{
	int right = unix_listener(SOCK_SEQPACKET, "control.sock");
	int elsewhere = unix_listener(SOCK_SEQPACKET, "other.sock");
	int stream = unix_listener(SOCK_STREAM, "stream.sock");
	int unbound = unix_listener(SOCK_SEQPACKET, NULL);
	int pair[2], pipefd[2];

	EXPECT(right >= 0 && elsewhere >= 0 && stream >= 0 && unbound >= 0);
	EXPECT(!socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) && !pipe(pipefd));
	EXPECT(passed_control_socket(right, path_of("control.sock")) == 0);
	/* bound elsewhere: served on, the caller warns */
	EXPECT(passed_control_socket(elsewhere, path_of("control.sock")) == 1);
	/* not listening, or not a SOCK_SEQPACKET AF_UNIX socket: refused */
	EXPECT(passed_control_socket(stream, path_of("stream.sock")) == -EPROTOTYPE);
	EXPECT(passed_control_socket(unbound, path_of("control.sock")) == -EPROTOTYPE);
	EXPECT(passed_control_socket(pair[0], path_of("control.sock")) == -EPROTOTYPE);
	EXPECT(passed_control_socket(pipefd[0], path_of("control.sock")) == -EPROTOTYPE);
	EXPECT(passed_control_socket(1000, path_of("control.sock")) == -EBADF);
	return 0;
}

START_TEST(passed_by_name) { in_child(by_name); }
END_TEST

START_TEST(passed_to_another_pid) { in_child(not_ours); }
END_TEST

START_TEST(passed_none) { in_child(none); }
END_TEST

START_TEST(passed_names_mismatch) { in_child(names_mismatch); }
END_TEST

START_TEST(passed_control_kinds) { in_child(control_kinds); }
END_TEST

Suite *passed_suite(void)
{
	Suite *s = suite_create("passed");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, passed_by_name);
	tcase_add_test(tc, passed_to_another_pid);
	tcase_add_test(tc, passed_none);
	tcase_add_test(tc, passed_names_mismatch);
	tcase_add_test(tc, passed_control_kinds);
	suite_add_tcase(s, tc);
	return s;
}
