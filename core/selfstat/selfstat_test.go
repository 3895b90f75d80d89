package selfstat

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestReadHostBasis reads prepared procfs and cgroup v2 trees: a cgroup
// memory.max and cpu.max below the host's are the bound (basis cgroup,
// available = max - current); "max" leaves the host's figures.
func TestReadHostBasis(t *testing.T) {
	for _, tc := range []struct {
		name, memMax, cpuMax, basis string
		total, avail                uint64
		cpus                        float64
	}{
		{"cgroup limits", "1073741824", "150000 100000", "cgroup", 1 << 30, 1<<30 - 268435456, 1.5},
		{"no limit", "max", "max 100000", "host", 16384000 * 1024, 8192000 * 1024, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, cg := t.TempDir(), t.TempDir()
			writeFile(t, filepath.Join(proc, "meminfo"), "MemTotal:       16384000 kB\nMemFree:         1000 kB\nMemAvailable:    8192000 kB\n")
			writeFile(t, filepath.Join(proc, "self", "cgroup"), "0::/sipnab.slice\n")
			writeFile(t, filepath.Join(cg, "sipnab.slice", "cgroup.controllers"), "cpu memory\n")
			writeFile(t, filepath.Join(cg, "sipnab.slice", "memory.max"), tc.memMax+"\n")
			writeFile(t, filepath.Join(cg, "sipnab.slice", "memory.current"), "268435456\n")
			writeFile(t, filepath.Join(cg, "sipnab.slice", "cpu.max"), tc.cpuMax+"\n")
			oldP, oldC := procRoot, cgroupRoot
			procRoot, cgroupRoot = proc, cg
			t.Cleanup(func() { procRoot, cgroupRoot = oldP, oldC })
			h := ReadHost()
			if h.Basis != tc.basis || *h.MemoryTotal != tc.total || *h.MemoryAvailable != tc.avail {
				t.Errorf("basis %s total %d available %d; want %s %d %d", h.Basis, *h.MemoryTotal, *h.MemoryAvailable, tc.basis, tc.total, tc.avail)
			}
			if tc.cpus > 0 && *h.CPUs != tc.cpus {
				t.Errorf("cpus %v, want %v", *h.CPUs, tc.cpus)
			}
		})
	}
}

// TestReadProcessOfThisProcess: every value is read on Linux; three more
// open files are three more descriptors.
func TestReadProcessOfThisProcess(t *testing.T) {
	before := ReadProcess()
	for range 3 {
		f, err := os.Open(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
	}
	p := ReadProcess()
	if p.RSS == nil || p.Virtual == nil || p.Threads == nil || p.OpenFDs == nil || p.CPUSeconds == nil || UptimeSeconds() == nil {
		t.Fatalf("process %+v: all readable on Linux", p)
	}
	if *p.RSS == 0 || *p.RSS > *p.Virtual || *p.Threads < 1 || *p.OpenFDs != *before.OpenFDs+3 {
		t.Errorf("rss %d virtual %d threads %d fds %d (before %d)", *p.RSS, *p.Virtual, *p.Threads, *p.OpenFDs, *before.OpenFDs)
	}
}

// TestInterfaceDrops sums rx_dropped of the named interfaces, of every
// one for "any", and is absent when one cannot be read or none is named.
func TestInterfaceDrops(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "eth0", "statistics", "rx_dropped"), "7\n")
	writeFile(t, filepath.Join(dir, "lo", "statistics", "rx_dropped"), "5\n")
	old := sysNet
	sysNet = dir
	t.Cleanup(func() { sysNet = old })
	for _, tc := range []struct {
		devs []string
		want int64 // -1: absent
	}{{[]string{"eth0"}, 7}, {[]string{"any"}, 12}, {[]string{"eth9"}, -1}, {nil, -1}} {
		got := InterfaceDrops(tc.devs)
		if (got == nil) != (tc.want < 0) || (got != nil && int64(*got) != tc.want) {
			t.Errorf("%v: got %v, want %d", tc.devs, got, tc.want)
		}
	}
}
