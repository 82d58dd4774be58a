// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * magnet's recorder: one program per kernel hook, grouped by layer. User space
 * turns off autoload for the layers it was not asked for, so an unselected layer
 * costs nothing. Every program follows the same path:
 *
 *   filter (cheap map lookups, nothing formatted) -> count -> reserve -> fill -> submit
 *
 * The ring buffer is submitted without waking the reader unless enough bytes
 * are queued: the kernel's per-record wake-up is the dominant cost of a
 * ring-buffer event (measured ~1.2-1.7 us per event woken per record against
 * ~0.2 us batched; docs/kernel-notes.md), and the reader polls anyway.
 *
 * This file only includes the others, in this order (each uses what the ones
 * before it define; one object, one skeleton):
 *
 *   prog.h         how a program is defined; the floor build (MG_PROF=9)
 *   state.bpf.c    settings fixed before load, and the maps the layers share
 *   batch.bpf.c    record header, loss counts, per-CPU batches, RESERVE/submit
 *   filter.bpf.c   task, port/host, netns and pcap-filter (record -f) filters
 *   sock.bpf.c     socket tuples, cookies and keys, SOCK records, sock_traced
 *   pkt.bpf.c      packet headers, packet ids, flows, pkt_traced
 *   app.bpf.c      layer app          tcp.bpf.c    layer tcp
 *   ip.bpf.c       layer ip           dev.bpf.c    layers qdisc, dev, drop
 *   sched.bpf.c    layer sched
 *   hooks_fn.bpf.c the same records from other hooks, for older kernels
 *   funcs.bpf.c    record --funcs: function entry and exit
 *
 * The helpers the daemon and the sampler share with it are in
 * bpf/include/magnet/, the records themselves too (magnet/events.h, owned by
 * the trace format: magnet-trace generates its views from it).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "magnet/consts.h"
#include "magnet/sock.h"
#include "magnet/syscalls.h"
#include "magnet/io_uring.h"
#include "magnet/events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#include "prog.h"
#include "state.bpf.c"
#include "batch.bpf.c"
#include "filter.bpf.c"
#include "sock.bpf.c"
#include "pkt.bpf.c"
#include "app.bpf.c"
#include "tcp.bpf.c"
#include "ip.bpf.c"
#include "dev.bpf.c"
#include "sched.bpf.c"
#include "hooks_fn.bpf.c"
#include "funcs.bpf.c"
