// Package selfstat reads what this process costs its host and what the
// host (or the cgroup limiting the process) has, from procfs, cgroup v2 and
// getrusage(2) (Linux: proc(5), Documentation/admin-guide/cgroup-v2.rst),
// and the captured interfaces' own drop counters (/sys/class/net). A value
// that cannot be read here is nil, never 0: a 0 where nothing was read
// reads as "all clear". It opens only those kernel files, never a file a
// caller names.
package selfstat

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
)

// procRoot, cgroupRoot and sysNet are the mounts read; tests point them
// elsewhere.
var (
	procRoot   = "/proc"
	cgroupRoot = "/sys/fs/cgroup"
	sysNet     = "/sys/class/net"
)

// Process is this process's cost.
type Process struct {
	// RSS and Virtual are VmRSS and VmSize, bytes; Threads the OS threads;
	// OpenFDs the open descriptors.
	RSS, Virtual, Threads, OpenFDs *uint64
	// CPUSeconds is user + system CPU time.
	CPUSeconds *float64
}

// ReadProcess reads /proc/self/status (VmRSS, VmSize, Threads), counts
// /proc/self/fd and takes the CPU time from getrusage(2).
func ReadProcess() Process {
	var p Process
	if b, err := os.ReadFile(filepath.Join(procRoot, "self", "status")); err == nil {
		kv := keyValues(b)
		p.RSS = kib(kv["VmRSS"])
		p.Virtual = kib(kv["VmSize"])
		if n, err := strconv.ParseUint(firstField(kv["Threads"]), 10, 64); err == nil {
			p.Threads = &n
		}
	}
	if f, err := os.Open(filepath.Join(procRoot, "self", "fd")); err == nil {
		names, err := f.Readdirnames(-1)
		f.Close()
		if err == nil {
			n := uint64(len(names))
			if n > 0 {
				n-- // the descriptor reading the directory
			}
			p.OpenFDs = &n
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		p.CPUSeconds = &s
	}
	return p
}

// Host is what the host, or the cgroup limiting this process, has.
type Host struct {
	// MemoryTotal and MemoryAvailable are bytes.
	MemoryTotal, MemoryAvailable *uint64
	// CPUs are the CPUs this process may use.
	CPUs *float64
	// Basis is "host", or "cgroup" when a cgroup v2 limit is the bound.
	Basis string
}

// ReadHost reads /proc/meminfo (MemTotal, MemAvailable) and the CPUs this
// process may use (its affinity); a cgroup v2 limit (memory.max, cpu.max)
// below the host's replaces it, basis "cgroup".
func ReadHost() Host {
	h := Host{Basis: "host"}
	if b, err := os.ReadFile(filepath.Join(procRoot, "meminfo")); err == nil {
		kv := keyValues(b)
		h.MemoryTotal = kib(kv["MemTotal"])
		h.MemoryAvailable = kib(kv["MemAvailable"])
	}
	n := float64(runtime.NumCPU())
	h.CPUs = &n
	dir := cgroupDir()
	if dir == "" {
		return h
	}
	if max, ok := readUint(filepath.Join(dir, "memory.max")); ok && (h.MemoryTotal == nil || max < *h.MemoryTotal) {
		t := max
		h.MemoryTotal = &t
		h.Basis = "cgroup"
		h.MemoryAvailable = nil
		if cur, ok := readUint(filepath.Join(dir, "memory.current")); ok {
			a := uint64(0)
			if cur < max {
				a = max - cur
			}
			h.MemoryAvailable = &a
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, e1 := strconv.ParseFloat(f[0], 64)
			per, e2 := strconv.ParseFloat(f[1], 64)
			if e1 == nil && e2 == nil && per > 0 && q/per < *h.CPUs {
				c := q / per
				h.CPUs = &c
				h.Basis = "cgroup"
			}
		}
	}
	return h
}

// cgroupDir is this process's cgroup v2 directory ("0::/path" in
// /proc/self/cgroup), or "" without cgroup v2.
func cgroupDir() string {
	b, err := os.ReadFile(filepath.Join(procRoot, "self", "cgroup"))
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			d := filepath.Join(cgroupRoot, filepath.Clean("/"+p))
			if _, err := os.Stat(filepath.Join(d, "cgroup.controllers")); err == nil {
				return d
			}
		}
	}
	return ""
}

// UptimeSeconds is the time since the process started: /proc/self/stat's
// starttime (clock ticks after boot, field 22) against /proc/uptime. The
// tick is USER_HZ, 100 on every Linux architecture's procfs ABI.
func UptimeSeconds() *float64 {
	st, err1 := os.ReadFile(filepath.Join(procRoot, "self", "stat"))
	up, err2 := os.ReadFile(filepath.Join(procRoot, "uptime"))
	if err1 != nil || err2 != nil {
		return nil
	}
	// comm (field 2) may hold spaces and parentheses: fields count from
	// the last ')'.
	i := bytes.LastIndexByte(st, ')')
	if i < 0 {
		return nil
	}
	f := strings.Fields(string(st[i+1:]))
	if len(f) < 20 {
		return nil
	}
	ticks, err := strconv.ParseFloat(f[19], 64) // field 22 = index 19 after comm
	if err != nil {
		return nil
	}
	boot, err := strconv.ParseFloat(firstField(string(up)), 64)
	if err != nil {
		return nil
	}
	u := boot - ticks/100
	if u < 0 {
		u = 0
	}
	return &u
}

// keyValues reads "Key:   value" lines.
func keyValues(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// kib parses "1234 kB" to bytes.
func kib(s string) *uint64 {
	n, err := strconv.ParseUint(firstField(s), 10, 64)
	if err != nil || !strings.HasSuffix(s, "kB") {
		return nil
	}
	n *= 1024
	return &n
}

func firstField(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// readUint reads a file holding one unsigned number ("max" is not one).
func readUint(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}

// InterfaceDrops sums the kernel's rx_dropped of the named interfaces
// (/sys/class/net/<dev>/statistics/rx_dropped); "any" (or "") is every
// interface. nil when one cannot be read or none is named. The kernel
// counts since the interface came up: compare two readings.
func InterfaceDrops(devs []string) *uint64 {
	if len(devs) == 0 {
		return nil
	}
	var names []string
	for _, dev := range devs {
		if dev == "any" || dev == "" {
			ents, err := os.ReadDir(sysNet)
			if err != nil {
				return nil
			}
			names = names[:0]
			for _, e := range ents {
				names = append(names, e.Name())
			}
			break
		}
		names = append(names, dev)
	}
	var n uint64
	for _, dev := range names {
		if strings.ContainsAny(dev, "/") || dev == "." || dev == ".." {
			continue
		}
		v, ok := readUint(filepath.Join(sysNet, dev, "statistics", "rx_dropped"))
		if !ok {
			return nil
		}
		n += v
	}
	return &n
}
