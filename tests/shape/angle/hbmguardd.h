/* SPDX-License-Identifier: GPL-2.0 */
/* The shape check's fixture: one header for two files, as hbmguardd.h was. */
void control_setup(void);
void daemon_apply(void);
