// SPDX-License-Identifier: Apache-2.0
/*
 * cgroup_id_probe ROOT POD_UID QOS_CLASS CONTAINER_ID
 *
 * Ground truth for pod_cgroup__find(): run this inside the container's
 * cgroup (the test moves it there). It prints
 *   found=<id from pod_cgroup__find> bpf=<bpf_get_current_cgroup_id()>
 *   ino=<st_ino of the found directory> dir=<found directory>
 * The BPF side is a five-instruction BPF_PROG_TYPE_SYSCALL program run with
 * BPF_PROG_TEST_RUN, which runs in the calling task, so the helper reports
 * this process's cgroup exactly as the agent's tracing programs would see
 * the proxy's. Raw bpf(2), no libbpf: the tool links like the other tools.
 * Exit 0 when all three agree, 1 when they differ, 2 on an error.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent/node/pod_cgroup.h"

static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return (int)syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

/* The calling task's cgroup v2 id, as a BPF program sees it. */
static int bpf_cgroup_id(uint64_t *out)
{
	const struct bpf_insn prog[] = {
		/* r6 = ctx */
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X,
		  .dst_reg = 6,
		  .src_reg = 1 },
		{ .code = BPF_JMP | BPF_CALL,
		  .imm = BPF_FUNC_get_current_cgroup_id },
		/* *(u64 *)(r6 + 0) = r0 */
		{ .code = BPF_STX | BPF_MEM | BPF_DW,
		  .dst_reg = 6,
		  .src_reg = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	char log[4096] = "";
	union bpf_attr a;
	uint64_t ctx = 0;
	int fd, ret;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SYSCALL;
	a.prog_flags = BPF_F_SLEEPABLE; /* syscall programs must be */
	a.insns = (uintptr_t)prog;
	a.insn_cnt = sizeof(prog) / sizeof(prog[0]);
	a.license = (uintptr_t) "GPL";
	a.log_buf = (uintptr_t)log;
	a.log_size = sizeof(log);
	a.log_level = 1;
	fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (fd < 0) {
		ret = -errno;
		fprintf(stderr, "cgroup_id_probe: BPF_PROG_LOAD: %s\n%s\n",
			strerror(errno), log);
		return ret;
	}
	memset(&a, 0, sizeof(a));
	a.test.prog_fd = fd;
	a.test.ctx_in = (uintptr_t)&ctx;
	a.test.ctx_size_in = sizeof(ctx);
	ret = sys_bpf(BPF_PROG_TEST_RUN, &a) ? -errno : 0;
	if (ret)
		fprintf(stderr, "cgroup_id_probe: BPF_PROG_TEST_RUN: %s\n",
			strerror(-ret));
	close(fd);
	*out = ctx;
	return ret;
}

int main(int argc, char **argv)
{
	struct pod_container_id c;
	enum pod_qos qos;
	char dir[4096];
	uint64_t found = 0, seen = 0;
	struct stat st;
	int r;

	if (argc != 5) {
		fprintf(stderr,
			"usage: cgroup_id_probe ROOT POD_UID QOS_CLASS CONTAINER_ID\n");
		return 2;
	}
	if (pod_cgroup__parse_qos(argv[3], &qos) ||
	    pod_cgroup__parse_container_id(argv[4], &c)) {
		fprintf(stderr,
			"cgroup_id_probe: bad QoS class or container id\n");
		return 2;
	}
	r = pod_cgroup__find(argv[1], argv[2], qos, &c, dir, sizeof(dir),
			     &found);
	if (r) {
		fprintf(stderr, "cgroup_id_probe: pod_cgroup__find: %s\n",
			strerror(-r));
		return 2;
	}
	if (stat(dir, &st) || bpf_cgroup_id(&seen))
		return 2;
	printf("found=%" PRIu64 " bpf=%" PRIu64 " ino=%" PRIu64 " dir=%s\n",
	       found, seen, (uint64_t)st.st_ino, dir);
	return found == seen && seen == (uint64_t)st.st_ino ? 0 : 1;
}
