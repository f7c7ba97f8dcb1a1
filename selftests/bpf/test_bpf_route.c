// SPDX-License-Identifier: Apache-2.0
/*
 * Route lookup in the kernel (bpf/route_lookup.bpf.h) through the real
 * route table maps, filled the way agent/route_sync.c fills them: the
 * Gateway API manifests of selftests/unit/testdata/routes/precedence
 * compiled by policy/gateway/route_compile.c. Expected answers are the
 * Gateway API's, in selftests/unit/test_route_cases.h (the table the unit
 * test route_precedence_cases runs too); each is also checked against
 * route_match__lookup(), user space's step-by-step mirror of the kernel
 * walk.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/bpf/bpf_fixture.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_route_cases.h"
#include "selftests/unit/test_route_data.h"

#define EV(i) FX_EV(i)
#define GEN   7

static struct gw_model *model;
static struct route_table *table;

static void clear_table(void);

static void unload_table(void)
{
	route_compile__free(table);
	gateway_api__free(model);
	table = NULL;
	model = NULL;
}

/*
 * route_sync.c's install(): every key, then the generation flip. nslots
 * copies of the table side by side, one per gateway slot.
 */
static int load_slots(size_t nslots, char *err, size_t errlen)
{
	static const char *const gws[] = { "infra/gw", "infra/gw", "infra/gw" };
	struct mm_config cfg = {
		.route_gen = GEN,
		.flags = nslots > 1 ? MM_CFG_GW_SLOTS : 0,
	};
	int vfd = fx_map_fd("mm_vhosts"), rfd = fx_map_fd("mm_routes");
	int cfd = fx_map_fd("mm_config");
	__u32 zero = 0;

	if (table)
		clear_table(); /* left by a test that failed half-way */
	model = gateway_api__new();
	if (!model)
		return -ENOMEM;
	if (gateway_api__load_dir(model, route_testdata(), err, errlen) ||
	    route_compile__build_slots(model, gws, nslots, GEN, &table, err,
				       errlen))
		return -EINVAL;
	for (size_t i = 0; i < table->nvhost_keys; i++)
		if (bpf_map_update_elem(vfd, &table->vhost_keys[i],
					&table->vhost_vals[i], BPF_ANY))
			return -errno;
	for (size_t i = 0; i < table->nroute_keys; i++)
		if (bpf_map_update_elem(rfd, &table->route_keys[i],
					&table->route_cands[i], BPF_ANY))
			return -errno;
	if (route_compile__defers(table))
		cfg.flags |= MM_CFG_DEFERS;
	return bpf_map_update_elem(cfd, &zero, &cfg, BPF_ANY) ? -errno : 0;
}

static int load_table(char *err, size_t errlen)
{
	return load_slots(1, err, errlen);
}

/* Back to an empty table for the other tests. */
static void clear_table(void)
{
	struct mm_config cfg = { 0 };
	__u32 zero = 0;

	if (table) {
		for (size_t i = 0; i < table->nvhost_keys; i++)
			bpf_map_delete_elem(fx_map_fd("mm_vhosts"),
					    &table->vhost_keys[i]);
		for (size_t i = 0; i < table->nroute_keys; i++)
			bpf_map_delete_elem(fx_map_fd("mm_routes"),
					    &table->route_keys[i]);
	}
	bpf_map_update_elem(fx_map_fd("mm_config"), &zero, &cfg, BPF_ANY);
	unload_table();
}

static void answer(uint32_t route_id, uint16_t rule, char *buf, size_t len)
{
	if (route_id == MM_ROUTE_UNMATCHED)
		snprintf(buf, len, "unmatched");
	else if (route_id < table->nroutes)
		snprintf(buf, len, "%s/%s rule %u", table->routes[route_id].ns,
			 table->routes[route_id].name, rule);
	else
		snprintf(buf, len, "route id %#x", route_id);
}

static size_t head_of(const struct rcase *c, char *head, size_t size)
{
	return snprintf(head, size, "%s %s HTTP/1.1\r\n%s%s%s%s\r\n", c->method,
			c->target, c->host ? "Host: " : "",
			c->host ? c->host : "", c->host ? "\r\n" : "",
			c->headers);
}

static void run_cases(void)
{
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	char err[512] = "", head[1024], got[256];
	size_t failed = 0;

	OK(fx_reset());
	REQUIRE(ASSERT_EQ(load_table(err, sizeof(err)), 0));
	for (size_t i = 0; i < sizeof(route_cases) / sizeof(route_cases[0]);
	     i++) {
		const struct rcase *c = &route_cases[i];
		const struct mm_http_event *ex = NULL, *hd = NULL;
		const char *hdbytes = NULL;
		struct route_result res;
		struct http_req req;
		size_t n = head_of(c, head, sizeof(head));

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, head, n));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		fx_drain();
		for (int k = 0; k < fx_nev; k++) {
			if (FX_EV(k)->type == MM_EVT_EXCHANGE)
				ex = FX_EV(k);
			else if (FX_EV(k)->type == MM_EVT_HEAD) {
				hd = FX_EV(k);
				hdbytes = FX_HEAD(k);
			}
		}
		REQUIRE(ASSERT_TRUE(ex != NULL,
				    "case \"%s\": no exchange event", c->what));
		REQUIRE(ASSERT_EQ(ex->route_gen, GEN));
		/* the request's own slot intact: its start before its end */
		REQUIRE(ASSERT_TRUE(
			ex->start_ns && ex->end_ns >= ex->start_ns &&
				ex->end_ns - ex->start_ns < 10000000000ULL,
			"case \"%s\": start %llu end %llu", c->what,
			(unsigned long long)ex->start_ns,
			(unsigned long long)ex->end_ns));
		REQUIRE(ASSERT_EQ(ex->req_bytes, n));
		if (c->bpf == DEFER) {
			/* the kernel hands the head over; user space decides */
			REQUIRE(ASSERT_TRUE(ex->route_id == MM_ROUTE_DEFER,
					    "case \"%s\": route %#x, want defer",
					    c->what, ex->route_id));
			REQUIRE(ASSERT_TRUE(hd != NULL,
					    "case \"%s\": no head event",
					    c->what));
			REQUIRE(ASSERT_EQ(hd->req_seq, ex->req_seq));
			REQUIRE(ASSERT_EQ(hd->head_len, n));
			REQUIRE(ASSERT_TRUE(!memcmp(hdbytes, head, n)));
			REQUIRE(ASSERT_EQ(route_match__lookup_head(
						  table, 0, 0, hdbytes,
						  hd->head_len, false, &res),
					  0));
			answer(res.route_id, res.rule_idx, got, sizeof(got));
		} else {
			REQUIRE(ASSERT_TRUE(hd == NULL, "case \"%s\": deferred",
					    c->what));
			answer(ex->route_id, ex->rule_idx, got, sizeof(got));
		}
		if (c->bpf == DEFER) {
			/*
			 * Again with the head in 7-byte reads: its copy is
			 * put together from every window it was parsed in
			 * (the table defers, so each is kept).
			 */
			struct mm_conn conn;

			OK(fx_reset());
			OK(fx_open(0, MM_ROLE_UNKNOWN));
			OK(fx_chunks(0, 1, head, n, 7));
			OK(fx_conn(0, &conn));
			REQUIRE(ASSERT_EQ(conn.has_ext, 1));
			OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
			fx_drain();
			REQUIRE(ASSERT_TRUE(
				fx_nev == 2 && FX_EV(0)->type == MM_EVT_HEAD,
				"case \"%s\" in 7-byte reads: no head event",
				c->what));
			REQUIRE(ASSERT_EQ(FX_EV(0)->head_len, n));
			REQUIRE(ASSERT_TRUE(
				!memcmp(FX_HEAD(0), head, n),
				"case \"%s\" in 7-byte reads: head differs",
				c->what));
		}
		if (strcmp(got, c->want)) {
			failed++;
			test__fail(
				__FILE__, __LINE__,
				"case \"%s\": kernel says \"%s\", want \"%s\"",
				c->what, got, c->want);
		}
		/* user space's mirror of the kernel walk agrees */
		REQUIRE(ASSERT_EQ(route_match__parse_head(head, n, &req), 0));
		REQUIRE(ASSERT_EQ(route_match__lookup(table, 0, 0, &req, &res),
				  0));
		if (res.bpf_route_id != ex->route_id ||
		    (c->bpf == KERNEL && res.bpf_rule_idx != ex->rule_idx)) {
			failed++;
			test__fail(
				__FILE__, __LINE__,
				"case \"%s\": kernel %#x rule %u, route_match %#x rule %u",
				c->what, ex->route_id, ex->rule_idx,
				res.bpf_route_id, res.bpf_rule_idx);
		}
	}
	REQUIRE(ASSERT_EQ(failed, 0));
}

TEST(bpf_route_lookup)
{
	run_cases();
	clear_table();
}

/*
 * The upstream request inherits the downstream one's route and identity:
 * by content when the proxy forwards Host, path and method (mm_recent), by
 * the thread's link in task storage when it rewrote Host (nginx).
 */
TEST(bpf_route_upstream_link)
{
	static const char down[] =
		"GET /api/v2/users HTTP/1.1\r\nHost: www.example.com\r\n\r\n";
	static const char up_same[] =
		"GET /api/v2/users HTTP/1.1\r\nHost: www.example.com\r\nX-Forwarded-For: 1.2.3.4\r\n\r\n";
	static const char up_rewritten[] =
		"GET /api/v2/users HTTP/1.0\r\nHost: backend_pool\r\n\r\n";
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	char err[512] = "", got[256];
	const struct mm_http_event *d;

	OK(fx_reset());
	REQUIRE(ASSERT_EQ(load_table(err, sizeof(err)), 0));
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, down, sizeof(down) - 1));
	/* upstream by content, then by thread */
	OK(fx_open(1, MM_ROLE_UP));
	OK(fx_buf(1, 0, up_same, sizeof(up_same) - 1));
	OK(fx_buf(1, 1, resp, sizeof(resp) - 1));
	OK(fx_open(2, MM_ROLE_UP));
	OK(fx_buf(2, 0, up_rewritten, sizeof(up_rewritten) - 1));
	OK(fx_buf(2, 1, resp, sizeof(resp) - 1));
	OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
	REQUIRE(ASSERT_EQ(fx_drain(), 3));
	d = EV(2);
	REQUIRE(ASSERT_EQ(d->leg, MM_LEG_DOWNSTREAM));
	answer(d->route_id, d->rule_idx, got, sizeof(got));
	REQUIRE(ASSERT_STREQ(got, "apps/api rule 1"));
	for (int i = 0; i < 2; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->leg, MM_LEG_UPSTREAM));
		REQUIRE(ASSERT_EQ(EV(i)->parent_conn_id, d->conn_id));
		REQUIRE(ASSERT_EQ(EV(i)->parent_seq, d->req_seq));
		REQUIRE(ASSERT_EQ(EV(i)->route_id, d->route_id));
		REQUIRE(ASSERT_EQ(EV(i)->rule_idx, d->rule_idx));
		REQUIRE(ASSERT_EQ(EV(i)->status, 200));
	}
	REQUIRE(ASSERT_TRUE(EV(0)->conn_id != EV(1)->conn_id));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_LINK_FAIL), 0));
	clear_table();
}

/*
 * A response's own Host header (a backend may send anything) is not the
 * request's, also when its name went byte by byte (a write cut inside
 * "Host") while a pipelined request waits for its Host line: taken, it
 * would be that request's first Host.
 */
TEST(bpf_route_response_host_ignored)
{
	static const char reqs[] =
		"GET /login HTTP/1.1\r\nHost: www.example.com\r\n\r\n"
		"GET /login HTTP/1.1\r\nAccept: */*\r\n";
	static const char req2_rest[] = "Host: www.example.com\r\n\r\n";
	static const char resp1_a[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nHos";
	static const char resp1_b[] = "t: evil.example.org\r\n\r\n";
	static const char resp2[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	char err[512] = "", got[256];

	OK(fx_reset());
	REQUIRE(ASSERT_EQ(load_table(err, sizeof(err)), 0));
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, reqs, sizeof(reqs) - 1));
	OK(fx_buf(0, 0, resp1_a, sizeof(resp1_a) - 1));
	OK(fx_buf(0, 0, resp1_b, sizeof(resp1_b) - 1));
	OK(fx_buf(0, 1, req2_rest, sizeof(req2_rest) - 1));
	OK(fx_buf(0, 0, resp2, sizeof(resp2) - 1));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	for (int i = 0; i < 2; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->type, MM_EVT_EXCHANGE));
		REQUIRE(ASSERT_EQ(EV(i)->status, 200));
		answer(EV(i)->route_id, EV(i)->rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_STREQ(got, "apps/login rule 0"));
	}
	clear_table();
}

/* Entries in mm_route_accs: connections that have had a head cut. */
static int route_accs_held(void)
{
	int fd = fx_map_fd("mm_route_accs"), n = 0;
	__u64 k, next;

	for (int err = bpf_map_get_next_key(fd, NULL, &next); !err;
	     err = bpf_map_get_next_key(fd, &k, &next)) {
		k = next;
		n++;
	}
	return n;
}

/*
 * Heads A and B on connections 0 and 1, each in reads of K bytes, read in
 * turns (A's first, B's first, A's second...), then a response on each.
 */
static int interleave(const char *a, size_t na, const char *b, size_t nb,
		      size_t k)
{
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	int err = fx_reset() ?: fx_open(0, MM_ROLE_UNKNOWN) ?:
		  fx_open(1, MM_ROLE_UNKNOWN);

	for (size_t off = 0; !err && (off < na || off < nb); off += k) {
		if (off < na)
			err = fx_buf(0, 1, a + off,
				     na - off < k ? na - off : k);
		if (!err && off < nb)
			err = fx_buf(1, 1, b + off,
				     nb - off < k ? nb - off : k);
	}
	return err ?: fx_buf(0, 0, resp, sizeof(resp) - 1) ?:
		      fx_buf(1, 0, resp, sizeof(resp) - 1);
}

/*
 * What a head has said of its route (host, its dots, path hash and '/'
 * boundaries) is kept in per-CPU scratch while an I/O is parsed, and in
 * mm_route_accs between the reads of a head they cut: another
 * connection's head parsed on this CPU in between must change neither.
 * Every in-kernel case is paired with another of a different answer, both
 * cut at 1, 5 and 13 bytes, read in turns; a response, and an upstream
 * head, in between. With mm_route_accs full, a cut head is finished in
 * user space from its copy, never with another head's route.
 */
TEST(bpf_route_heads_interleaved)
{
	static const size_t cuts[] = { 1, 5, 13 };
	const size_t ncases = sizeof(route_cases) / sizeof(route_cases[0]);
	char err[512] = "", ha[1024], hb[1024], got[256];
	size_t na, nb;
	int fd;

	OK(fx_reset());
	REQUIRE(ASSERT_EQ(load_table(err, sizeof(err)), 0));
	for (size_t i = 0; i < ncases; i++) {
		const struct rcase *ca = &route_cases[i], *cb = NULL;

		if (ca->bpf != KERNEL)
			continue;
		for (size_t d = 1; d < ncases && !cb; d++) {
			const struct rcase *c = &route_cases[(i + d) % ncases];

			if (c->bpf == KERNEL && strcmp(c->want, ca->want))
				cb = c;
		}
		REQUIRE(ASSERT_TRUE(cb != NULL));
		na = head_of(ca, ha, sizeof(ha));
		nb = head_of(cb, hb, sizeof(hb));
		for (size_t ci = 0; ci < sizeof(cuts) / sizeof(cuts[0]); ci++) {
			OK(interleave(ha, na, hb, nb, cuts[ci]));
			REQUIRE(ASSERT_EQ(fx_drain(), 2));
			answer(EV(0)->route_id, EV(0)->rule_idx, got,
			       sizeof(got));
			REQUIRE(ASSERT_TRUE(
				!strcmp(got, ca->want),
				"\"%s\" in %zu-byte reads after \"%s\": %s",
				ca->what, cuts[ci], cb->what, got));
			answer(EV(1)->route_id, EV(1)->rule_idx, got,
			       sizeof(got));
			REQUIRE(ASSERT_TRUE(
				!strcmp(got, cb->want),
				"\"%s\" in %zu-byte reads after \"%s\": %s",
				cb->what, cuts[ci], ca->what, got));
			/* one entry per connection however often cut, until it ends */
			REQUIRE(ASSERT_EQ(route_accs_held(), 2));
			OK(fx_close(0));
			OK(fx_close(1));
			REQUIRE(ASSERT_EQ(route_accs_held(), 0));
			REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_ROUTE_STATE_LOST),
					  0));
		}
	}
	/*
	 * A response between two reads of a pipelined head, and another
	 * connection's head before it: the response's window must leave the
	 * saved state to the request's next window.
	 */
	{
		static const char resp[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		static const char r1[] =
			"GET /x HTTP/1.1\r\nHost: a.b.example.com\r\n\r\n"
			"GET /api/v2/users HTTP/1.1\r\nHost: www.ex";
		static const char r2[] = "ample.com\r\n\r\n";
		static const char other[] =
			"GET /healthz HTTP/1.1\r\nHost: unknown.org\r\n\r\n";
		static const char *const want[] = { "apps/wild rule 0",
						    "apps/catchall rule 0",
						    "apps/api rule 1" };

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_open(1, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, r1, sizeof(r1) - 1));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		OK(fx_buf(1, 1, other, sizeof(other) - 1));
		OK(fx_buf(1, 0, resp, sizeof(resp) - 1));
		OK(fx_buf(0, 1, r2, sizeof(r2) - 1));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		REQUIRE(ASSERT_EQ(fx_drain(), 3));
		for (int i = 0; i < 3; i++) {
			answer(EV(i)->route_id, EV(i)->rule_idx, got,
			       sizeof(got));
			REQUIRE(ASSERT_TRUE(!strcmp(got, want[i]),
					    "exchange %d: %s, want %s", i, got,
					    want[i]));
		}
		REQUIRE(ASSERT_EQ(route_accs_held(), 1));
		OK(fx_close(0));
		OK(fx_close(1));
		REQUIRE(ASSERT_EQ(route_accs_held(), 0));
	}

	/* a connection closed inside a cut head leaves no entry behind */
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, ha, 20));
	REQUIRE(ASSERT_EQ(route_accs_held(), 1));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(route_accs_held(), 0));

	/*
	 * A head cut right behind an Upgrade that the 101 grants: its stream
	 * is no longer HTTP/1, and its entry goes with the next read (a
	 * WebSocket may stay open for hours).
	 */
	{
		static const char up[] =
			"GET /x HTTP/1.1\r\nHost: a.b.example.com\r\n"
			"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\nGET /y HT";
		static const char r101[] =
			"HTTP/1.1 101 Switching Protocols\r\n"
			"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
		static const char frame[] = "\x81\x02hi";

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, up, sizeof(up) - 1));
		REQUIRE(ASSERT_EQ(route_accs_held(), 1));
		OK(fx_buf(0, 0, r101, sizeof(r101) - 1));
		OK(fx_buf(0, 1, frame, sizeof(frame) - 1));
		REQUIRE(ASSERT_EQ(route_accs_held(), 0));
	}

	/*
	 * An upstream head cut by its writes, another downstream head read
	 * in between on this thread: the upstream one is still found by its
	 * content (mm_recent), not taken for the thread's newest request.
	 */
	{
		static const char resp[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		static const char down[] =
			"GET /api/v2/users HTTP/1.1\r\nHost: www.example.com\r\n\r\n";
		static const char up[] =
			"GET /api/v2/users HTTP/1.1\r\nHost: www.example.com\r\n"
			"X-Forwarded-For: 1.2.3.4\r\n\r\n";
		static const char other[] =
			"GET /healthz HTTP/1.1\r\nHost: unknown.org\r\n\r\n";
		const struct mm_http_event *u = NULL, *d = NULL;

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_open(1, MM_ROLE_UP));
		OK(fx_open(2, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, down, sizeof(down) - 1));
		for (size_t off = 0; off < sizeof(up) - 1; off += 7) {
			size_t left = sizeof(up) - 1 - off;

			OK(fx_buf(1, 0, up + off, left < 7 ? left : 7));
			if (off < sizeof(other) - 1)
				OK(fx_buf(2, 1, other + off,
					  sizeof(other) - 1 - off < 7
						  ? sizeof(other) - 1 - off
						  : 7));
		}
		OK(fx_buf(1, 1, resp, sizeof(resp) - 1));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		OK(fx_buf(2, 0, resp, sizeof(resp) - 1));
		REQUIRE(ASSERT_EQ(fx_drain(), 3));
		for (int k = 0; k < 3; k++) {
			answer(EV(k)->route_id, EV(k)->rule_idx, got,
			       sizeof(got));
			if (EV(k)->leg == MM_LEG_UPSTREAM)
				u = EV(k);
			else if (!strcmp(got, "apps/api rule 1"))
				d = EV(k);
		}
		REQUIRE(ASSERT_TRUE(u && d, "no upstream or no /api exchange"));
		REQUIRE(ASSERT_EQ(u->parent_conn_id, d->conn_id));
		REQUIRE(ASSERT_EQ(u->parent_seq, d->req_seq));
		REQUIRE(ASSERT_EQ(u->route_id, d->route_id));
	}

	/*
	 * The map full (entries of no connection): a cut head's route is
	 * decided in user space from its copy, counted; read whole, a head
	 * needs no entry.
	 */
	fd = fx_map_fd("mm_route_accs");
	{
		static const char resp[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		struct mm_route_acc junk = { .target_ok = 1 };
		struct route_result res;
		__u64 key = ~0ULL;
		int made = 0;

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_open(1, MM_ROLE_UNKNOWN));
		while (!bpf_map_update_elem(fd, &key, &junk, BPF_NOEXIST)) {
			key--;
			made++;
		}
		REQUIRE(ASSERT_TRUE(made > 0 && errno == E2BIG,
				    "filled with %d, then %s", made,
				    strerror(errno)));
		na = head_of(&route_cases[0], ha, sizeof(ha));
		OK(fx_chunks(0, 1, ha, na, 7));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		OK(fx_buf(1, 1, ha, na));
		OK(fx_buf(1, 0, resp, sizeof(resp) - 1));
		while (made--)
			bpf_map_delete_elem(fd, &(__u64){ ++key });
		REQUIRE(ASSERT_EQ(fx_drain(), 3));
		REQUIRE(ASSERT_EQ(EV(0)->type, MM_EVT_HEAD));
		REQUIRE(ASSERT_EQ(EV(0)->head_len, na));
		REQUIRE(ASSERT_TRUE(!memcmp(FX_HEAD(0), ha, na)));
		REQUIRE(ASSERT_EQ(route_match__lookup_head(table, 0, 0,
							   FX_HEAD(0), na,
							   false, &res),
				  0));
		answer(res.route_id, res.rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_STREQ(got, route_cases[0].want));
		REQUIRE(ASSERT_EQ(EV(1)->route_id, MM_ROUTE_DEFER));
		REQUIRE(ASSERT_EQ(EV(1)->req_seq, EV(0)->req_seq));
		REQUIRE(ASSERT_EQ(EV(1)->req_bytes, na));
		answer(EV(2)->route_id, EV(2)->rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_STREQ(got, route_cases[0].want));
		REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_ROUTE_STATE_LOST), 1));
	}
	REQUIRE(ASSERT_EQ(route_accs_held(), 0));
	clear_table();
}

/* One GET through a fresh connection: its exchange event, or NULL. */
static const struct mm_http_event *one_get(const char *host, const char *path)
{
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
	char head[512];
	int n = snprintf(head, sizeof(head),
			 "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);

	if (fx_reset() || fx_open(0, MM_ROLE_UNKNOWN) ||
	    fx_buf(0, 1, head, (size_t)n) ||
	    fx_buf(0, 0, resp, sizeof(resp) - 1) || fx_drain() != 1)
		return NULL;
	return FX_EV(0)->type == MM_EVT_EXCHANGE ? FX_EV(0) : NULL;
}

/*
 * Two Gateways on one node: a process carries its Gateway's slot
 * (mm_targets), its connections take it, and its requests are looked up in
 * that slot's part of the table only — also through the per-CPU route
 * cache, which must not answer one slot's request with another's route.
 */
TEST(bpf_route_gateway_slots)
{
	__u32 pid = (__u32)getpid();
	int tfd;
	struct mm_target tg = { .source = MM_TGT_PID };
	const struct mm_http_event *e;
	char err[512] = "", got[256];
	uint32_t first1;

	OK(fx_reset());
	tfd = fx_map_fd("mm_targets");
	REQUIRE(ASSERT_EQ(load_slots(2, err, sizeof(err)), 0));
	first1 = (uint32_t)table->slots[1].route_first;
	REQUIRE(ASSERT_TRUE(first1 > 0 && table->slots[1].nroutes == first1,
			    "slot 1 holds routes [%u, +%zu)", first1,
			    table->slots[1].nroutes));
	for (__u32 gw = 0; gw < 3; gw++) {
		tg.gw = gw % 2;
		OK(bpf_map_update_elem(tfd, &pid, &tg, BPF_ANY) ? -errno : 0);
		e = one_get("www.example.com", "/login");
		REQUIRE(ASSERT_TRUE(e != NULL, "no exchange in slot %u",
				    tg.gw));
		REQUIRE(ASSERT_EQ(e->gw, tg.gw));
		answer(e->route_id, e->rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_STREQ(got, "apps/login rule 0"));
		REQUIRE(ASSERT_TRUE(
			tg.gw ? e->route_id >= first1 : e->route_id < first1,
			"slot %u answered with route %u", tg.gw, e->route_id));
		REQUIRE(ASSERT_EQ(table->routes[e->route_id].gw, tg.gw));
	}
	/* a slot the table does not hold: no vhost, unmatched */
	tg.gw = 2;
	OK(bpf_map_update_elem(tfd, &pid, &tg, BPF_ANY) ? -errno : 0);
	e = one_get("www.example.com", "/login");
	REQUIRE(ASSERT_TRUE(e != NULL, "no exchange in slot 2"));
	REQUIRE(ASSERT_EQ(e->gw, 2));
	REQUIRE(ASSERT_EQ(e->route_id, MM_ROUTE_UNMATCHED));
	bpf_map_delete_elem(tfd, &pid);
	clear_table();
}

/*
 * A connection accepted on a listener port is looked up in that port's
 * vhosts only (the Gateway of the precedence cases has listeners on 80,
 * 8080 and 443), also through the route cache, and a deferred head tells
 * user space the port it was decided in.
 */
TEST(bpf_route_listener_port)
{
	static const struct {
		unsigned int port;
		const char *host, *path, *want;
	} c[] = {
		{ 8080, "same.test", "/x", "infra/samens rule 0" },
		{ 80, "same.test", "/x", "unmatched" },
		{ 0, "same.test", "/x", "infra/samens rule 0" },
		{ 8080, "www.example.com", "/login", "unmatched" },
		{ 80, "www.example.com", "/login", "apps/login rule 0" },
		{ 443, "secure.test", "/", "apps/secure rule 0" },
		{ 80, "secure.test", "/", "unmatched" },
		{ 8080, "same.test", "/x", "infra/samens rule 0" },
	};
	const struct mm_http_event *e;
	char err[512] = "", got[256], head[256];
	struct route_result res;
	struct http_req req;

	OK(fx_reset());
	REQUIRE(ASSERT_EQ(load_table(err, sizeof(err)), 0));
	REQUIRE(ASSERT_EQ(table->slots[0].nports, 3));
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		int n;

		fx_listener_port(c[i].port);
		e = one_get(c[i].host, c[i].path);
		REQUIRE(ASSERT_TRUE(e != NULL, "case %zu: no exchange", i));
		answer(e->route_id, e->rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_TRUE(!strcmp(got, c[i].want),
				    "case %zu (%s%s on %u): kernel \"%s\", "
				    "want \"%s\"",
				    i, c[i].host, c[i].path, c[i].port, got,
				    c[i].want));
		n = snprintf(head, sizeof(head),
			     "GET %s HTTP/1.1\r\nHost: "
			     "%s\r\n\r\n",
			     c[i].path, c[i].host);
		REQUIRE(ASSERT_EQ(
			route_match__parse_head(head, (size_t)n, &req), 0));
		REQUIRE(ASSERT_EQ(route_match__lookup(table, 0, c[i].port, &req,
						      &res),
				  0));
		REQUIRE(ASSERT_EQ(res.bpf_route_id, e->route_id));
	}
	/* a header match on 80: the head event names the port */
	{
		static const char resp[] =
			"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		static const char h[] =
			"GET /api HTTP/1.1\r\nHost: "
			"www.example.com\r\nX-Canary: true\r\n\r\n";

		fx_listener_port(80);
		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, h, sizeof(h) - 1));
		OK(fx_buf(0, 0, resp, sizeof(resp) - 1));
		fx_drain();
		REQUIRE(ASSERT_TRUE(fx_nev == 2 &&
				    FX_EV(0)->type == MM_EVT_HEAD));
		REQUIRE(ASSERT_EQ(FX_EV(0)->status, 80));
		REQUIRE(ASSERT_EQ(
			route_match__lookup_head(table, 0, FX_EV(0)->status,
						 FX_HEAD(0), FX_EV(0)->head_len,
						 false, &res),
			0));
		answer(res.route_id, res.rule_idx, got, sizeof(got));
		REQUIRE(ASSERT_STREQ(got, "apps/api rule 4"));
	}
	fx_listener_port(0);
	clear_table();
}
