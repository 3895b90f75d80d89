//go:build linux

package tlsprobe

import (
	"golang.org/x/sys/unix"
)

// Capability numbers (include/uapi/linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// Privileged reports whether this process may load tracing BPF programs
// and open uprobe perf events: CAP_SYS_ADMIN, or CAP_BPF with
// CAP_PERFMON (Linux 5.8+), in its effective set. why says what is
// missing when it may not.
func Privileged() (ok bool, why string) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false, "the process's capabilities could not be read: " + err.Error()
	}
	has := func(c uint) bool { return data[c/32].Effective&(1<<(c%32)) != 0 }
	if has(capSysAdmin) || (has(capBPF) && has(capPerfmon)) {
		return true, ""
	}
	return false, "sipnab lacks CAP_SYS_ADMIN (or CAP_BPF with CAP_PERFMON): run it as root; the HTTP transport drops root to --user before serving"
}
