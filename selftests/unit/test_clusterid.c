// SPDX-License-Identifier: Apache-2.0
/* Cluster identity from ClusterProperty objects (KEP-2149 About API). */
#include "policy/contract/cluster_id.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

/* name and value are strings: a formatter would space a stringized a-b */
#define PROP(name, value)                                                      \
	"apiVersion: about.k8s.io/v1alpha1\n"                                  \
	"kind: ClusterProperty\n"                                              \
	"metadata: {name: " name "}\n"                                         \
	"spec: {value: " value "}\n"

TEST(clusterid_dns_label_rules)
{
	static const char *const good[] = {
		"a",
		"edge-eu-west-1",
		"0cluster",
		"x1",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabc",
	};
	static const char *const bad[] = {
		"",
		"-a",
		"a-",
		"Edge",
		"a_b",
		"a.b",
		"a b",
		"abcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcdefghijabcd",
	};

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ASSERT_TRUE(cluster_id__valid_id(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(!cluster_id__valid_id(bad[i]), "%s", bad[i]);
	ASSERT_TRUE(!cluster_id__valid_id(NULL));
	ASSERT_TRUE(cluster_id__valid_clusterset("milo-prod"));
	ASSERT_TRUE(
		cluster_id__valid_clusterset("prod.clusterset.example.com"));
	ASSERT_TRUE(!cluster_id__valid_clusterset("Prod"));
	ASSERT_TRUE(!cluster_id__valid_clusterset("a..b"));
	ASSERT_TRUE(!cluster_id__valid_clusterset(""));
}

TEST(clusterid_read_and_attach)
{
	struct cluster_identity ci;
	struct mlabel attrs[2];
	struct tc_ctx t;

	ASSERT_EQ(tc_open1(&t,
			   "deploy/examples/contract-clusterproperties.yaml"),
		  0);
	contract__cluster(t.c, &ci);
	ASSERT_STREQ(ci.id, "edge-eu-west-1");
	ASSERT_STREQ(ci.clusterset, "milo-prod");
	ASSERT_EQ(cluster_id__attrs(&ci, attrs), 2);
	ASSERT_STREQ(attrs[0].key, "k8s.cluster.id");
	ASSERT_STREQ(attrs[0].value, "edge-eu-west-1");
	ASSERT_STREQ(attrs[1].key, "k8s.clusterset.name");
	ASSERT_STREQ(attrs[1].value, "milo-prod");
	ASSERT_STREQ(tc_status(&t, "ClusterProperty",
			       "cluster.clusterset.k8s.io", COND_ACCEPTED),
		     "True");
	ASSERT_EQ(contract__rejected(t.c), 0);
	tc_close(&t);
}

TEST(clusterid_invalid_or_missing_not_used)
{
	const char *dir = test__tmpdir();
	struct cluster_identity ci;
	struct mlabel attrs[2];
	struct tc_ctx t;

	/* missing: nothing attached, nothing rejected */
	tc_write(dir, "other.yaml", PROP("other.example.com", "x"));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	contract__cluster(t.c, &ci);
	ASSERT_EQ(cluster_id__attrs(&ci, attrs), 0);
	ASSERT_EQ(contract__rejected(t.c), 0);
	ASSERT_TRUE(!ci.id_invalid);

	/* invalid: reported with file:line, not attached; set still is */
	tc_write(dir, "id.yaml",
		 PROP("cluster.clusterset.k8s.io", "Edge_EU") "---\n" PROP(
			 "clusterset.k8s.io", "milo-prod"));
	ASSERT_EQ(tc_reload(&t), 1);
	contract__cluster(t.c, &ci);
	ASSERT_TRUE(ci.id_invalid);
	ASSERT_EQ(cluster_id__attrs(&ci, attrs), 1);
	ASSERT_STREQ(attrs[0].key, "k8s.clusterset.name");
	ASSERT_TRUE(strstr(ci.problem, "id.yaml:4:"), "%s", ci.problem);
	ASSERT_STREQ(tc_reason(&t, "ClusterProperty",
			       "cluster.clusterset.k8s.io", COND_ACCEPTED),
		     "InvalidClusterID");
	ASSERT_EQ(contract__rejected(t.c), 1);

	/* fixed at run time: picked up on reload */
	tc_write(dir, "id.yaml",
		 PROP("cluster.clusterset.k8s.io", "edge-eu-2") "---\n" PROP(
			 "clusterset.k8s.io", "milo-prod"));
	ASSERT_EQ(tc_reload(&t), 1);
	contract__cluster(t.c, &ci);
	ASSERT_STREQ(ci.id, "edge-eu-2");
	ASSERT_TRUE(!ci.id_invalid);
	ASSERT_EQ(contract__rejected(t.c), 0);

	/* a number is not a string */
	tc_write(dir, "id.yaml", PROP("cluster.clusterset.k8s.io", "42"));
	ASSERT_EQ(tc_reload(&t), 1);
	contract__cluster(t.c, &ci);
	ASSERT_STREQ(ci.id, "");
	ASSERT_STREQ(tc_reason(&t, "ClusterProperty",
			       "cluster.clusterset.k8s.io", COND_ACCEPTED),
		     "InvalidField");
	tc_close(&t);
}

TEST(clusterid_shown_by_check_view)
{
	char *out = NULL;
	size_t len;
	struct tc_ctx t;
	FILE *f;

	ASSERT_EQ(tc_open1(&t,
			   "deploy/examples/contract-clusterproperties.yaml"),
		  0);
	f = open_memstream(&out, &len);
	ASSERT_EQ(contract__render(t.c, f, 0), 0);
	fclose(f);
	ASSERT_TRUE(
		strstr(out,
		       "cluster: k8s.cluster.id=edge-eu-west-1 k8s.clusterset.name=milo-prod"),
		"%s", out);
	free(out);
	f = open_memstream(&out, &len);
	ASSERT_EQ(contract__render(t.c, f, CONTRACT_RENDER_JSON), 0);
	fclose(f);
	ASSERT_TRUE(
		strstr(out,
		       "\"cluster\":{\"k8s.cluster.id\":\"edge-eu-west-1\""),
		"%s", out);
	free(out);
	tc_close(&t);
}
