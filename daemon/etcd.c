// SPDX-License-Identifier: GPL-2.0
/*
 * etcd v3 through its JSON gateway (etcd.h), on libcurl's multi interface
 * (curl 7.88, bookworm's libcurl4-openssl-dev; loaded by the first
 * etcd_new(), curl_dl.h) driven by sd-event: curl
 * says which sockets to watch (CURLMOPT_SOCKETFUNCTION) and when to wake
 * it (CURLMOPT_TIMERFUNCTION), each mapped to an io or time source;
 * events go back through curl_multi_socket_action().  What curl's write
 * callback receives is only buffered: a callback of ours may start or
 * end requests, which curl forbids from inside its own callbacks, so the
 * lines are handed on once curl_multi_socket_action() has returned.
 *
 * Watches and the lease are etcd_watch() and etcd_lease().  A request
 * goes to the endpoint in use; one that fails to connect or
 * times out moves to the next endpoint for whatever comes after.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <curl/curl.h>

#include "ctl.h"
#include "curl_dl.h"
#include "etcd.h"
#include "ratelimit.h"

#define CALL_TIMEOUT_MS		5000
#define CONNECT_TIMEOUT_MS	3000
#define REPLY_MAX		(16 << 20)	/* one message: a snapshot of many keys */
#define RANGE_PAGE		1000	/* keys a page: well under REPLY_MAX at our keys' size */
#define SNAPSHOT_MAX		262144	/* keys a read: past it, refused (a writer filling etcd) */
#define SNAPSHOT_BYTES		(64 << 20)	/* their keys' and values' bytes, likewise */
#define READ_COMPACTED_MAX	3	/* reads begun again, compacted past mid-way */
#define CHECK_FAILED_MAX	3	/* resume checks failed in a row before a read */
#define HELD_MAX		65536	/* watch responses held for a read */
#define HELD_COST		(KEPT_MAX / 2)	/* and what they cost, parse_cost() */
#define GRPC_OUT_OF_RANGE	11	/* codes.OutOfRange (grpc's codes/codes.go): "code" */
#define BACKOFF_MIN_US		250000
#define BACKOFF_MAX_US		5000000

/*
 * All the link keeps between turns of the loop, its requests and watches
 * together: the replies' buffers, the events held for a read or a check
 * (what json-c made of them: parse_cost()), the read's keys.  Each is
 * bounded alone, but cluster.c watches every incident's acknowledgements,
 * and a hostile server, or peers filling those prefixes, had each watch
 * take its own bounds: past the unit's MemoryMax=1G at a few watches, the
 * daemon killed, and again after each restart.  What would pass KEPT_MAX
 * fails its request (ENOBUFS) and its watch is read again after the
 * backoff.  KEPT_MAX, one message's parse (PARSE_COST_MAX) and the
 * daemon's own (57 MiB at 10^6 pages, make bench) stay under MemoryMax.
 * A reply's buffer counts once past SMALL_REPLY: the lease's keep-alive and
 * a txn always have room, whatever the watches hold (a lease lost for want
 * of it would end every job of the node's across the cluster).
 */
#define KEPT_MAX		((size_t)256 << 20)
#define SMALL_REPLY		((size_t)64 << 10)

struct etcd_req {
	struct etcd *e;
	struct etcd_req *next, *prev;
	CURL *easy;
	struct curl_slist *headers;
	char *buf;
	size_t len, cap;
	bool stream, too_big, no_room, dead;
	/* streams: each line's message and its cost (parse_cost()); false ends it */
	bool (*msg)(void *ctx, struct json_object *msg, size_t cost);
	etcd_reply_fn done;
	void *ctx;
	char error[CURL_ERROR_SIZE];
};

struct etcd {
	sd_event *loop;
	CURLM *multi;
	sd_event_source *timer;		/* curl's */
	struct etcd_req *reqs;
	int dispatching;
	char endpoints[HBM_CLUSTER_MAX_ENDPOINTS][HBM_CLUSTER_URL_LEN];
	size_t nr_endpoints, cur;
	char cert[PATH_MAX], key[PATH_MAX], ca[PATH_MAX];
	struct etcd_watch *watches;
	struct etcd_watch *gone;	/* unwatched while dispatching: freed by reap() */
	size_t kept;			/* KEPT_MAX */
	struct hbm_ratelimit full;	/* its refusals said */
	/* the lease */
	void (*on_lease)(void *ctx, int64_t id);
	void *lease_ctx;
	uint32_t ttl;
	int64_t lease;
	uint64_t lease_ok;		/* when it was last kept alive */
	struct etcd_req *lreq;
	sd_event_source *ltimer;
};

static uint64_t now_us(struct etcd *e)
{
	uint64_t t = 0;

	sd_event_now(e->loop, CLOCK_MONOTONIC, &t);
	return t;
}

const char *etcd_endpoint(const struct etcd *e)
{
	return e->endpoints[e->cur];
}

/*
 * @bytes more kept, or false past KEPT_MAX: said once a minute at most, as
 * often as the server can make the watches fail otherwise.
 */
static bool keep(struct etcd *e, size_t bytes)
{
	uint64_t missed;

	if (bytes <= KEPT_MAX - e->kept) {
		e->kept += bytes;
		return true;
	}
	if (hbm_ratelimit(&e->full, 60000000, 1, now_us(e), &missed))
		fprintf(stderr, "<4>hbmguardd: etcd %s: its replies kept would pass %zu MiB, the"
			" link's bound: refused, read again later (%" PRIu64 " more since)\n",
			e->endpoints[e->cur], KEPT_MAX >> 20, missed);
	return false;
}

static void unkeep(struct etcd *e, size_t bytes)
{
	e->kept -= bytes;
}

/* What a reply's buffer of @cap bytes counts in the link's bound. */
static size_t reply_kept(size_t cap)
{
	return cap > SMALL_REPLY ? cap : 0;
}

static void req_free(struct etcd_req *r)
{
	struct etcd *e = r->e;

	if (r->easy) {
		sym_curl_multi_remove_handle(e->multi, r->easy);
		sym_curl_easy_cleanup(r->easy);
		r->easy = NULL;
	}
	if (e->dispatching) {	/* still on the stack: freed after */
		r->dead = true;
		return;
	}
	if (r->prev)
		r->prev->next = r->next;
	else
		e->reqs = r->next;
	if (r->next)
		r->next->prev = r->prev;
	sym_curl_slist_free_all(r->headers);
	unkeep(e, reply_kept(r->cap));
	free(r->buf);
	free(r);
}

static void watches_reap(struct etcd *e);

/* Requests ended and watches unwatched while their callbacks ran. */
static void reap(struct etcd *e)
{
	struct etcd_req *r = e->reqs, *next;

	if (e->dispatching)
		return;
	for (; r; r = next) {
		next = r->next;
		if (r->dead)
			req_free(r);
	}
	watches_reap(e);
}

void etcd_cancel(struct etcd_req *r)
{
	if (r && !r->dead)
		req_free(r);
}

static size_t on_data(char *data, size_t size, size_t n, void *arg)
{
	struct etcd_req *r = arg;
	size_t len = size * n;

	if (r->len + len > REPLY_MAX) {
		r->too_big = true;
		return 0;	/* curl ends the transfer: CURLE_WRITE_ERROR */
	}
	if (r->len + len + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		char *buf;

		while (cap < r->len + len + 1)
			cap *= 2;
		if (!keep(r->e, reply_kept(cap) - reply_kept(r->cap))) {
			r->no_room = true;
			return 0;
		}
		buf = realloc(r->buf, cap);
		if (!buf) {
			unkeep(r->e, reply_kept(cap) - reply_kept(r->cap));
			return 0;
		}
		r->buf = buf;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, data, len);
	r->len += len;
	r->buf[r->len] = 0;
	return len;
}

/*
 * What json-c would allocate for @text, roughly and from above: an object
 * (its hash table of 16 entries) some 800 bytes, an array (32 slots) some
 * 400, each further value some 96 (json-c 0.16, Debian bookworm's: a line
 * of "1.0," took 26 times its length, helper-186).  A line of "{}," costs
 * 290 times its length: 16 MiB of it, REPLY_MAX, made 4 GiB of objects
 * (helper-184).  A reply of etcd's costs some 15 times its length at most
 * (watch events of small values: two objects and a dozen values in 200
 * bytes), 236 MiB at REPLY_MAX: past PARSE_COST_MAX, a reply is refused
 * unparsed.  The bound is a message's; what is kept after it, KEPT_MAX.
 */
#define PARSE_COST_MAX	((size_t)256 << 20)

static size_t parse_cost(const char *text, size_t len)
{
	size_t cost = len, i;
	bool in_string = false;

	for (i = 0; i < len; i++) {
		if (in_string) {
			if (text[i] == '\\')
				i++;
			else if (text[i] == '"')
				in_string = false;
			continue;
		}
		switch (text[i]) {
		case '"':
			in_string = true;
			break;
		case '{':
			cost += 800;
			break;
		case '[':
			cost += 400;
			break;
		case ',':
		case ':':
			cost += 96;
			break;
		}
	}
	return cost;
}

/*
 * @text's JSON object, or NULL: not one, or its *@cost past PARSE_COST_MAX
 * (said here, of @e's endpoint).
 */
static struct json_object *parse(struct etcd *e, const char *text, size_t len, size_t *cost)
{
	struct json_tokener *tok;
	struct json_object *o;

	*cost = parse_cost(text, len);
	if (*cost > PARSE_COST_MAX)
		fprintf(stderr, "<4>hbmguardd: etcd %s: a message of %zu bytes past %zu MiB of "
			"JSON objects: refused\n", e->endpoints[e->cur], len, PARSE_COST_MAX >> 20);
	tok = *cost > PARSE_COST_MAX ? NULL : json_tokener_new_ex(64);
	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, len);
	if (o && !json_object_is_type(o, json_type_object)) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/*
 * A stream's whole lines, each one message; what is left of the last moved
 * to the front once, after them.  Moved after each line, a burst of short
 * lines cost the buffer's length each: 1 MiB of newlines from a hostile
 * endpoint held the loop, the kernel's events behind it, for seconds.
 */
static void dispatch_lines(struct etcd_req *r)
{
	size_t at = 0;
	char *nl;

	while (!r->dead && at < r->len && (nl = memchr(r->buf + at, '\n', r->len - at))) {
		size_t end = nl - r->buf, cost = 0;
		struct json_object *o = end > at ? parse(r->e, r->buf + at, end - at, &cost) :
				       NULL;
		bool more;

		at = end + 1;
		if (cost > PARSE_COST_MAX) {	/* a message lost: the stream ends, as one too long does */
			if (r->done)
				r->done(r->ctx, -EMSGSIZE, NULL);
			req_free(r);
			break;
		}
		if (!o)
			continue;	/* blank or not an object: ends nothing */
		more = r->msg(r->ctx, o, cost);
		json_object_put(o);
		if (!more)
			req_free(r);
	}
	if (r->dead || !at)
		return;
	memmove(r->buf, r->buf + at, r->len - at);
	r->len -= at;
	r->buf[r->len] = 0;
	/*
	 * A stream's buffer grown for a long line gives its room back: kept,
	 * sixteen watches' lines of 12 MiB, each delivered, held the link's
	 * bound for good, and no read of any watch found room (helper-189).
	 */
	if (r->cap > SMALL_REPLY && r->len < SMALL_REPLY) {
		char *buf = realloc(r->buf, SMALL_REPLY);

		if (buf) {
			unkeep(r->e, reply_kept(r->cap));
			r->buf = buf;
			r->cap = SMALL_REPLY;
		}
	}
}

static void finish(struct etcd *e, struct etcd_req *r, CURLcode res)
{
	struct json_object *o = NULL;
	long code = 0;
	int err = 0;

	sym_curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
	if (res != CURLE_OK) {
		if (r->too_big)
			snprintf(r->error, sizeof(r->error), "a reply over %d bytes", REPLY_MAX);
		if (!r->no_room)	/* keep() said it */
			fprintf(stderr, "<4>hbmguardd: etcd %s: %s\n", e->endpoints[e->cur],
				r->error[0] ? r->error : sym_curl_easy_strerror(res));
		if (res == CURLE_COULDNT_CONNECT || res == CURLE_OPERATION_TIMEDOUT ||
		    res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_SSL_CONNECT_ERROR ||
		    res == CURLE_RECV_ERROR || res == CURLE_SEND_ERROR || res == CURLE_GOT_NOTHING)
			e->cur = (e->cur + 1) % e->nr_endpoints;
		err = r->too_big ? -EMSGSIZE : r->no_room ? -ENOBUFS : -EHOSTUNREACH;
	} else {
		size_t cost = 0;

		o = r->stream ? NULL : parse(e, r->buf ? r->buf : "", r->len, &cost);
		if (cost > PARSE_COST_MAX)
			err = -EMSGSIZE;
		else if (code < 200 || code > 299)
			err = -EREMOTEIO;	/* etcd's error, in @o when it said one */
		else if (!r->stream && !o)
			err = -EPROTO;
	}
	if (r->done)
		r->done(r->ctx, err, o);
	json_object_put(o);
}

/* After curl ran: the lines streams received, then the transfers that ended. */
static void after_curl(struct etcd *e)
{
	struct etcd_req *r;
	CURLMsg *m;
	int left;

	e->dispatching++;
	for (r = e->reqs; r; r = r->next)
		if (r->stream && !r->dead)
			dispatch_lines(r);
	while ((m = sym_curl_multi_info_read(e->multi, &left))) {
		if (m->msg != CURLMSG_DONE)
			continue;
		sym_curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
		if (r->dead)
			continue;
		if (r->stream)
			dispatch_lines(r);
		if (!r->dead) {
			CURLcode res = m->data.result;

			finish(e, r, res);
			req_free(r);
		}
	}
	e->dispatching--;
	reap(e);
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *arg)
{
	struct etcd *e = arg;
	int running, flags = (revents & EPOLLIN ? CURL_CSELECT_IN : 0) |
			     (revents & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
			     (revents & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);

	(void)s;
	sym_curl_multi_socket_action(e->multi, fd, flags, &running);
	after_curl(e);
	return 0;
}

static int on_curl_timer(sd_event_source *s, uint64_t usec, void *arg)
{
	struct etcd *e = arg;
	int running;

	(void)s;
	(void)usec;
	sym_curl_multi_socket_action(e->multi, CURL_SOCKET_TIMEOUT, 0, &running);
	after_curl(e);
	return 0;
}

/* CURLMOPT_SOCKETFUNCTION: a socket to watch, differently, or no longer. */
static int on_socket(CURL *easy, curl_socket_t fd, int what, void *arg, void *sockp)
{
	struct etcd *e = arg;
	sd_event_source *src = sockp;
	uint32_t events = (what & CURL_POLL_IN ? EPOLLIN : 0) |
			  (what & CURL_POLL_OUT ? EPOLLOUT : 0);

	(void)easy;
	if (what == CURL_POLL_REMOVE) {
		if (src)
			sd_event_source_disable_unref(src);
		sym_curl_multi_assign(e->multi, fd, NULL);
		return 0;
	}
	if (src)
		return sd_event_source_set_io_events(src, events) < 0 ? -1 : 0;
	if (sd_event_add_io(e->loop, &src, fd, events, on_io, e) < 0)
		return -1;
	sym_curl_multi_assign(e->multi, fd, src);
	return 0;
}

/* CURLMOPT_TIMERFUNCTION: wake curl in @ms, or never (-1). */
static int on_timer_change(CURLM *multi, long ms, void *arg)
{
	struct etcd *e = arg;
	uint64_t when = now_us(e) + (ms > 0 ? (uint64_t)ms * 1000 : 0);

	(void)multi;
	if (ms < 0 && !e->timer)
		return 0;
	if (ms < 0)
		return sd_event_source_set_enabled(e->timer, SD_EVENT_OFF) < 0 ? -1 : 0;
	if (!e->timer)
		/* accuracy 1 us: sd-event would otherwise coalesce curl's
		 * "now" with other wake-ups up to a millisecond later, on each
		 * hop of a request */
		return sd_event_add_time(e->loop, &e->timer, CLOCK_MONOTONIC, when, 1,
					 on_curl_timer, e) < 0 ? -1 : 0;
	if (sd_event_source_set_time(e->timer, when) < 0 ||
	    sd_event_source_set_enabled(e->timer, SD_EVENT_ONESHOT) < 0)
		return -1;
	return 0;
}

static struct etcd_req *request(struct etcd *e, const char *path, const char *body, bool stream,
				etcd_reply_fn done, void *ctx)
{
	struct etcd_req *r = calloc(1, sizeof(*r));
	char url[HBM_CLUSTER_URL_LEN + 64];

	if (!r)
		return NULL;
	r->e = e;
	r->stream = stream;
	r->done = done;
	r->ctx = ctx;
	r->easy = sym_curl_easy_init();
	r->headers = sym_curl_slist_append(NULL, "Content-Type: application/json");
	if (!r->easy || !r->headers)
		goto fail;
	snprintf(url, sizeof(url), "%s%s", e->endpoints[e->cur], path);
	sym_curl_easy_setopt(r->easy, CURLOPT_URL, url);
	sym_curl_easy_setopt(r->easy, CURLOPT_PROTOCOLS_STR, "http,https");
	sym_curl_easy_setopt(r->easy, CURLOPT_NOSIGNAL, 1L);
	sym_curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
	sym_curl_easy_setopt(r->easy, CURLOPT_COPYPOSTFIELDS, body);
	sym_curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, on_data);
	sym_curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
	sym_curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
	sym_curl_easy_setopt(r->easy, CURLOPT_ERRORBUFFER, r->error);
	sym_curl_easy_setopt(r->easy, CURLOPT_CONNECTTIMEOUT_MS, (long)CONNECT_TIMEOUT_MS);
	/* a peer gone without a word: a stream learns it in about 11 s */
	sym_curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPALIVE, 1L);
	sym_curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPIDLE, 5L);
	sym_curl_easy_setopt(r->easy, CURLOPT_TCP_KEEPINTVL, 2L);
	if (!stream)
		sym_curl_easy_setopt(r->easy, CURLOPT_TIMEOUT_MS, (long)CALL_TIMEOUT_MS);
	if (e->cert[0]) {
		sym_curl_easy_setopt(r->easy, CURLOPT_SSLCERT, e->cert);
		sym_curl_easy_setopt(r->easy, CURLOPT_SSLKEY, e->key);
	}
	if (e->ca[0])
		sym_curl_easy_setopt(r->easy, CURLOPT_CAINFO, e->ca);
	if (sym_curl_multi_add_handle(e->multi, r->easy) != CURLM_OK)
		goto fail;
	r->next = e->reqs;
	if (e->reqs)
		e->reqs->prev = r;
	e->reqs = r;
	return r;
fail:
	sym_curl_easy_cleanup(r->easy);
	sym_curl_slist_free_all(r->headers);
	free(r);
	return NULL;
}

/**
 * etcd_call() - a unary request: @body to @path, @done with the answer
 * @e: the client
 * @path: one of etcd_msg.h's paths
 * @body: the request's JSON
 * @done: called once, from the loop, unless etcd_cancel() came first
 * @ctx: its argument
 *
 * Return: the request, NULL without memory (@done is not called).
 */
struct etcd_req *etcd_call(struct etcd *e, const char *path, const char *body,
			   etcd_reply_fn done, void *ctx)
{
	return request(e, path, body, false, done, ctx);
}

/* ---- watches ----
 *
 * A watch's callbacks may unwatch it (etcd_unwatch()), or another, from any
 * of them: the frames that called them still use it once they return (the
 * rest of a response's events, the read's fingerprint, the next watch of a
 * list).  Every callback runs while curl's news is dispatched (after_curl()),
 * so a watch unwatched then is only gone: its requests and its retry are
 * cancelled at once, nothing more is told or asked for it, and it is freed
 * with the requests ended meanwhile (reap()), once the dispatch is over.
 */

struct etcd_watch {
	struct etcd *e;
	struct etcd_watch *next;
	char *prefix;
	const struct etcd_watch_ops *ops;
	void *ctx;
	struct etcd_req *req;
	int64_t next_rev;		/* 0: watch from now, then read the prefix */
	struct etcd_fingerprint fp;	/* the prefix at next_rev - 1, as the watch saw it */
	/*
	 * A watch from now: its events held until the read that follows it;
	 * a resumed one's, until its check answers.
	 */
	struct etcd_req *read, *check;
	bool reading;
	struct json_object **held;
	size_t nr_held, held_cost;	/* held_cost: theirs, kept */
	int64_t read_rev;		/* events up to it are in the read */
	/* the read's pages, all of its first page's revision, told once all are in */
	struct etcd_kv *kvs;
	size_t nr_kvs, cap_kvs, kv_bytes;
	size_t kvs_kept;		/* kv_bytes and the keys' structs, kept */
	int64_t snap_rev;
	int64_t snap_count;		/* the keys at snap_rev, its first page's count */
	char *after;			/* the page asked: past this key (NULL: the first) */
	int64_t page_limit;		/* 0: RANGE_PAGE; halved while a page is too big */
	unsigned int compacted;		/* times begun again, compacted past */
	unsigned int check_failed;	/* resume checks failed in a row, not told apart */
	bool up;
	bool restarted;			/* begun again from now since it was last up */
	uint64_t backoff;
	sd_event_source *retry;
	sd_event_source *reread;	/* etcd_watch_reread() asked */
	bool gone;			/* unwatched while dispatching: on etcd's gone */
	struct etcd_watch *gone_next;
};

static void watch_begin(struct etcd_watch *w);

/* The read's pages dropped, the events held for it kept. */
static void read_pages_drop(struct etcd_watch *w)
{
	for (size_t i = 0; i < w->nr_kvs; i++)
		etcd_kv_clear(&w->kvs[i]);
	free(w->kvs);
	w->kvs = NULL;
	w->nr_kvs = w->cap_kvs = w->kv_bytes = 0;
	unkeep(w->e, w->kvs_kept);
	w->kvs_kept = 0;
	w->snap_rev = 0;
	free(w->after);
	w->after = NULL;
}

/* No read or check in flight, nothing held for them. */
static void read_end(struct etcd_watch *w)
{
	etcd_cancel(w->read);
	w->read = NULL;
	etcd_cancel(w->check);
	w->check = NULL;
	for (size_t i = 0; i < w->nr_held; i++)
		json_object_put(w->held[i]);
	free(w->held);
	w->held = NULL;
	w->nr_held = 0;
	unkeep(w->e, w->held_cost);
	w->held_cost = 0;
	read_pages_drop(w);
	w->page_limit = 0;
	w->compacted = 0;
}

static void link_set(struct etcd_watch *w, bool up, const char *why)
{
	if (w->up == up || w->gone)
		return;
	w->up = up;
	if (w->ops->link)
		w->ops->link(w->ctx, up, why);
}

static int on_watch_retry(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)s;
	(void)usec;
	watch_begin(arg);
	return 0;
}

/* Begun again after a pause that doubles up to BACKOFF_MAX_US, until one is up. */
static void watch_later(struct etcd_watch *w)
{
	struct etcd *e = w->e;

	w->backoff = !w->backoff ? BACKOFF_MIN_US : w->backoff >= BACKOFF_MAX_US / 2 ?
		     BACKOFF_MAX_US : 2 * w->backoff;
	sd_event_source_disable_unref(w->retry);
	w->retry = NULL;
	if (sd_event_add_time(e->loop, &w->retry, CLOCK_MONOTONIC, now_us(e) + w->backoff, 1000,
			      on_watch_retry, w) < 0)
		fprintf(stderr, "<3>hbmguardd: etcd: cannot arm the watch's retry\n");
}

/* Lost: again later. */
static void watch_retry(struct etcd_watch *w, const char *why)
{
	if (w->gone)
		return;
	etcd_cancel(w->req);
	w->req = NULL;
	read_end(w);
	link_set(w, false, why);
	if (!w->gone)
		watch_later(w);
}

static bool deliver(struct etcd_watch *w, struct json_object *res);

/* What was seen is of no use to resume from: watched from now, read again. */
static void restart_from_now(struct etcd_watch *w)
{
	w->next_rev = 0;
	etcd_cancel(w->req);
	w->req = NULL;
	read_end(w);
	/*
	 * At once, unless begun again so already since the watch was last up:
	 * an endpoint that keeps saying so (compacted, behind) would have the
	 * prefix read at its round trip's pace.
	 */
	if (w->restarted) {
		watch_later(w);
		fprintf(stderr, "<4>hbmguardd: etcd: %s read again before the last read of it was in: again in %" PRIu64 " ms\n",
			w->prefix, w->backoff / 1000);
		return;
	}
	w->restarted = true;
	watch_begin(w);
}

static int on_reread(sd_event_source *s, uint64_t usec, void *arg)
{
	struct etcd_watch *w = arg;

	(void)s;
	(void)usec;
	w->reread = sd_event_source_disable_unref(w->reread);
	if (w->reading)
		return 0;		/* the read under way has it all */
	if (!w->req) {
		w->next_rev = 0;	/* begun again later: from now, read */
		return 0;
	}
	restart_from_now(w);
	return 0;
}

/**
 * etcd_watch_reread() - a watch's prefix read again, its snapshot told again
 * @w: the watch
 *
 * For a reader that refused keys it needs now (cluster_proto.c: a job's,
 * past its limit of other nodes' jobs, before the job was its own): the
 * snapshot, then the events past it, as after a compaction.  Done at the
 * next turn of the loop, not inside the callback that asks.
 *
 * Context: the loop, or any of the client's callbacks.
 */
void etcd_watch_reread(struct etcd_watch *w)
{
	if (w->gone || w->reread)
		return;
	if (sd_event_add_time(w->e->loop, &w->reread, CLOCK_MONOTONIC, 0, 0, on_reread, w) < 0)
		fprintf(stderr, "<3>hbmguardd: etcd: cannot arm the read again of %s\n",
			w->prefix);
}

static void on_range(void *arg, int err, struct json_object *reply);

/* The events held for a read or a check, delivered; watching. */
static void release_held(struct etcd_watch *w)
{
	for (size_t i = 0; i < w->nr_held && w->req; i++)
		deliver(w, w->held[i]);
	read_end(w);
	if (w->req) {
		w->backoff = 0;
		w->restarted = false;
		link_set(w, true, NULL);
	}
}

/*
 * Room for a server's words in a line of the journal: escaped (a hostile
 * server's newline would forge lines, hbm_ctl_escape()) and cut.
 */
#define SAID_LEN	256

/* The string field @name of @o, as the journal may show it, or NULL. */
static const char *said(char out[SAID_LEN], struct json_object *o, const char *name)
{
	struct json_object *f;

	if (!o || !json_object_object_get_ex(o, name, &f) ||
	    !json_object_is_type(f, json_type_string))
		return NULL;
	return hbm_ctl_escape(out, SAID_LEN, json_object_get_string(f), false);
}

/* etcd's words for a failed request (the gateway's {"message": ...}), or errno's. */
static const char *failure(int err, struct json_object *reply, char out[SAID_LEN])
{
	const char *m = said(out, reply, "message");

	return m ? m : err ? strerror(-err) : "a bad reply";
}

/*
 * The check's answer.  Another history, or a revision compacted past or
 * ahead (code 11: ErrGRPCCompacted, ErrGRPCFutureRev): read again.  A
 * failure that says nothing of the history (no leader, a leader changed,
 * a timeout: what a reconnect often meets) keeps the watch's revision and
 * is tried again after the backoff, a read only after CHECK_FAILED_MAX.
 */
static void on_check(void *arg, int err, struct json_object *reply)
{
	struct etcd_watch *w = arg;
	enum etcd_fp_verdict v = ETCD_FP_BAD_REPLY;
	int64_t code = 0, count = 0;
	char why[SAID_LEN];

	w->check = NULL;
	if (err == -EHOSTUNREACH)
		return watch_retry(w, "unreachable");
	if (!err)
		v = etcd_fp_judge(&w->fp, reply, &count);
	if (v == ETCD_FP_SAME) {
		w->check_failed = 0;
		return release_held(w);
	}
	if (err && reply && !etcd_int64(reply, "code", &code) && code == GRPC_OUT_OF_RANGE) {
		fprintf(stderr, "<4>hbmguardd: etcd: revision %" PRId64 ", which the watch had reached,"
			" compacted past or ahead (%s): reading %s again\n", w->next_rev - 1,
			failure(err, reply, why), w->prefix);
	} else if (err || v == ETCD_FP_BAD_REPLY) {
		fprintf(stderr, "<4>hbmguardd: etcd: the check of a resumed watch of %s failed (%s)%s\n",
			w->prefix, failure(err, reply, why),
			w->check_failed + 1 < CHECK_FAILED_MAX ? "" : ": reading it again");
		if (++w->check_failed < CHECK_FAILED_MAX)
			return watch_retry(w, "the resume check failed");
	} else if (v == ETCD_FP_COUNT) {
		fprintf(stderr, "<4>hbmguardd: etcd: at revision %" PRId64 ", not the history the"
			" watch saw (its key count: %" PRId64 ", not %" PRId64 "): reading %s again\n",
			w->next_rev - 1, count, w->fp.count, w->prefix);
	} else {
		fprintf(stderr, "<4>hbmguardd: etcd: at revision %" PRId64 ", not the history the"
			" watch saw (its last key written): reading %s again\n", w->next_rev - 1,
			w->prefix);
	}
	w->check_failed = 0;
	restart_from_now(w);
}

/*
 * A resumed watch: is etcd's history up to what it delivered (L, next_rev
 * - 1) the one it watched?  A store restored to a revision before L and
 * written past L since is not, and its watch from L + 1 would never bring
 * what differs at or before L.  The watch's fingerprint at L (etcd_msg.h)
 * is read back at L in one txn, its events held until the answer: the
 * same, they are delivered; else, or compacted past L, or any error, the
 * prefix is read again (restart_from_now()).  What it cannot see: a
 * history that differs up to L only where neither the key count nor the
 * mark shows it: keys other than the mark updated, or created and deleted
 * as many, after the revision the store went back to (when the mark is
 * older than it).  A range sorted by mod_revision would see updates too,
 * but etcd reads every key of the prefix to sort them (Range() in
 * etcdserver/apply.go, v3.4.23).
 */
static bool resume_check(struct etcd_watch *w)
{
	char *body = etcd_fp_check_body(&w->fp, w->prefix, w->next_rev - 1);

	w->check = body ? etcd_call(w->e, ETCD_PATH_TXN, body, on_check, w) : NULL;
	free(body);
	return w->check;
}

/*
 * The read's next page, of the first page's revision, from past @after
 * (NULL: the first).  A revision compacted meanwhile fails the page
 * (ErrCompacted, rangeKeys() in mvcc/kvstore_txn.go, v3.4.23): see
 * read_again().
 */
static bool read_page(struct etcd_watch *w, const char *after)
{
	char *from = after ? strdup(after) : NULL, *body;

	free(w->after);
	w->after = from;
	if (after && !from)
		return false;
	body = etcd_range_body(w->prefix, from, w->snap_rev, w->page_limit ?: RANGE_PAGE);
	w->read = body ? etcd_call(w->e, ETCD_PATH_RANGE, body, on_range, w) : NULL;
	free(body);
	return w->read;
}

/*
 * A page's keys, kept.  Return: 0, -E2BIG past SNAPSHOT_MAX or
 * SNAPSHOT_BYTES, -ENOBUFS past KEPT_MAX, -ENOMEM.
 */
static int read_keep(struct etcd_watch *w, struct json_object *kvs, size_t n)
{
	if (w->nr_kvs + n > SNAPSHOT_MAX)
		return -E2BIG;
	if (w->nr_kvs + n > w->cap_kvs) {
		size_t cap = w->cap_kvs ? 2 * w->cap_kvs : RANGE_PAGE;
		struct etcd_kv *kv;

		while (cap < w->nr_kvs + n)
			cap *= 2;
		kv = reallocarray(w->kvs, cap, sizeof(*kv));
		if (!kv)
			return -ENOMEM;
		w->kvs = kv;
		w->cap_kvs = cap;
	}
	for (size_t i = 0; i < n; i++) {
		struct etcd_kv *kv = &w->kvs[w->nr_kvs];
		size_t bytes;

		if (etcd_kv_parse(json_object_array_get_idx(kvs, i), kv))
			continue;
		bytes = kv->key_len + kv->value_len;
		if (!keep(w->e, bytes + sizeof(*kv))) {
			etcd_kv_clear(kv);
			return -ENOBUFS;
		}
		w->kvs_kept += bytes + sizeof(*kv);
		w->nr_kvs++;
		w->kv_bytes += bytes;
		if (w->kv_bytes > SNAPSHOT_BYTES)
			return -E2BIG;
	}
	return 0;
}

/* Why a read's page failed, for watch_retry(). */
static const char *page_failed(int err)
{
	return err == -EHOSTUNREACH ? "unreachable" : err == -ENOBUFS ? "no room for the read" :
	       "a bad range reply";
}

/*
 * A page's error the read gets past: a page too big for REPLY_MAX asked
 * again for half as many keys; the read's revision compacted (the gateway's
 * {"code": 11}: ErrGRPCCompacted, codes.OutOfRange, in
 * etcdserver/api/v3rpc/rpctypes/error.go, v3.4.23) begun again from now,
 * the watch and its held events kept, a few times.  True if asked again.
 */
static bool read_again(struct etcd_watch *w, int err, struct json_object *reply)
{
	int64_t code = 0, limit = w->page_limit ?: RANGE_PAGE;

	if (err == -EMSGSIZE && limit > 1) {
		w->page_limit = limit / 2;
		return read_page(w, w->after);
	}
	if (err == -EREMOTEIO && reply && !etcd_int64(reply, "code", &code) && code == GRPC_OUT_OF_RANGE &&
	    w->compacted < READ_COMPACTED_MAX) {
		fprintf(stderr, "<4>hbmguardd: etcd: %s compacted past revision %" PRId64
			" mid-read: reading it again\n", w->prefix, w->snap_rev);
		w->compacted++;
		read_pages_drop(w);
		return read_page(w, NULL);
	}
	return false;
}

/*
 * A page of the read.  The snapshot is told only whole: a read cut at
 * RANGE_PAGE keys (a writer's junk sorting first) would hide the keys
 * after it, a node of the job among them.
 */
static void on_range(void *arg, int err, struct json_object *reply)
{
	struct etcd_watch *w = arg;
	struct json_object *kvs = NULL, *more, *last;
	int64_t rev = reply ? etcd_header_revision(reply) : -1;
	size_t n = 0;
	int kept;

	w->read = NULL;
	if (err && read_again(w, err, reply))
		return;
	if (err || rev < 0 || (!w->snap_rev && (etcd_int64(reply, "count", &w->snap_count) ||
						w->snap_count < 0 || w->snap_count > INT32_MAX)))
		return watch_retry(w, page_failed(err));
	if (!w->snap_rev)
		w->snap_rev = rev;	/* of now: the pages after it are of this one */
	if (json_object_object_get_ex(reply, "kvs", &kvs) && json_object_is_type(kvs, json_type_array))
		n = json_object_array_length(kvs);
	kept = read_keep(w, kvs, n);
	if (kept == -E2BIG || kept == -ENOMEM)
		fprintf(stderr, "<3>hbmguardd: etcd: more than %d keys or %d MiB under %s, or no"
			" memory: not read\n", SNAPSHOT_MAX, SNAPSHOT_BYTES >> 20, w->prefix);
	if (kept)
		return watch_retry(w, kept == -ENOBUFS ? page_failed(kept) : "too many keys");
	if (json_object_object_get_ex(reply, "more", &more) && json_object_get_boolean(more)) {
		if (!n || !json_object_object_get_ex(json_object_array_get_idx(kvs, n - 1), "key",
						     &last) ||
		    !json_object_is_type(last, json_type_string))
			return watch_retry(w, "a bad range reply");
		if (!read_page(w, json_object_get_string(last)))
			return watch_retry(w, "out of memory");
		return;
	}
	w->ops->snapshot(w->ctx, w->kvs, w->nr_kvs, w->snap_rev);
	if (w->gone)
		return;
	etcd_fp_read(&w->fp, w->snap_count, w->kvs, w->nr_kvs);
	/* what the watch brought meanwhile, past what the read has */
	w->read_rev = w->snap_rev;
	if (w->next_rev <= w->snap_rev)
		w->next_rev = w->snap_rev + 1;
	w->reading = false;
	release_held(w);
}

/* One WatchResponse (rpc.proto), or the gateway's {"error": ...}. */
static bool on_watch_msg(void *arg, struct json_object *msg, size_t cost)
{
	struct etcd_watch *w = arg;
	struct json_object *res, *f = NULL;
	int64_t compact = 0, rev;
	char why[SAID_LEN];

	if (!json_object_object_get_ex(msg, "result", &res)) {
		/*
		 * The gateway's {"error": {"grpc_code", "http_code", "message",
		 * "http_status", "details"}}: grpc-gateway v1's StreamError
		 * (internal/stream_chunk.proto), which etcd 3.4's gateway runs.
		 */
		json_object_object_get_ex(msg, "error", &f);
		fprintf(stderr, "<4>hbmguardd: etcd: watch of %s failed: %s\n", w->prefix,
			failure(0, f, why));
		watch_retry(w, "the watch failed");
		return false;
	}
	etcd_int64(res, "compact_revision", &compact);
	if (compact <= 0 && json_object_object_get_ex(res, "canceled", &f) &&
	    json_object_get_boolean(f)) {
		/*
		 * Canceled for another cause (permission denied, etcd 3.4's
		 * answer to a watch its auth does not allow): again after the
		 * backoff, not at once in a loop.
		 */
		const char *reason = said(why, res, "cancel_reason");

		fprintf(stderr, "<4>hbmguardd: etcd: watch of %s canceled: %s\n", w->prefix,
			reason ? reason : "no reason given");
		watch_retry(w, "the watch canceled");
		return false;
	}
	if (compact > 0) {
		/* compacted past what was seen: watch from now, read it all again */
		fprintf(stderr, "<4>hbmguardd: etcd: watch from revision %" PRId64
			" canceled (compacted to %" PRId64 "): reading %s again\n",
			w->next_rev, compact, w->prefix);
		restart_from_now(w);
		return false;	/* the old request, ended */
	}
	if (json_object_object_get_ex(res, "created", &f) && json_object_get_boolean(f)) {
		if (w->reading) {
			/* watching from now: the read covers what came before */
			if (!read_page(w, NULL)) {
				watch_retry(w, "out of memory");
				return false;
			}
			return true;
		}
		/*
		 * Resumed, but etcd is now behind what the watch delivered:
		 * its store went back (restored from a snapshot, or another
		 * cluster at the endpoint).  Its next events would come at
		 * revisions the watch starts past, unseen: from now, read again.
		 */
		rev = etcd_header_revision(res);
		if (rev >= 0 && rev < w->next_rev - 1) {
			fprintf(stderr, "<4>hbmguardd: etcd: at revision %" PRId64 ", behind the %" PRId64
				" the watch had reached: reading %s again\n", rev, w->next_rev - 1,
				w->prefix);
			restart_from_now(w);
			return false;	/* the old request, ended */
		}
		if (!resume_check(w)) {
			watch_retry(w, "out of memory");
			return false;
		}
		return true;	/* its header is now, not what the watch has delivered */
	}
	if (w->reading || w->check) {
		/*
		 * Bounded in what they cost too: a response's line may be up
		 * to REPLY_MAX, its objects several times that (a hostile
		 * endpoint's 100 of 4 MB made the daemon 415 MB).
		 */
		bool too_many = w->nr_held >= HELD_MAX || w->held_cost + cost > HELD_COST;
		bool room = !too_many && keep(w->e, cost);
		struct json_object **held = room ?
			reallocarray(w->held, w->nr_held + 1, sizeof(*held)) : NULL;

		if (!held) {
			if (room)
				unkeep(w->e, cost);
			watch_retry(w, too_many ? "too many events during a read or a resume check" :
				    room ? "out of memory" : "no room for the events during a read");
			return false;
		}
		w->held = held;
		w->held[w->nr_held++] = json_object_get(res);
		w->held_cost += cost;
		return true;
	}
	return deliver(w, res);
}

/*
 * Whether an event is a DELETE: else a PUT, proto3's default, which JSON
 * leaves out (mvccpb.Event's EventType, api/mvccpb/kv.proto of etcd
 * 3.4.23), or that a hostile server may send as null or another type.
 */
static bool deleted(struct json_object *ev)
{
	struct json_object *type;

	return json_object_object_get_ex(ev, "type", &type) &&
	       json_object_is_type(type, json_type_string) &&
	       !strcmp(json_object_get_string(type), "DELETE");
}

/*
 * A WatchResponse's events, but those the read already had.  False when
 * the watch is begun again (no memory for one: it resumes from it).
 */
static bool deliver(struct etcd_watch *w, struct json_object *res)
{
	struct json_object *events;
	int64_t rev, last = 0;
	size_t i, n = 0;
	int err;

	if (json_object_object_get_ex(res, "events", &events) &&
	    json_object_is_type(events, json_type_array))
		n = json_object_array_length(events);
	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i), *kv;
		struct etcd_kv k;
		bool told, put = !deleted(ev);

		if (!json_object_object_get_ex(ev, "kv", &kv))
			continue;
		/*
		 * One etcd_kv_parse() refuses (a key with a NUL) is not told,
		 * but it is of the prefix: counted, and the watch is past it
		 * (else a resume would check the count at a revision before it).
		 */
		err = etcd_kv_parse(kv, &k);
		if (err == -ENOMEM) {
			watch_retry(w, "out of memory");
			return false;
		}
		told = !err;
		if ((!told && (etcd_int64(kv, "mod_revision", &k.mod_revision) ||
			       etcd_int64(kv, "version", &k.version))) ||
		    k.mod_revision == INT64_MAX) {
			etcd_kv_clear(&k);
			continue;
		}
		if (k.mod_revision > w->read_rev) {
			if (k.mod_revision >= w->next_rev)
				w->next_rev = k.mod_revision + 1;
			last = k.mod_revision;
			etcd_fp_event(&w->fp, put, &k);
			if (told)
				w->ops->event(w->ctx, put, &k);
		}
		etcd_kv_clear(&k);
		if (w->gone)
			return false;
	}
	rev = etcd_header_revision(res);
	/* a progress notification: nothing up to its revision is left to come */
	if (!n && rev > 0 && rev >= w->next_rev && rev < INT64_MAX)
		w->next_rev = rev + 1;
	if ((last || (!n && rev > 0)) && w->ops->synced)
		w->ops->synced(w->ctx, n ? last : rev);
	return !w->gone;
}

static void on_watch_end(void *arg, int err, struct json_object *reply)
{
	struct etcd_watch *w = arg;

	(void)reply;
	w->req = NULL;
	watch_retry(w, err ? "the watch's connection ended" : "etcd ended the watch");
}

static void watch_begin(struct etcd_watch *w)
{
	char *body;

	sd_event_source_disable_unref(w->retry);
	w->retry = NULL;
	if (w->req || w->gone)
		return;
	/*
	 * Without a revision to resume from, the watch starts from now and
	 * the prefix is read once it is created, not read first and watched
	 * from the read's revision: etcd puts a watch of a past revision
	 * among its unsynced ones, which it catches up every 100 ms
	 * (watch() and syncWatchersLoop() in mvcc/watchable_store.go,
	 * v3.4.23), so that its first events came up to 100 ms late.
	 */
	w->reading = !w->next_rev;
	w->read_rev = 0;
	body = etcd_watch_body(w->prefix, w->next_rev);
	w->req = body ? request(w->e, ETCD_PATH_WATCH, body, true, on_watch_end, w) : NULL;
	if (w->req)
		w->req->msg = on_watch_msg;
	free(body);
	if (!w->req)
		watch_retry(w, "out of memory");
}

/**
 * etcd_watch() - every key under @prefix, then each change, for as long as it is kept
 * @e: the client
 * @prefix: the keys, ending in '/'
 * @ops: what to tell (link and synced may be NULL)
 * @ctx: their argument
 *
 * Watched from now, then read (the snapshot, told first), then the events
 * the read does not have; a watch that ends resumes from the revision after
 * the last event it delivered, once etcd's history up to there is found to
 * be the one it watched (resume_check()); one that etcd cancels (compacted
 * past it), or whose history is another, is watched from now and read again.
 *
 * Return: the watch, or NULL without memory.
 */
struct etcd_watch *etcd_watch(struct etcd *e, const char *prefix,
			      const struct etcd_watch_ops *ops, void *ctx)
{
	struct etcd_watch *w = calloc(1, sizeof(*w));

	if (!w || !(w->prefix = strdup(prefix))) {
		free(w);
		return NULL;
	}
	w->e = e;
	w->ops = ops;
	w->ctx = ctx;
	w->next = e->watches;
	e->watches = w;
	watch_begin(w);
	return w;
}

static void watch_free(struct etcd_watch *w)
{
	etcd_cancel(w->req);
	read_end(w);
	etcd_fp_clear(&w->fp);
	sd_event_source_disable_unref(w->retry);
	sd_event_source_disable_unref(w->reread);
	free(w->prefix);
	free(w);
}

/* The watches unwatched while dispatching, freed once it is over. */
static void watches_reap(struct etcd *e)
{
	while (e->gone) {
		struct etcd_watch *w = e->gone;

		e->gone = w->gone_next;
		watch_free(w);
	}
}

/**
 * etcd_unwatch() - no more of a watch
 * @w: the watch, NULL or one etcd_watch() made and not yet unwatched
 *
 * Nothing of it is called after.  @w's context may go once this returns.
 *
 * Context: the loop, or any of the client's callbacks (a watch's own
 * included): then the watch is freed once the callbacks' dispatch is over.
 */
void etcd_unwatch(struct etcd_watch *w)
{
	struct etcd_watch **p;

	if (!w)
		return;
	for (p = &w->e->watches; *p != w; p = &(*p)->next)
		;
	*p = w->next;	/* w->next kept: a loop over the list may be at w */
	if (!w->e->dispatching) {
		watch_free(w);
		return;
	}
	/* its held events and read pages stay: a frame may be reading them */
	w->gone = true;
	etcd_cancel(w->req);
	w->req = NULL;
	etcd_cancel(w->read);
	w->read = NULL;
	etcd_cancel(w->check);
	w->check = NULL;
	w->retry = sd_event_source_disable_unref(w->retry);
	w->reread = sd_event_source_disable_unref(w->reread);
	w->gone_next = w->e->gone;
	w->e->gone = w;
}

/* ---- the lease ---- */

static void lease_tick(struct etcd *e);

static int on_lease_timer(sd_event_source *s, uint64_t usec, void *arg)
{
	(void)s;
	(void)usec;
	lease_tick(arg);
	return 0;
}

static void lease_lost(struct etcd *e, const char *why)
{
	if (!e->lease)
		return;
	fprintf(stderr, "<4>hbmguardd: etcd: lease %" PRIx64 " lost: %s\n", (uint64_t)e->lease, why);
	e->lease = 0;
	e->on_lease(e->lease_ctx, 0);
}

static void on_lease_reply(void *arg, int err, struct json_object *reply)
{
	struct etcd *e = arg;
	struct json_object *res = reply, *inner;
	int64_t id = 0, ttl = 0;

	e->lreq = NULL;
	/* a keepalive is a stream of one: {"result": ...} */
	if (reply && json_object_object_get_ex(reply, "result", &inner))
		res = inner;
	/* (etcd grants positive IDs only: LeaseGrant() in etcdserver/v3_server.go, v3.4.23) */
	if (!err && (etcd_int64(res, "ID", &id) || etcd_int64(res, "TTL", &ttl) || id <= 0))
		err = -EPROTO;
	if (err) {
		/* unanswered for a whole TTL: etcd has let it go, or will */
		if (e->lease && now_us(e) - e->lease_ok > (uint64_t)e->ttl * 1000000)
			lease_lost(e, "not kept alive for its TTL");
		/* a keepalive unanswered says the watches' connections may be dead too */
		for (struct etcd_watch *w = e->watches; w && err == -EHOSTUNREACH; w = w->next)
			if (w->req && w->up)
				watch_retry(w, "a keepalive went unanswered");
		return;
	}
	/*
	 * A lease etcd no longer has is answered with TTL 0, not an error
	 * (leaseKeepAlive() in etcdserver/api/v3rpc/lease.go, v3.4.23), which
	 * the gateway leaves out as proto3's zero value.
	 */
	if (ttl <= 0) {
		lease_lost(e, "etcd says it expired");
		lease_tick(e);
		return;
	}
	e->lease_ok = now_us(e);
	if (!e->lease) {
		e->lease = id;
		e->on_lease(e->lease_ctx, id);
	}
}

/* Every third of the TTL: grant one, or keep the one there alive. */
static void lease_tick(struct etcd *e)
{
	char body[64];

	if (!e->lreq) {
		if (e->lease)
			snprintf(body, sizeof(body), "{\"ID\":\"%" PRId64 "\"}", e->lease);
		else
			snprintf(body, sizeof(body), "{\"TTL\":\"%u\"}", e->ttl);
		e->lreq = etcd_call(e, e->lease ? ETCD_PATH_KEEPALIVE : ETCD_PATH_GRANT, body,
				    on_lease_reply, e);
	}
	if (sd_event_source_set_time(e->ltimer, now_us(e) + (uint64_t)e->ttl * 1000000 / 3) < 0 ||
	    sd_event_source_set_enabled(e->ltimer, SD_EVENT_ONESHOT) < 0)
		fprintf(stderr, "<3>hbmguardd: etcd: cannot arm the lease's timer\n");
}

/**
 * etcd_lease() - keep a lease of @ttl seconds, granted again when lost
 * @e: the client
 * @ttl: seconds
 * @on_lease: told each lease granted, and 0 when it is lost
 * @ctx: its argument
 *
 * Return: 0, or -ENOMEM.
 */
int etcd_lease(struct etcd *e, uint32_t ttl, void (*on_lease)(void *ctx, int64_t id), void *ctx)
{
	e->ttl = ttl;
	e->on_lease = on_lease;
	e->lease_ctx = ctx;
	if (sd_event_add_time(e->loop, &e->ltimer, CLOCK_MONOTONIC, 0, 1000, on_lease_timer, e) < 0)
		return -ENOMEM;
	lease_tick(e);
	return 0;
}

/**
 * etcd_new() - a client of @cfg's endpoints, on @loop
 * @loop: the event loop
 * @cfg: [Cluster]
 * @err: why not, on failure
 * @errlen: its size
 *
 * Return: the client, or NULL.
 */
struct etcd *etcd_new(sd_event *loop, const struct hbm_cluster_config *cfg, char *err,
		      size_t errlen)
{
	struct etcd *e;

	if (!cfg->nr_endpoints) {
		snprintf(err, errlen, "no endpoint");
		return NULL;
	}
	if (hbm_curl_load(err, errlen))
		return NULL;
	if (sym_curl_global_init(CURL_GLOBAL_DEFAULT)) {
		snprintf(err, errlen, "libcurl cannot start");
		return NULL;
	}
	e = calloc(1, sizeof(*e));
	if (!e || !(e->multi = sym_curl_multi_init())) {
		free(e);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	e->loop = sd_event_ref(loop);
	memcpy(e->endpoints, cfg->endpoints, sizeof(e->endpoints));
	e->nr_endpoints = cfg->nr_endpoints;
	strcpy(e->cert, cfg->cert);
	strcpy(e->key, cfg->key);
	strcpy(e->ca, cfg->ca);
	sym_curl_multi_setopt(e->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
	sym_curl_multi_setopt(e->multi, CURLMOPT_SOCKETDATA, e);
	sym_curl_multi_setopt(e->multi, CURLMOPT_TIMERFUNCTION, on_timer_change);
	sym_curl_multi_setopt(e->multi, CURLMOPT_TIMERDATA, e);
	return e;
}

void etcd_free(struct etcd *e)
{
	if (!e)
		return;
	while (e->watches)
		etcd_unwatch(e->watches);
	watches_reap(e);
	while (e->reqs)
		req_free(e->reqs);
	sym_curl_multi_cleanup(e->multi);
	sd_event_source_disable_unref(e->timer);
	sd_event_source_disable_unref(e->ltimer);
	sd_event_unref(e->loop);
	free(e);
}
