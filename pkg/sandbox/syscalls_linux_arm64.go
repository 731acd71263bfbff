package sandbox

import "golang.org/x/sys/unix"

// nativeABIs are arm64's: only the *at calls exist. A 32-bit (AArch32) call, where the kernel has them at all,
// is not recorded.
func nativeABIs() []abi {
	return []abi{{arch: unix.AUDIT_ARCH_AARCH64, ioUringSetup: unix.SYS_IO_URING_SETUP, calls: []syscallInfo{
		openCall(unix.SYS_OPENAT, "openat", 0, 1, 2),
		openat2Call(unix.SYS_OPENAT2),
		makeCall(unix.SYS_MKDIRAT, "mkdirat", 0, 1),
		makeCall(unix.SYS_MKNODAT, "mknodat", 0, 1),
		changeCall(unix.SYS_UNLINKAT, "unlinkat", 0, 1, false),
		changeCall(unix.SYS_TRUNCATE, "truncate", -1, 0, true),
		makeCall(unix.SYS_SYMLINKAT, "symlinkat", 1, 2),
		twoPathCall(unix.SYS_RENAMEAT, "renameat", 0, 1, 2, 3, true),
		twoPathCall(unix.SYS_RENAMEAT2, "renameat2", 0, 1, 2, 3, true),
		twoPathCall(unix.SYS_LINKAT, "linkat", 0, 1, 2, 3, false),
		connectCall(unix.SYS_CONNECT),
	}}}
}
