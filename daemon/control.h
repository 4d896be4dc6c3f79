/* SPDX-License-Identifier: GPL-2.0 */
/* hbmguardd's control socket (control.c): hbmctl and the training ranks. */
#ifndef HBM_CONTROL_H
#define HBM_CONTROL_H

struct daemon;
struct client;

int control_setup(struct daemon *d);
void control_close(struct daemon *d);
void control_close_client(struct client *c);

#endif /* HBM_CONTROL_H */
