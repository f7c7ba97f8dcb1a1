// SPDX-License-Identifier: Apache-2.0
/*
 * policy/regex/regex.h over RE2. The only C++ in the tree: RE2 is C++-only.
 * No exception escapes: RE2 reports errors through error_code(), and an
 * allocation failure (std::bad_alloc) is caught and returned as -ENOMEM.
 * A compiled RE2 is immutable and safe to match from several threads.
 */
#include <errno.h>
#include <stdio.h>

#include <new>
#include <string>
#include <re2/re2.h>

#include "policy/regex/regex.h"

struct regex {
	re2::RE2 *re;
};

#define FAIL(ret, ...)                                      \
	do {                                                \
		if (errlen)                                 \
			snprintf(err, errlen, __VA_ARGS__); \
		return ret;                                 \
	} while (0)

extern "C" int regex__compile(const char *pat, size_t len, struct regex **out,
			      char *err, size_t errlen)
{
	re2::RE2 *re = nullptr;

	*out = nullptr;
	if (errlen)
		err[0] = 0;
	if (len > REGEX_MAX_PATTERN)
		FAIL(-E2BIG,
		     "pattern is %zu bytes, more than the limit of %d", len,
		     REGEX_MAX_PATTERN);
	try {
		re2::RE2::Options o;

		o.set_log_errors(false);
		o.set_max_mem(REGEX_MAX_MEM);
		/* matching only says yes or no: no submatch bookkeeping */
		o.set_never_capture(true);
		re = new re2::RE2(re2::StringPiece(pat, len), o);
		if (!re->ok()) {
			re2::RE2::ErrorCode code = re->error_code();
			std::string why = re->error();

			delete re;
			if (code == re2::RE2::ErrorPatternTooLarge)
				FAIL(-E2BIG,
				     "%s: the compiled expression needs more "
				     "than %d bytes; simplify it",
				     why.c_str(), REGEX_MAX_MEM);
			if (code == re2::RE2::ErrorRepeatSize)
				FAIL(-E2BIG,
				     "%s: counted repetitions multiply to "
				     "more than 1000; simplify it",
				     why.c_str());
			FAIL(-EINVAL, "%s (RE2 syntax)", why.c_str());
		}
		if (re->ProgramSize() > REGEX_MAX_PROGRAM) {
			int size = re->ProgramSize();

			delete re;
			FAIL(-E2BIG,
			     "the compiled expression has %d instructions, "
			     "more than the limit of %d; simplify it",
			     size, REGEX_MAX_PROGRAM);
		}
		*out = new regex;
		(*out)->re = re;
		return 0;
	} catch (const std::bad_alloc &) {
		delete re;
		FAIL(-ENOMEM, "out of memory");
	}
}

extern "C" bool regex__full(const struct regex *re, const char *s, size_t len)
{
	return re2::RE2::FullMatch(re2::StringPiece(s, len), *re->re);
}

extern "C" bool regex__partial(const struct regex *re, const char *s,
			       size_t len)
{
	return re2::RE2::PartialMatch(re2::StringPiece(s, len), *re->re);
}

extern "C" int regex__program_size(const struct regex *re)
{
	return re->re->ProgramSize();
}

extern "C" void regex__free(struct regex *re)
{
	if (!re)
		return;
	delete re->re;
	delete re;
}
