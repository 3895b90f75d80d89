package tls

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"

	"github.com/sipnab/sipnab/core/engine"
	"github.com/sipnab/sipnab/internal/tlspeer"
)

func TestListTLSLibrariesFindsTheLibsslARealOpenSSLServerMaps(t *testing.T) {
	srv := tlspeer.Start(t)
	var out Libraries
	call(t, tools(t, engine.New(engine.Config{}, nil), nil)["list_tls_libraries"], `{}`, &out)
	if !out.Supported || out.ProcessesScanned == 0 {
		t.Fatalf("supported %v, scanned %d", out.Supported, out.ProcessesScanned)
	}
	var lib *Library
	for i, l := range out.Libraries {
		if l.Flavor == "openssl" && slices.Contains(l.PIDs, srv.PID) {
			lib = &out.Libraries[i]
		}
	}
	if lib == nil {
		t.Fatalf("no openssl row maps pid %d: %+v", srv.PID, out.Libraries)
	}
	// the row's inode is the file's: checked with stat(2) on probe_path
	if lib.ProbePath == nil || !lib.Probeable || lib.Symbol != "SSL_write" || lib.ReadSymbol != "SSL_read" {
		t.Fatalf("row %+v", *lib)
	}
	st, err := os.Stat(*lib.ProbePath)
	if err != nil || st.Sys().(*syscall.Stat_t).Ino != lib.Inode || lib.ProcessCount < 1 {
		t.Fatalf("row %+v, stat %v", *lib, err)
	}
}

func TestListTLSLibrariesSaysWhyALibraryCannotBeProbedAndCountsUnreachableProcesses(t *testing.T) {
	proc := t.TempDir()
	// pid 100 maps a wolfSSL file that exists in no mount namespace here
	// (its /proc/100/root does not exist either); pid 200 has no maps
	// file (a process gone meanwhile); "self" is not a pid.
	maps := "7f0000000000-7f0000001000 r-xp 00000000 08:01 4242 /opt/gone/lib/libwolfssl.so.42\n" +
		"7f0000001000-7f0000002000 r--p 00001000 08:01 4242 /opt/gone/lib/libwolfssl.so.42\n" +
		"7f0000002000-7f0000003000 r-xp 00000000 08:01 99 /usr/lib/libc.so.6\n"
	for _, p := range []string{"100", "200", "self"} {
		if err := os.MkdirAll(filepath.Join(proc, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proc, "100", "maps"), []byte(maps), 0o644); err != nil {
		t.Fatal(err)
	}
	old := procRoot
	procRoot = proc
	t.Cleanup(func() { procRoot = old })
	ts := tools(t, engine.New(engine.Config{}, nil), nil)
	var out Libraries
	call(t, ts["list_tls_libraries"], `{}`, &out)
	if len(out.Libraries) != 1 || out.UnreachableCount != 1 || out.ProcessesScanned != 1 || out.Complete {
		t.Fatalf("answer %+v", out)
	}
	l := out.Libraries[0]
	if l.Flavor != "wolfssl" || l.Inode != 4242 || l.Device != "08:01" || l.ProcessCount != 1 || l.ProbePath != nil || l.Probeable || l.SymbolNote == "" {
		t.Fatalf("row %+v", l)
	}
}
