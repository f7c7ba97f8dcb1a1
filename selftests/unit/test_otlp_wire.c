// SPDX-License-Identifier: Apache-2.0
/* Header parsing/redaction, retry policy and gzip helpers. */
#include <errno.h>
#include <stdlib.h>

#include "exporter/otlp_gzip.h"
#include "exporter/otlp_headers.h"
#include "exporter/otlp_retry.h"
#include "selftests/unit/test.h"

TEST(otlp_headers_parse)
{
	struct otlp_headers h = {};
	char err[256];

	ASSERT_EQ(otlp_headers__parse(&h, " a=1 ,B-2=x%3Dy%20z,,api-key=", "t",
				      err, sizeof(err)),
		  0);
	ASSERT_EQ(h.n, 3);
	ASSERT_STREQ(h.lines[0], "a: 1");
	ASSERT_STREQ(h.lines[1], "B-2: x=y z");
	ASSERT_STREQ(h.lines[2], "api-key: ");
	ASSERT_EQ(h.namelen[1], 3);
	otlp_headers__free(&h);

	ASSERT_EQ(otlp_headers__parse(&h, "good=1,bad key=secretvalue", "ENV",
				      err, sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(strstr(err, "ENV") && strstr(err, "bad key"), "%s", err);
	ASSERT_TRUE(!strstr(err, "secretvalue"), "%s", err);
	otlp_headers__free(&h);
	ASSERT_EQ(otlp_headers__parse(&h, "k=sec%0Aret", "t", err, sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(!strstr(err, "sec"), "%s", err);
	otlp_headers__free(&h);
	ASSERT_EQ(otlp_headers__parse(&h, "novalue", "t", err, sizeof(err)),
		  -EINVAL);
	otlp_headers__free(&h);
	ASSERT_EQ(otlp_headers__parse(&h, "k=%4", "t", err, sizeof(err)),
		  -EINVAL);
	otlp_headers__free(&h);
}

TEST(otlp_headers_redact)
{
	static const char in[] = "POST /v1/metrics HTTP/1.1\r\n"
				 "Host: x\r\n"
				 "x-api-key: hunter2\r\n"
				 "Authorization: Basic Zm9v\r\n"
				 "Accept: */*\r\n";
	struct otlp_headers h = {};
	char err[64], out[512], tiny[8];

	ASSERT_EQ(otlp_headers__parse(&h, "X-API-Key=hunter2", "t", err,
				      sizeof(err)),
		  0);
	otlp_headers__redact(&h, in, sizeof(in) - 1, out, sizeof(out));
	ASSERT_STREQ(out, "POST /v1/metrics HTTP/1.1\r\n"
			  "Host: x\r\n"
			  "x-api-key: [redacted]\r\n"
			  "Authorization: [redacted]\r\n"
			  "Accept: */*\r\n");
	ASSERT_EQ(otlp_headers__redact(&h, in, sizeof(in) - 1, tiny,
				       sizeof(tiny)),
		  7);
	otlp_headers__free(&h);
}

TEST(otlp_retry_policy)
{
	unsigned int seed = 1;
	uint64_t d;
	int i;

	ASSERT_TRUE(otlp_retry__retryable(429));
	ASSERT_TRUE(otlp_retry__retryable(502));
	ASSERT_TRUE(otlp_retry__retryable(503));
	ASSERT_TRUE(otlp_retry__retryable(504));
	ASSERT_TRUE(!otlp_retry__retryable(400));
	ASSERT_TRUE(!otlp_retry__retryable(500));
	ASSERT_TRUE(!otlp_retry__retryable(413));

	ASSERT_EQ(otlp_retry__after_ms("2", 0), 2000);
	ASSERT_EQ(otlp_retry__after_ms(" 0 ", 0), 0);
	ASSERT_EQ(otlp_retry__after_ms("1.5", 0), -1);
	ASSERT_EQ(otlp_retry__after_ms("soon", 0), -1);
	/* 784111777 = Sun, 06 Nov 1994 08:49:37 GMT (RFC 9110's example) */
	ASSERT_EQ(otlp_retry__after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
				       784111777 - 30),
		  30000);
	ASSERT_EQ(otlp_retry__after_ms("Sun, 06 Nov 1994 08:49:37 GMT",
				       784111777 + 30),
		  0);

	for (i = 0; i < 100; i++) {
		d = otlp_retry__backoff_ms(1, 1000, 30000, &seed);
		ASSERT_TRUE(d >= 500 && d <= 1000, "%llu",
			    (unsigned long long)d);
		d = otlp_retry__backoff_ms(3, 1000, 30000, &seed);
		ASSERT_TRUE(d >= 2000 && d <= 4000);
		d = otlp_retry__backoff_ms(40, 1000, 30000, &seed);
		ASSERT_TRUE(d >= 15000 && d <= 30000);
	}
}

TEST(otlp_gzip_round_trip)
{
	char in[4096];
	void *z, *back;
	size_t zlen, blen, i;

	for (i = 0; i < sizeof(in); i++)
		in[i] = "metric"[i % 6];
	ASSERT_EQ(otlp_gzip__compress(in, sizeof(in), &z, &zlen), 0);
	ASSERT_TRUE(zlen < sizeof(in) / 4);
	ASSERT_TRUE(((unsigned char *)z)[0] == 0x1f &&
		    ((unsigned char *)z)[1] == 0x8b);
	ASSERT_EQ(otlp_gzip__decompress(z, zlen, 1 << 20, &back, &blen), 0);
	ASSERT_EQ(blen, sizeof(in));
	ASSERT_TRUE(!memcmp(back, in, blen));
	free(back);
	/* A body inflating past the cap is refused (zip bomb). */
	ASSERT_EQ(otlp_gzip__decompress(z, zlen, 100, &back, &blen), -EFBIG);
	/* Truncated. */
	ASSERT_EQ(otlp_gzip__decompress(z, zlen / 2, 1 << 20, &back, &blen),
		  -EIO);
	free(z);
}
