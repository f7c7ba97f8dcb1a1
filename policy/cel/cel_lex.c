// SPDX-License-Identifier: Apache-2.0
/*
 * CEL lexer (cel-spec langdef "Syntax"): turns the expression into tokens,
 * decoding string and bytes literals (quotes, triple quotes, raw prefix,
 * escapes) into the program's literal buffer. Columns are 1-based code
 * points, which is what a user counts in an editor.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cel/cel_impl.h"

struct lexer {
	const char *src;
	size_t len, pos;
	size_t col_off; /* incremental byte-offset -> column conversion */
	int col;
	char *lits;
	size_t nlits;
	struct cel_error *err;
};

static int col_at(struct lexer *lx, size_t off)
{
	/* token starts only move forward, so count code points incrementally */
	while (lx->col_off < off) {
		if (((unsigned char)lx->src[lx->col_off] & 0xc0) != 0x80)
			lx->col++;
		lx->col_off++;
	}
	return lx->col + 1;
}

static int lex_fail(struct lexer *lx, size_t off, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int lex_fail(struct lexer *lx, size_t off, const char *fmt, ...)
{
	va_list ap;

	lx->err->col = col_at(lx, off);
	va_start(ap, fmt);
	vsnprintf(lx->err->msg, sizeof(lx->err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put_utf8(struct lexer *lx, uint32_t cp)
{
	char *o = lx->lits + lx->nlits;

	if (cp < 0x80) {
		o[0] = cp;
		lx->nlits += 1;
	} else if (cp < 0x800) {
		o[0] = 0xc0 | (cp >> 6);
		o[1] = 0x80 | (cp & 0x3f);
		lx->nlits += 2;
	} else if (cp < 0x10000) {
		o[0] = 0xe0 | (cp >> 12);
		o[1] = 0x80 | ((cp >> 6) & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		lx->nlits += 3;
	} else {
		o[0] = 0xf0 | (cp >> 18);
		o[1] = 0x80 | ((cp >> 12) & 0x3f);
		o[2] = 0x80 | ((cp >> 6) & 0x3f);
		o[3] = 0x80 | (cp & 0x3f);
		lx->nlits += 4;
	}
}

/* Decodes one escape after the backslash at lx->pos - 1. */
static int lex_escape(struct lexer *lx, bool bytes)
{
	size_t start = lx->pos - 1;
	uint32_t cp = 0;
	int i, n, v;
	char c;

	if (lx->pos >= lx->len)
		return lex_fail(lx, start, "unterminated escape sequence");
	c = lx->src[lx->pos++];
	switch (c) {
	case 'a':
		cp = '\a';
		break;
	case 'b':
		cp = '\b';
		break;
	case 'f':
		cp = '\f';
		break;
	case 'n':
		cp = '\n';
		break;
	case 'r':
		cp = '\r';
		break;
	case 't':
		cp = '\t';
		break;
	case 'v':
		cp = '\v';
		break;
	case '\\':
	case '?':
	case '"':
	case '\'':
	case '`':
		cp = c;
		break;
	case 'x':
	case 'X':
	case 'u':
	case 'U':
		n = c == 'u' ? 4 : c == 'U' ? 8 : 2;
		if ((c == 'u' || c == 'U') && bytes)
			return lex_fail(
				lx, start,
				"\\%c escapes are not allowed in bytes literals; use \\x",
				c);
		for (i = 0; i < n; i++) {
			if (lx->pos >= lx->len ||
			    (v = hexval(lx->src[lx->pos])) < 0)
				return lex_fail(lx, start,
						"\\%c needs %d hex digits", c,
						n);
			cp = cp * 16 + v;
			lx->pos++;
		}
		if (n == 2 && bytes) {
			lx->lits[lx->nlits++] = (char)cp;
			return 0;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return lex_fail(
				lx, start,
				"escape is not a valid Unicode code point");
		put_utf8(lx, cp);
		return 0;
	case '0':
	case '1':
	case '2':
	case '3':
		cp = c - '0';
		for (i = 0; i < 2; i++) {
			if (lx->pos >= lx->len || lx->src[lx->pos] < '0' ||
			    lx->src[lx->pos] > '7')
				return lex_fail(
					lx, start,
					"octal escape needs 3 digits 000-377");
			cp = cp * 8 + (lx->src[lx->pos++] - '0');
		}
		if (bytes) {
			lx->lits[lx->nlits++] = (char)cp;
			return 0;
		}
		put_utf8(lx, cp);
		return 0;
	default:
		return lex_fail(lx, start, "invalid escape sequence '\\%c'", c);
	}
	lx->lits[lx->nlits++] = (char)cp;
	return 0;
}

/* lx->pos is at the opening quote. */
static int lex_string(struct lexer *lx, struct cel_token *t, bool raw,
		      bool bytes, size_t start)
{
	char q = lx->src[lx->pos];
	bool triple = lx->pos + 2 < lx->len && lx->src[lx->pos + 1] == q &&
		      lx->src[lx->pos + 2] == q;
	int r;

	lx->pos += triple ? 3 : 1;
	t->s = lx->lits + lx->nlits;
	t->kind = bytes ? T_BYTES : T_STRING;
	for (;;) {
		char c;

		if (lx->pos >= lx->len)
			return lex_fail(lx, start,
					"unterminated string literal");
		c = lx->src[lx->pos];
		if (c == q) {
			if (!triple) {
				lx->pos++;
				break;
			}
			if (lx->pos + 2 < lx->len &&
			    lx->src[lx->pos + 1] == q &&
			    lx->src[lx->pos + 2] == q) {
				lx->pos += 3;
				break;
			}
		}
		if (!triple && (c == '\n' || c == '\r'))
			return lex_fail(
				lx, start,
				"newline in string literal; use \\n or a triple-quoted string");
		lx->pos++;
		if (c == '\\' && !raw) {
			r = lex_escape(lx, bytes);
			if (r)
				return r;
			continue;
		}
		lx->lits[lx->nlits++] = c;
	}
	t->len = lx->lits + lx->nlits - t->s;
	/* fits: the quotes took at least two bytes more than the contents */
	lx->lits[lx->nlits++] = 0;
	return 0;
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_ident(char c, bool first)
{
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (!first && is_digit(c));
}

static int lex_number(struct lexer *lx, struct cel_token *t)
{
	const char *s = lx->src;
	size_t start = lx->pos, p = lx->pos;
	bool dbl = false;
	uint64_t v = 0;

	if (s[p] == '0' && p + 1 < lx->len &&
	    (s[p + 1] == 'x' || s[p + 1] == 'X')) {
		p += 2;
		if (p >= lx->len || hexval(s[p]) < 0)
			return lex_fail(lx, start,
					"hex literal needs digits after 0x");
		for (; p < lx->len && hexval(s[p]) >= 0; p++) {
			if (v >> 60)
				return lex_fail(lx, start,
						"integer literal out of range");
			v = v * 16 + hexval(s[p]);
		}
		goto suffix;
	}
	while (p < lx->len && is_digit(s[p]))
		p++;
	if (p + 1 < lx->len && s[p] == '.' && is_digit(s[p + 1])) {
		dbl = true;
		for (p++; p < lx->len && is_digit(s[p]); p++)
			;
	}
	if (p < lx->len && (s[p] == 'e' || s[p] == 'E')) {
		size_t q = p + 1;

		if (q < lx->len && (s[q] == '+' || s[q] == '-'))
			q++;
		if (q >= lx->len || !is_digit(s[q]))
			return lex_fail(lx, start, "exponent needs digits");
		for (; q < lx->len && is_digit(s[q]); q++)
			;
		p = q;
		dbl = true;
	}
	if (dbl) {
		char buf[512];

		if (p - start >= sizeof(buf))
			return lex_fail(lx, start, "number literal too long");
		memcpy(buf, s + start, p - start);
		buf[p - start] = 0;
		t->kind = T_DOUBLE;
		t->d = strtod(buf, NULL);
		lx->pos = p;
		return 0;
	}
	for (size_t i = start; i < p; i++) {
		if (v > (UINT64_MAX - (s[i] - '0')) / 10)
			return lex_fail(lx, start,
					"integer literal out of range");
		v = v * 10 + (s[i] - '0');
	}
suffix:
	t->u = v;
	t->kind = T_INT;
	if (p < lx->len && (s[p] == 'u' || s[p] == 'U')) {
		t->kind = T_UINT;
		p++;
	} else if (v > (uint64_t)INT64_MAX + 1) {
		return lex_fail(lx, start, "integer literal out of range");
	}
	lx->pos = p;
	return 0;
}

static int lex_ident(struct lexer *lx, struct cel_token *t, size_t start)
{
	size_t p = lx->pos, n;
	const char *s = lx->src + start;
	size_t i;

	while (p < lx->len && is_ident(lx->src[p], false))
		p++;
	n = p - start;
	/* string prefixes: r, b and both, in any case and order */
	if (n <= 2 && p < lx->len &&
	    (lx->src[p] == '"' || lx->src[p] == '\'')) {
		bool raw = false, bytes = false, ok = true;

		for (i = 0; i < n; i++) {
			char c = s[i] | 0x20;

			if (c == 'r' && !raw)
				raw = true;
			else if (c == 'b' && !bytes)
				bytes = true;
			else
				ok = false;
		}
		if (ok) {
			lx->pos = p;
			return lex_string(lx, t, raw, bytes, start);
		}
	}
	lx->pos = p;
	t->s = s;
	t->len = n;
	t->kind = T_IDENT;
	if (n == 4 && !memcmp(s, "true", 4))
		t->kind = T_TRUE;
	else if (n == 5 && !memcmp(s, "false", 5))
		t->kind = T_FALSE;
	else if (n == 4 && !memcmp(s, "null", 4))
		t->kind = T_NULL;
	else if (n == 2 && !memcmp(s, "in", 2))
		t->kind = T_IN;
	return 0;
}

static int lex_punct(struct lexer *lx, struct cel_token *t, size_t start)
{
	const char *s = lx->src + start;
	char c = s[0], d = start + 1 < lx->len ? s[1] : 0;

	lx->pos = start + 1;
	switch (c) {
	case '(':
		t->kind = T_LPAREN;
		return 0;
	case ')':
		t->kind = T_RPAREN;
		return 0;
	case '[':
		t->kind = T_LBRACKET;
		return 0;
	case ']':
		t->kind = T_RBRACKET;
		return 0;
	case '{':
		t->kind = T_LBRACE;
		return 0;
	case '}':
		t->kind = T_RBRACE;
		return 0;
	case '.':
		t->kind = T_DOT;
		return 0;
	case ',':
		t->kind = T_COMMA;
		return 0;
	case ':':
		t->kind = T_COLON;
		return 0;
	case '?':
		t->kind = T_QUESTION;
		return 0;
	case '+':
		t->kind = T_PLUS;
		return 0;
	case '-':
		t->kind = T_MINUS;
		return 0;
	case '*':
		t->kind = T_STAR;
		return 0;
	case '/':
		t->kind = T_SLASH;
		return 0;
	case '%':
		t->kind = T_PERCENT;
		return 0;
	}
	lx->pos = start + 2;
	if (c == '=' && d == '=')
		t->kind = T_EQ;
	else if (c == '!' && d == '=')
		t->kind = T_NE;
	else if (c == '<' && d == '=')
		t->kind = T_LE;
	else if (c == '>' && d == '=')
		t->kind = T_GE;
	else if (c == '&' && d == '&')
		t->kind = T_AND;
	else if (c == '|' && d == '|')
		t->kind = T_OR;
	else {
		lx->pos = start + 1;
		if (c == '!')
			t->kind = T_NOT;
		else if (c == '<')
			t->kind = T_LT;
		else if (c == '>')
			t->kind = T_GT;
		else if (c == '=')
			return lex_fail(lx, start,
					"unexpected '='; use '==' to compare");
		else if ((unsigned char)c >= 0x20 && (unsigned char)c < 0x7f)
			return lex_fail(lx, start, "unexpected character '%c'",
					c);
		else
			return lex_fail(lx, start,
					"unexpected character 0x%02x",
					(unsigned char)c);
	}
	return 0;
}

int cel_impl__lex(const char *src, size_t len, char *lits,
		  struct cel_token **out, size_t *ntok, struct cel_error *err)
{
	struct lexer lx = { .src = src, .len = len, .lits = lits, .err = err };
	struct cel_token *toks = NULL, *t;
	size_t n = 0, cap = 0;
	int r;

	for (;;) {
		size_t start;
		char c;

		while (lx.pos < len) {
			c = src[lx.pos];
			if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
			    c == '\f') {
				lx.pos++;
			} else if (c == '/' && lx.pos + 1 < len &&
				   src[lx.pos + 1] == '/') {
				while (lx.pos < len && src[lx.pos] != '\n')
					lx.pos++;
			} else {
				break;
			}
		}
		if (n == cap) {
			struct cel_token *nt;

			cap = cap ? cap * 2 : 16;
			nt = realloc(toks, cap * sizeof(*toks));
			if (!nt) {
				r = -ENOMEM;
				snprintf(err->msg, sizeof(err->msg),
					 "out of memory");
				goto cleanup;
			}
			toks = nt;
		}
		t = &toks[n++];
		memset(t, 0, sizeof(*t));
		start = lx.pos;
		t->col = col_at(&lx, start);
		if (lx.pos >= len) {
			t->kind = T_EOF;
			break;
		}
		c = src[start];
		if (c == '"' || c == '\'')
			r = lex_string(&lx, t, false, false, start);
		else if (is_digit(c) || (c == '.' && start + 1 < len &&
					 is_digit(src[start + 1])))
			r = lex_number(&lx, t);
		else if (is_ident(c, true))
			r = lex_ident(&lx, t, start);
		else
			r = lex_punct(&lx, t, start);
		if (r)
			goto cleanup;
	}
	*out = toks;
	*ntok = n;
	return 0;
cleanup:
	free(toks);
	return r;
}
