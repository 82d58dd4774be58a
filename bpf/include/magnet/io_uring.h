/* io_uring requests that move an application's data on a socket: one app
 * call each, counted at its completion by the recorder and magnetd alike
 * (docs/FORMAT.md). Opcodes from include/uapi/linux/io_uring.h (stable ABI;
 * the trailing _ keeps them apart from vmlinux.h's enum). */
#ifndef MAGNET_IO_URING_H
#define MAGNET_IO_URING_H

#define IORING_OP_READV_ 1
#define IORING_OP_WRITEV_ 2
#define IORING_OP_SENDMSG_ 9
#define IORING_OP_RECVMSG_ 10
#define IORING_OP_READ_ 22
#define IORING_OP_WRITE_ 23
#define IORING_OP_SEND_ 26
#define IORING_OP_RECV_ 27
#define IORING_OP_SEND_ZC_ 47
#define IORING_OP_SENDMSG_ZC_ 48
#define IORING_CQE_F_MORE_ 2
#define IORING_CQE_F_NOTIF_ 8

/* 1: a request that sends, 0: one that receives, -1: neither. */
static __always_inline int mg_uring_dir(__u8 op)
{
	if (op == IORING_OP_SEND_ || op == IORING_OP_SENDMSG_ || op == IORING_OP_SEND_ZC_ ||
	    op == IORING_OP_SENDMSG_ZC_ || op == IORING_OP_WRITE_ || op == IORING_OP_WRITEV_)
		return 1;
	if (op == IORING_OP_RECV_ || op == IORING_OP_RECVMSG_ || op == IORING_OP_READ_ ||
	    op == IORING_OP_READV_)
		return 0;
	return -1;
}

#endif
