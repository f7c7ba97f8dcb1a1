// SPDX-License-Identifier: Apache-2.0
/*
 * The policy engine's ResourceFields policies: values read from the
 * subject objects themselves (not from traffic), collected each tick.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/metric_store.h"
#include "policy/contract/policy_engine_impl.h"

static int rf_item(struct policy_engine *e, struct pe_policy *pp,
		   const struct doc_node *obj, const struct doc_node *item,
		   struct mlabel *labels, char (*vals)[LABEL_VALUE_MAX],
		   uint64_t now_ns)
{
	const struct metric_policy *p = pp->pol;
	struct cel_activation act = { .resource = obj, .item = item };
	struct mseries *ser;
	struct cel_value v;
	struct cel_error err;
	char subj[1024];
	double value;
	size_t nl;

	if (p->drop_if.prog) {
		/*
		 * A guard that cannot be evaluated does not hold: the seed's
		 * own `resource.metadata.deletionTimestamp != null` is a "no
		 * such key" error on every live object (CEL has no implicit
		 * null for absent fields), and dropping on error would drop
		 * them all. Counted, never silent.
		 */
		if (cel__eval(p->drop_if.prog, &act, &v, &err) ||
		    v.type != CEL_BOOL) {
			COUNT(pp->cnt, eval_errors);
		} else if (v.b) {
			COUNT(pp->cnt, dropped);
			return 0;
		}
	}
	if (pe_impl__eval_double(p->rf_value.prog, &act, &value)) {
		COUNT(pp->cnt, eval_errors);
		COUNT(pp->cnt, dropped);
		return 0;
	}
	if (pe_impl__eval_labels(pp, &act, labels, vals, &nl)) {
		COUNT(pp->cnt, dropped);
		return 0;
	}
	ser = mstore__series(e->store, pp->metric_id, labels, nl);
	if (!ser || !pe_impl__subject(p, obj, subj, sizeof(subj)) ||
	    mstore__bind(e->store, ser, subj)) {
		COUNT(pp->cnt, dropped);
		return 0;
	}
	mseries__set(ser, value, now_ns);
	return 1;
}

static int rf_policy(struct policy_engine *e, struct pe_policy *pp,
		     uint64_t now_ns, size_t *dropped)
{
	uint64_t before = __atomic_load_n(&pp->cnt->dropped, __ATOMIC_RELAXED);
	const struct metric_policy *p = pp->pol;
	size_t cap = p->nlabels + p->nstatic + 1;
	struct mlabel *labels = calloc(cap, sizeof(*labels));
	char(*vals)[LABEL_VALUE_MAX] = calloc(cap, sizeof(*vals));
	int n = 0, ret = 0;

	if (!labels || !vals) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (size_t s = 0; s < pp->nsubjects; s++) {
		const struct doc_node *obj = pp->subjects[s];
		const struct doc_node *node =
			*p->series_path ? doc__path(obj, p->series_path) : obj;
		size_t nitems;

		if (!node || node->kind == DOC_NULL)
			continue;
		nitems = node->kind == DOC_LIST ? node->list.n : 1;
		for (size_t i = 0; i < nitems; i++) {
			ret = rf_item(e, pp, obj,
				      node->kind == DOC_LIST
					      ? node->list.items[i]
					      : node,
				      labels, vals, now_ns);
			if (ret < 0)
				goto cleanup;
			n += ret;
		}
	}
	ret = n;
	*dropped =
		__atomic_load_n(&pp->cnt->dropped, __ATOMIC_RELAXED) - before;
cleanup:
	free(labels);
	free(vals);
	return ret;
}

int policy_engine__collect_resource_fields(struct policy_engine *e,
					   uint64_t now_ns)
{
	int total = 0, err = 0;

	mstore__lock(e->store);
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->npols; i++) {
		struct pe_policy *pp = e->pols[i];
		size_t dropped = 0;
		int n;

		if (pp->pol->type != MP_RESOURCE_FIELDS)
			continue;
		n = rf_policy(e, pp, now_ns, &dropped);
		if (n < 0) {
			err = n;
			break;
		}
		__atomic_store_n(&pp->cnt->series, (uint64_t)n,
				 __ATOMIC_RELAXED);
		total += n;
		if (pp->nsubjects)
			contract__set_programmed(
				e->contract, pp->pol->obj_name, true,
				"Programmed",
				"%d series from %zu %s object(s)%s", n,
				pp->nsubjects, pe_impl__kind_label(pp->pol),
				dropped ? "; some dropped (dropIf, evaluation "
					  "errors or missing required labels: "
					  "see policy stats)"
					: "");
	}
	pthread_mutex_unlock(&e->lock);
	mstore__unlock(e->store);
	return err ? err : total;
}
