package server

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

// What runtime_stats reads of the process and its host, from procfs and
// cgroup v2 (Linux, proc(5), Documentation/admin-guide/cgroup-v2.rst). A
// value that cannot be read here is nil, never 0 (the answer omits it).

// procRoot and cgroupRoot are the mounts read; tests point them elsewhere.
var (
	procRoot   = "/proc"
	cgroupRoot = "/sys/fs/cgroup"
)

type processStats struct {
	rss, virt, threads, fds *uint64
	cpu                     *float64
}

// readProcess reads /proc/self/status (VmRSS, VmSize, Threads), counts
// /proc/self/fd and takes the CPU time from getrusage(2).
func readProcess() processStats {
	var p processStats
	if b, err := os.ReadFile(filepath.Join(procRoot, "self", "status")); err == nil {
		kv := keyValues(b)
		p.rss = kib(kv["VmRSS"])
		p.virt = kib(kv["VmSize"])
		if n, err := strconv.ParseUint(firstField(kv["Threads"]), 10, 64); err == nil {
			p.threads = &n
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
			p.fds = &n
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		s := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		p.cpu = &s
	}
	return p
}

type hostStats struct {
	total, available *uint64
	cpus             *float64
	basis            string // "host" or "cgroup"
}

// readHost reads /proc/meminfo (MemTotal, MemAvailable) and the CPUs this
// process may use; a cgroup v2 limit (memory.max, cpu.max) below the host's
// replaces it, basis "cgroup".
func readHost() hostStats {
	h := hostStats{basis: "host"}
	if b, err := os.ReadFile(filepath.Join(procRoot, "meminfo")); err == nil {
		kv := keyValues(b)
		h.total = kib(kv["MemTotal"])
		h.available = kib(kv["MemAvailable"])
	}
	n := float64(runtime.NumCPU())
	h.cpus = &n
	dir := cgroupDir()
	if dir == "" {
		return h
	}
	if max, ok := readUint(filepath.Join(dir, "memory.max")); ok && (h.total == nil || max < *h.total) {
		t := max
		h.total = &t
		h.basis = "cgroup"
		h.available = nil
		if cur, ok := readUint(filepath.Join(dir, "memory.current")); ok {
			a := uint64(0)
			if cur < max {
				a = max - cur
			}
			h.available = &a
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] != "max" {
			q, e1 := strconv.ParseFloat(f[0], 64)
			per, e2 := strconv.ParseFloat(f[1], 64)
			if e1 == nil && e2 == nil && per > 0 && q/per < *h.cpus {
				c := q / per
				h.cpus = &c
				h.basis = "cgroup"
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

// uptimeSeconds is the time since the process started: /proc/self/stat's
// starttime (clock ticks after boot, field 22) against /proc/uptime. The
// tick is USER_HZ, 100 on every Linux architecture's procfs ABI.
func uptimeSeconds() *float64 {
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
