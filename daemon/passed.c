// SPDX-License-Identifier: GPL-2.0
/*
 * Sockets systemd passes (sd_listen_fds(3), systemd 252): $LISTEN_PID,
 * $LISTEN_FDS and $LISTEN_FDNAMES, the fds from SD_LISTEN_FDS_START on.
 * The environment is left as it is: the metrics endpoint looks again at a
 * reload (metrics.c), and each part finds its own socket by name, in any
 * order the units list them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>

#include "passed.h"

/**
 * passed_socket() - the socket systemd passed under a name
 * @name: its FileDescriptorName= (systemd.socket(5))
 *
 * Return: its fd; -ENOENT: none of that name (or none at all, or an
 * environment meant for another process: sd_listen_fds() checks
 * $LISTEN_PID against getpid()); or the negative errno of a $LISTEN_FDS or
 * $LISTEN_FDNAMES that cannot be read (-EINVAL: as many names as fds they
 * are not), which a caller must not take for "none passed": the path would
 * be bound anew over systemd's socket.
 */
int passed_socket(const char *name)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(0, &names), fd = -ENOENT, i;

	for (i = 0; i < n; i++) {
		if (fd < 0 && names && !strcmp(names[i], name))
			fd = SD_LISTEN_FDS_START + i;
		if (names)
			free(names[i]);
	}
	free(names);
	return n < 0 ? n : fd;
}

/**
 * passed_control_socket() - is a passed socket one hbmguardd can serve on
 * @fd: the socket passed as "control"
 * @path: ControlSocket= of the configuration
 *
 * The protocol (ctl.h) is SOCK_SEQPACKET on a listening AF_UNIX socket;
 * anything else (ListenStream= by mistake, Accept=yes) would be served as
 * garbage or not at all.
 *
 * Return: 0: a listening AF_UNIX SOCK_SEQPACKET socket bound to @path;
 * 1: such a socket, bound elsewhere (the caller says so, and serves on it);
 * -EPROTOTYPE: a socket of another kind; or a negative errno of the check.
 */
int passed_control_socket(int fd, const char *path)
{
	int r = sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, NULL, 0);

	if (r <= 0)
		return r < 0 ? r : -EPROTOTYPE;
	r = sd_is_socket_unix(fd, SOCK_SEQPACKET, 1, path, 0);
	if (r < 0)
		return r;
	return !r;
}
