//go:build unix

package jsiienv

import (
	"hash/fnv"
	"strconv"
	"strings"
	"syscall"
)

func setUpDirect() {
	if v, _ := syscall.Getenv(EnvRelay); v == "1" {
		return
	}
	for _, k := range []string{"JSII_NODE", "JSII_RUNTIME"} {
		if v, _ := syscall.Getenv(k); v != "" {
			return
		}
	}
	dir := directDir()
	if dir == "" {
		return
	}
	preload := dir + "/preload-" + hash(DirectPreload) + ".js"
	validation := dir + "/validation-" + hash(ValidationPreload) + ".js"
	script := strings.NewReplacer("@PRELOAD@", preload, "@VALIDATION@", validation).Replace(DirectScript)
	node := dir + "/node-" + hash(script)
	if !writeOnce(preload, DirectPreload, 0o644) || !writeOnce(validation, ValidationPreload, 0o644) ||
		!writeOnce(node, script, 0o755) {
		return
	}
	// A folder on a noexec mount holds the script but cannot run it
	// (access(2) says so for X_OK on Linux): keep the relay then.
	if syscall.Access(node, 1 /* X_OK */) != nil {
		return
	}
	if syscall.Setenv("JSII_NODE", node) == nil {
		DirectNode = node
	}
}

// directDir returns a directory for the direct mode's files that only this
// user can write (created 0700 when missing), or "" when there is none.
func directDir() string {
	base, _ := syscall.Getenv("XDG_CACHE_HOME")
	if base == "" {
		if home, _ := syscall.Getenv("HOME"); home != "" {
			base = home + "/.cache"
		}
	}
	if base == "" {
		if base, _ = syscall.Getenv("TMPDIR"); base == "" {
			base = "/tmp"
		}
	}
	dir := base + "/triggers-jsii"
	for i := 0; i < len(dir); i++ {
		if dir[i] == '\'' || dir[i] < ' ' {
			return "" // the script quotes the preload's path in '...'
		}
	}
	_ = syscall.Mkdir(base, 0o700)
	_ = syscall.Mkdir(dir, 0o700)
	var st syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR ||
		int(st.Uid) != syscall.Geteuid() || st.Mode&0o022 != 0 {
		return ""
	}
	return dir
}

// writeOnce writes content to path unless a regular file of that size is
// already there (the name carries the content's hash): into a temporary
// file first, renamed into place, so that concurrent processes never see a
// partial file.
func writeOnce(path, content string, mode uint32) bool {
	var st syscall.Stat_t
	if syscall.Lstat(path, &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFREG && st.Size == int64(len(content)) {
		return true
	}
	tmp := path + ".tmp" + strconv.Itoa(syscall.Getpid())
	fd, err := syscall.Open(tmp, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_TRUNC|syscall.O_CLOEXEC, mode)
	if err != nil {
		return false
	}
	b := []byte(content)
	for len(b) > 0 {
		n, err := syscall.Write(fd, b)
		if err != nil || n <= 0 {
			syscall.Close(fd)
			syscall.Unlink(tmp)
			return false
		}
		b = b[n:]
	}
	if syscall.Fchmod(fd, mode) != nil || syscall.Close(fd) != nil {
		syscall.Unlink(tmp)
		return false
	}
	if syscall.Rename(tmp, path) != nil {
		syscall.Unlink(tmp)
		return false
	}
	return true
}

// hash is FNV-1a of s in hex: a file name that changes with the content.
func hash(s string) string {
	h := fnv.New64a()
	h.Write([]byte(s))
	return strconv.FormatUint(h.Sum64(), 16)
}
