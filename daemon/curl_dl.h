/* SPDX-License-Identifier: GPL-2.0 */
/*
 * libcurl, loaded by the first etcd_new() (a [Cluster] configured), not by
 * the dynamic loader at every start: it brought 20 of the daemon's 41
 * libraries (TLS, Kerberos, LDAP, SSH, RTMP), which a daemon without a
 * cluster has no use for in its address space, and a good part of its
 * start (hbmguardd --version natively 10-12 ms with it, 8 without; 0.3 s
 * with it in a TCG guest).  Its functions are
 * called as sym_curl_*(), each typed from <curl/curl.h> as it is built
 * against (bookworm's libcurl4-openssl-dev, curl 7.88).
 */
#ifndef HBM_CURL_DL_H
#define HBM_CURL_DL_H

#include <stddef.h>
#include <curl/curl.h>

#define HBM_CURL_FUNCTIONS(X)						\
	X(curl_global_init) X(curl_easy_init) X(curl_easy_cleanup)	\
	X(curl_easy_setopt) X(curl_easy_getinfo) X(curl_easy_strerror)	\
	X(curl_multi_init) X(curl_multi_cleanup) X(curl_multi_setopt)	\
	X(curl_multi_add_handle) X(curl_multi_remove_handle)		\
	X(curl_multi_assign) X(curl_multi_info_read)			\
	X(curl_multi_socket_action) X(curl_slist_append)		\
	X(curl_slist_free_all)

#define HBM_CURL_DECLARE(f) extern __typeof__(f) *sym_##f;
HBM_CURL_FUNCTIONS(HBM_CURL_DECLARE)
#undef HBM_CURL_DECLARE

int hbm_curl_load(char *err, size_t errlen);

#endif
