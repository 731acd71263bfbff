package sandbox

import "golang.org/x/sys/unix"

// nativeABIs are amd64's: x86-64 with x32 (same numbers for these calls, with x32SyscallBit), and i386, whose
// numbers x/sys has only in its 386 build (zsysnum_linux_386.go): a 32-bit call is no way around the recorder.
func nativeABIs() []abi {
	x86_64 := abi{arch: unix.AUDIT_ARCH_X86_64, x32: true, ioUringSetup: unix.SYS_IO_URING_SETUP, calls: []syscallInfo{
		openCall(unix.SYS_OPEN, "open", -1, 0, 1),
		openCall(unix.SYS_OPENAT, "openat", 0, 1, 2),
		openat2Call(unix.SYS_OPENAT2),
		creatCall(unix.SYS_CREAT),
		makeCall(unix.SYS_MKDIR, "mkdir", -1, 0),
		makeCall(unix.SYS_MKDIRAT, "mkdirat", 0, 1),
		makeCall(unix.SYS_MKNOD, "mknod", -1, 0),
		makeCall(unix.SYS_MKNODAT, "mknodat", 0, 1),
		changeCall(unix.SYS_RMDIR, "rmdir", -1, 0, false),
		changeCall(unix.SYS_UNLINK, "unlink", -1, 0, false),
		changeCall(unix.SYS_UNLINKAT, "unlinkat", 0, 1, false),
		changeCall(unix.SYS_TRUNCATE, "truncate", -1, 0, true),
		makeCall(unix.SYS_SYMLINK, "symlink", -1, 1),
		makeCall(unix.SYS_SYMLINKAT, "symlinkat", 1, 2),
		twoPathCall(unix.SYS_RENAME, "rename", -1, 0, -1, 1, true),
		twoPathCall(unix.SYS_RENAMEAT, "renameat", 0, 1, 2, 3, true),
		twoPathCall(unix.SYS_RENAMEAT2, "renameat2", 0, 1, 2, 3, true),
		twoPathCall(unix.SYS_LINK, "link", -1, 0, -1, 1, false),
		twoPathCall(unix.SYS_LINKAT, "linkat", 0, 1, 2, 3, false),
		connectCall(unix.SYS_CONNECT),
	}}
	i386 := abi{arch: unix.AUDIT_ARCH_I386, ioUringSetup: 425, calls: []syscallInfo{
		openCall(5, "open", -1, 0, 1),
		openCall(295, "openat", 0, 1, 2),
		openat2Call(437),
		creatCall(8),
		makeCall(39, "mkdir", -1, 0),
		makeCall(296, "mkdirat", 0, 1),
		makeCall(14, "mknod", -1, 0),
		makeCall(297, "mknodat", 0, 1),
		changeCall(40, "rmdir", -1, 0, false),
		changeCall(10, "unlink", -1, 0, false),
		changeCall(301, "unlinkat", 0, 1, false),
		changeCall(92, "truncate", -1, 0, true),
		changeCall(193, "truncate64", -1, 0, true),
		makeCall(83, "symlink", -1, 1),
		makeCall(304, "symlinkat", 1, 2),
		twoPathCall(38, "rename", -1, 0, -1, 1, true),
		twoPathCall(302, "renameat", 0, 1, 2, 3, true),
		twoPathCall(353, "renameat2", 0, 1, 2, 3, true),
		twoPathCall(9, "link", -1, 0, -1, 1, false),
		twoPathCall(303, "linkat", 0, 1, 2, 3, false),
		connectCall(362), // not through socketcall(2), which older 32-bit programs use
	}}
	return []abi{x86_64, i386}
}
