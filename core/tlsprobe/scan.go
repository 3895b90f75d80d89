// Package tlsprobe is the host-reading half of reading SIP sent over TLS
// at the TLS library: it finds the OpenSSL and wolfSSL libraries mapped by
// running processes (/proc/<pid>/maps, grouped by device and inode), says
// whether this process may attach uprobes (its capabilities), and frames
// the plaintext the probes read into SIP messages (frame.go) for the
// engine, which files them with input origin uprobe
// (core/packet.OriginUprobe). The eBPF side is the subpackage uprobe, the
// one core package allowed cilium/ebpf.
//
// Everything read from /proc is bounded: processes scanned, bytes read per
// maps file and in all, ELF sizes; what a bound cut is counted.
package tlsprobe

import (
	"bufio"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// Scan bounds.
const (
	MaxProcesses    = 4096     // /proc/<pid> entries read
	MaxMapsBytes    = 1 << 20  // per maps file
	MaxScanBytes    = 64 << 20 // all maps files together
	MaxLibraries    = 256      // distinct libraries kept
	maxELFBytes     = 256 << 20
	maxDynsymBytes  = 16 << 20
	maxPIDsPerEntry = 16
)

// Flavor names a TLS library family and its write/read symbols.
type Flavor struct {
	Name        string // openssl or wolfssl
	Prefix      string // file base name prefix
	WriteSymbol string
	ReadSymbol  string
	// WriteExSymbol and ReadExSymbol are the size_t variants (OpenSSL
	// 1.1.1+: SSL_write_ex(3), SSL_read_ex(3)), which some applications
	// call instead (Python's ssl module); probed too where defined.
	WriteExSymbol, ReadExSymbol string
}

// Flavors are the libraries this package knows.
var Flavors = []Flavor{
	{Name: "openssl", Prefix: "libssl.so", WriteSymbol: "SSL_write", ReadSymbol: "SSL_read", WriteExSymbol: "SSL_write_ex", ReadExSymbol: "SSL_read_ex"},
	{Name: "wolfssl", Prefix: "libwolfssl.so", WriteSymbol: "wolfSSL_write", ReadSymbol: "wolfSSL_read"},
}

// FlavorOf returns the flavor of a library path by its base name.
func FlavorOf(path string) (Flavor, bool) {
	b := filepath.Base(path)
	for _, f := range Flavors {
		if strings.HasPrefix(b, f.Prefix) {
			return f, true
		}
	}
	return Flavor{}, false
}

// Library is one mapped TLS library file.
type Library struct {
	Flavor string
	Path   string // as the mapping names it (in its process's mount namespace)
	Dev    string // major:minor as /proc/<pid>/maps writes it
	Inode  uint64
	PIDs   []int // the first processes mapping it (at most 16)
	// ProcessCount counts the processes mapping it.
	ProcessCount int
	// ProbePath opens the same file from this mount namespace ("" when no
	// path was found whose inode matches).
	ProbePath string
	// WriteSymbol and ReadSymbol are set when the dynamic symbol table
	// defines them; SymbolNote says why not otherwise. WriteExSymbol and
	// ReadExSymbol are set when it also defines the _ex variants.
	WriteSymbol, ReadSymbol     string
	WriteExSymbol, ReadExSymbol string
	SymbolNote                  string
}

// Result is one scan.
type Result struct {
	Libraries []Library
	// Scanned counts processes whose maps were read; Unreachable those
	// that could not be (gone, or not permitted); Skipped those past
	// MaxProcesses or MaxScanBytes; MapsCut the maps files cut at
	// MaxMapsBytes; LibrariesDropped those past MaxLibraries.
	Scanned, Unreachable, Skipped, MapsCut, LibrariesDropped int
	BytesRead                                                int64
}

// Scan reads procRoot (normally /proc) for mapped TLS libraries.
func Scan(procRoot string) (Result, error) {
	var res Result
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return res, fmt.Errorf("reading %s: %w", procRoot, err)
	}
	type key struct {
		dev   string
		inode uint64
	}
	byKey := map[key]*Library{}
	var order []key
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		if res.Scanned+res.Unreachable >= MaxProcesses || res.BytesRead >= MaxScanBytes {
			res.Skipped++
			continue
		}
		seen, n, cut, err := readMaps(filepath.Join(procRoot, e.Name(), "maps"), min(MaxMapsBytes, MaxScanBytes-res.BytesRead))
		res.BytesRead += n
		if err != nil {
			res.Unreachable++
			continue
		}
		res.Scanned++
		if cut {
			res.MapsCut++
		}
		for _, m := range seen {
			k := key{m.dev, m.inode}
			lib := byKey[k]
			if lib == nil {
				if len(byKey) >= MaxLibraries {
					res.LibrariesDropped++
					continue
				}
				lib = &Library{Flavor: m.flavor, Path: m.path, Dev: m.dev, Inode: m.inode}
				byKey[k] = lib
				order = append(order, k)
			}
			lib.ProcessCount++
			if len(lib.PIDs) < maxPIDsPerEntry {
				lib.PIDs = append(lib.PIDs, pid)
			}
		}
	}
	for _, k := range order {
		lib := byKey[k]
		lib.ProbePath = probePath(procRoot, lib)
		if lib.ProbePath == "" {
			lib.SymbolNote = "no path from this mount namespace reaches the mapped file"
		} else {
			lib.WriteSymbol, lib.ReadSymbol, lib.WriteExSymbol, lib.ReadExSymbol, lib.SymbolNote = symbols(lib.ProbePath, lib.Flavor)
		}
		res.Libraries = append(res.Libraries, *lib)
	}
	sort.SliceStable(res.Libraries, func(i, j int) bool { return res.Libraries[i].Path < res.Libraries[j].Path })
	return res, nil
}

type mapping struct {
	flavor, path, dev string
	inode             uint64
}

// readMaps reads one maps file (at most limit bytes) and returns its
// distinct TLS library mappings.
func readMaps(path string, limit int64) (out []mapping, n int64, cut bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	lr := &io.LimitedReader{R: f, N: limit + 1}
	sc := bufio.NewScanner(lr)
	sc.Buffer(make([]byte, 0, 4096), 8192)
	seen := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		n += int64(len(line)) + 1
		if n > limit {
			cut = true
			break
		}
		m, ok := parseMapsLine(line)
		if !ok || seen[m.dev+"/"+m.path] {
			continue
		}
		seen[m.dev+"/"+m.path] = true
		out = append(out, m)
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return out, n, cut, err
	}
	return out, min(n, limit), cut, nil
}

// parseMapsLine reads "addr perms offset dev inode path" (proc(5)).
func parseMapsLine(line string) (mapping, bool) {
	fs := strings.Fields(line)
	if len(fs) < 6 || !strings.HasPrefix(fs[5], "/") {
		return mapping{}, false
	}
	path := strings.Join(fs[5:], " ")
	path = strings.TrimSuffix(path, " (deleted)")
	fl, ok := FlavorOf(path)
	if !ok {
		return mapping{}, false
	}
	ino, err := strconv.ParseUint(fs[4], 10, 64)
	if err != nil || ino == 0 {
		return mapping{}, false
	}
	return mapping{flavor: fl.Name, path: path, dev: fs[3], inode: ino}, true
}

// probePath finds a path to the library from this mount namespace whose
// inode is the mapped one: the path itself, else through the root of a
// process mapping it (a container's file).
func probePath(procRoot string, lib *Library) string {
	cands := []string{lib.Path}
	for _, pid := range lib.PIDs {
		cands = append(cands, filepath.Join(procRoot, strconv.Itoa(pid), "root", lib.Path))
	}
	for _, c := range cands {
		st, err := os.Stat(c)
		if err != nil {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Ino == lib.Inode && devString(uint64(sys.Dev)) == lib.Dev {
			return c
		}
	}
	return ""
}

// devString writes a device number as maps does ("%02x:%02x", Linux's
// major/minor encoding, include/linux/kdev_t.h new_decode_dev).
func devString(d uint64) string {
	major := (d >> 8) & 0xfff
	minor := (d & 0xff) | ((d >> 12) & 0xfff00)
	return fmt.Sprintf("%02x:%02x", major, minor)
}

// symbols looks the flavor's write and read functions (and their _ex
// variants) up in the ELF dynamic symbol table, bounded in file and table
// size.
func symbols(path, flavor string) (write, read, writeEx, readEx, note string) {
	var fl Flavor
	for _, f := range Flavors {
		if f.Name == flavor {
			fl = f
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		return "", "", "", "", "unreadable: " + err.Error()
	}
	if st.Size() > maxELFBytes {
		return "", "", "", "", fmt.Sprintf("not read: larger than %d bytes", maxELFBytes)
	}
	ef, err := elf.Open(path)
	if err != nil {
		return "", "", "", "", "not an ELF file sipnab can read"
	}
	defer ef.Close()
	ds := ef.Section(".dynsym")
	if ds == nil {
		return "", "", "", "", "no dynamic symbol table"
	}
	if ds.Size > maxDynsymBytes {
		return "", "", "", "", fmt.Sprintf("dynamic symbol table larger than %d bytes", maxDynsymBytes)
	}
	syms, err := ef.DynamicSymbols()
	if err != nil {
		return "", "", "", "", "dynamic symbol table unreadable"
	}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Value == 0 || s.Name == "" {
			continue
		}
		switch s.Name {
		case fl.WriteSymbol:
			write = s.Name
		case fl.ReadSymbol:
			read = s.Name
		case fl.WriteExSymbol:
			writeEx = s.Name
		case fl.ReadExSymbol:
			readEx = s.Name
		}
	}
	if write == "" || read == "" {
		return "", "", "", "", fmt.Sprintf("%s or %s not defined in the dynamic symbol table", fl.WriteSymbol, fl.ReadSymbol)
	}
	if writeEx == "" || readEx == "" {
		writeEx, readEx = "", "" // the pair or neither
	}
	return write, read, writeEx, readEx, ""
}
