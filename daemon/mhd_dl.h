/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libmicrohttpd, loaded when the metrics endpoint first listens
 * (metrics_listen(): [Metrics] Listen= or systemd's socket), not by the
 * dynamic loader at every start: with the TLS stack it links (GnuTLS,
 * nettle, hogweed, gmp, p11-kit, libtasn1, libidn2, libunistring, libffi)
 * it brought
 * 10 of the daemon's 22 libraries, for an endpoint that is off unless
 * configured and never speaks TLS, and some 20 ms of every start in a TCG
 * guest (hbmguardd --version 58-62 ms with them, 33 without).  Its
 * functions are called as sym_MHD_*(), each typed from <microhttpd.h> as
 * it is built against (bookworm's libmicrohttpd-dev 0.9.75).
 */
#ifndef HBM_MHD_DL_H
#define HBM_MHD_DL_H

#include <stddef.h>
#include <sys/socket.h>
#include <microhttpd.h>

#define HBM_MHD_FUNCTIONS(X)						\
	X(MHD_start_daemon) X(MHD_stop_daemon) X(MHD_run)		\
	X(MHD_get_timeout) X(MHD_get_daemon_info)			\
	X(MHD_get_connection_info) X(MHD_lookup_connection_value)	\
	X(MHD_create_response_from_buffer) X(MHD_add_response_header)	\
	X(MHD_queue_response) X(MHD_destroy_response)

#define HBM_MHD_DECLARE(f) extern __typeof__(f) *sym_##f;
HBM_MHD_FUNCTIONS(HBM_MHD_DECLARE)
#undef HBM_MHD_DECLARE

int hbm_mhd_load(char *err, size_t errlen);

#endif
