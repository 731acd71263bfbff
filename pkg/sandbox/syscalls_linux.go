package sandbox

// The system calls the recorder watches, by ABI: those that open, create, remove or rename a path, and connect
// (a connection that cannot succeed in the box: connect_linux.go). Not stat, access or readlink (probes that take
// nothing and change nothing; a CLI makes thousands), nor execve (a program the box does not have cannot be run,
// and one it has is the box's own).

// abi is one way a process calls the kernel (seccomp_data.arch) and the recorded calls' numbers in it.
type abi struct {
	arch uint32
	// x32 says that calls of this arch may carry x32SyscallBit (amd64's x32 ABI): it is masked off first.
	x32          bool
	ioUringSetup int
	calls        []syscallInfo
}

// syscallInfo is one recorded system call: where its paths and its open flags are among its arguments.
type syscallInfo struct {
	nr    int
	name  string
	paths []pathArg
	// flags is the argument holding open(2) flags, how openat2's struct open_how (whose first field they are);
	// -1 when the call has none.
	flags, how int
	// connect: the call is connect(2) (fd, addr, addrlen), recorded by where it goes rather than by a path.
	connect bool
}

// pathArg is one path argument: relative to the directory fd in argument dirfd (-1: the current directory);
// write when the call changes what the path names (create, remove, rename) rather than open it, which its open
// flags then decide; create when all it would change is to make the path, so that where the path exists it fails
// (EEXIST) having changed nothing; follow when a symbolic link as its last component is followed.
type pathArg struct {
	dirfd, path           int
	write, create, follow bool
}

// Constructors of the table's entries, one per shape of call.
func openCall(nr int, name string, dirfd, path, flags int) syscallInfo {
	return syscallInfo{nr: nr, name: name, paths: []pathArg{{dirfd: dirfd, path: path, follow: true}}, flags: flags, how: -1}
}

func openat2Call(nr int) syscallInfo {
	return syscallInfo{nr: nr, name: "openat2", paths: []pathArg{{dirfd: 0, path: 1, follow: true}}, flags: -1, how: 2}
}

func creatCall(nr int) syscallInfo {
	return syscallInfo{nr: nr, name: "creat", paths: []pathArg{{dirfd: -1, path: 0, write: true, follow: true}}, flags: -1, how: -1}
}

// changeCall is a call that changes one path (unlink, rmdir, truncate), at (dirfd, path).
func changeCall(nr int, name string, dirfd, path int, follow bool) syscallInfo {
	return syscallInfo{nr: nr, name: name, paths: []pathArg{{dirfd: dirfd, path: path, write: true, follow: follow}}, flags: -1, how: -1}
}

// makeCall is a call that makes one path (mkdir, mknod, symlink), at (dirfd, path).
func makeCall(nr int, name string, dirfd, path int) syscallInfo {
	return syscallInfo{nr: nr, name: name, paths: []pathArg{{dirfd: dirfd, path: path, write: true, create: true}}, flags: -1, how: -1}
}

// twoPathCall is rename or link: from (odirfd, opath) to (ndirfd, npath). A rename changes both; a link makes
// the new one and only reads the old (a link to a hidden file is still a way to it).
func twoPathCall(nr int, name string, odirfd, opath, ndirfd, npath int, rename bool) syscallInfo {
	return syscallInfo{nr: nr, name: name, paths: []pathArg{{dirfd: odirfd, path: opath, write: rename},
		{dirfd: ndirfd, path: npath, write: true, create: !rename}}, flags: -1, how: -1}
}

// connectCall is connect(2).
func connectCall(nr int) syscallInfo {
	return syscallInfo{nr: nr, name: "connect", flags: -1, how: -1, connect: true}
}
