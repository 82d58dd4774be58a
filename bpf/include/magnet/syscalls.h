/* Syscall numbers (x86_64) of the calls that move an application's data on a
 * socket: one app call each, counted at its exit by the recorder and magnetd
 * alike (docs/FORMAT.md). */
#ifndef MAGNET_SYSCALLS_H
#define MAGNET_SYSCALLS_H

#define NR_read 0
#define NR_write 1
#define NR_readv 19
#define NR_writev 20
#define NR_sendfile 40
#define NR_sendto 44
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_splice 275
#define NR_recvmmsg 299
#define NR_sendmmsg 307

#endif
