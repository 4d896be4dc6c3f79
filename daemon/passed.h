/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Sockets systemd passes to hbmguardd (socket activation): found by the
 * FileDescriptorName= of their .socket unit, "control" or "metrics".
 */
#ifndef HBM_PASSED_H
#define HBM_PASSED_H

int passed_socket(const char *name);
int passed_control_socket(int fd, const char *path);

#endif /* HBM_PASSED_H */
