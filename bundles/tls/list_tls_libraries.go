package tls

import (
	"context"
	"fmt"

	"github.com/sipnab/sipnab/bundles/internal/answer"
	"github.com/sipnab/sipnab/core/tlsprobe"
	"github.com/sipnab/sipnab/core/tlsprobe/uprobe"
	"github.com/sipnab/sipnab/sdk"
)

// Library is one mapped TLS library file (one device and inode).
type Library struct {
	Flavor string `json:"flavor" enum:"openssl|wolfssl" desc:"library family, by file name"`
	// Path is the file as the mapping names it, in the mount namespace of
	// the processes mapping it (a container's own path).
	Path         string `json:"path" desc:"the mapped file's path, as its processes see it"`
	Inode        uint64 `json:"inode" desc:"the file's inode (libraries are grouped by device and inode)"`
	Device       string `json:"device" desc:"major:minor of the file's device"`
	ProcessCount int    `json:"process_count" desc:"processes mapping it"`
	PIDs         []int  `json:"pids" desc:"the first processes mapping it (at most 16)"`
	// Symbol is the write function found in the dynamic symbol table
	// (absent when the file cannot be probed: symbol_note says why).
	Symbol     string `json:"symbol,omitempty" desc:"write function found: SSL_write or wolfSSL_write"`
	ReadSymbol string `json:"read_symbol,omitempty" desc:"read function found: SSL_read or wolfSSL_read"`
	SymbolNote string `json:"symbol_note,omitempty" desc:"why the library cannot be probed"`
	// ProbePath is a path reaching the same inode from sipnab's mount
	// namespace (/proc/<pid>/root/... for a container's file); null when
	// none does.
	ProbePath *string `json:"probe_path" desc:"path start_tls_capture opens; null: unreachable from here"`
	Probeable bool    `json:"probeable" desc:"probe_path and both symbols found"`
}

// Libraries is the answer of list_tls_libraries.
type Libraries struct {
	Supported     bool      `json:"supported" desc:"this build can attach uprobes (Linux on amd64)"`
	Privileged    bool      `json:"privileged" desc:"sipnab may load BPF and open uprobes (root, or CAP_BPF with CAP_PERFMON)"`
	PrivilegeNote string    `json:"privilege_note,omitempty" desc:"what privilege is missing"`
	Libraries     []Library `json:"libraries" nonnull:"true" desc:"mapped TLS libraries, by path"`
	// UnreachableCount counts processes whose maps could not be read
	// (gone meanwhile, or not permitted): their libraries are not listed.
	UnreachableCount int `json:"unreachable_count" desc:"processes whose maps could not be read"`
	ProcessesScanned int `json:"processes_scanned" desc:"processes whose maps were read"`
	// ProcessesSkipped, MapsCut and LibrariesDropped are what the scan's
	// bounds cut (core/tlsprobe: 4096 processes, 1 MiB per maps file,
	// 64 MiB in all, 256 libraries).
	ProcessesSkipped int    `json:"processes_skipped" desc:"processes past the scan's bounds (4096 processes, 64 MiB of maps)"`
	MapsCut          int    `json:"maps_cut" desc:"maps files cut at 1 MiB"`
	LibrariesDropped int    `json:"libraries_dropped" desc:"mappings past 256 distinct libraries"`
	Complete         bool   `json:"complete" desc:"every process was read whole"`
	Summary          string `json:"summary" desc:"one line"`
}

var _ = addTool(func(d *deps) sdk.Tool {
	return sdk.NewTool(sdk.Descriptor{
		Name:  "list_tls_libraries",
		Title: "List TLS libraries",
		Description: "OpenSSL (libssl) and wolfSSL libraries mapped by running processes (from /proc/*/maps, grouped by inode): " +
			"whether start_tls_capture can probe each (probe_path, SSL_write/SSL_read found), and whether sipnab is privileged to.",
		Annotations: sdk.Annotations{Effect: sdk.ReadOnly, World: sdk.ClosedWorld},
		Examples:    []sdk.Example{{Title: "TLS libraries mapped on this host"}},
	}, func(ctx context.Context, c *sdk.Call, in struct{}) (Libraries, error) {
		return listLibraries(d)
	})
})

func listLibraries(d *deps) (Libraries, error) {
	res, err := tlsprobe.Scan(d.procRoot)
	if err != nil {
		return Libraries{}, sdk.Internal("list_tls_libraries: %v", err)
	}
	out := Libraries{Supported: uprobe.Supported, UnreachableCount: res.Unreachable, ProcessesScanned: res.Scanned,
		ProcessesSkipped: res.Skipped, MapsCut: res.MapsCut, LibrariesDropped: res.LibrariesDropped}
	out.Privileged, out.PrivilegeNote = tlsprobe.Privileged()
	out.Complete = res.Unreachable == 0 && res.Skipped == 0 && res.MapsCut == 0 && res.LibrariesDropped == 0
	probeable := 0
	for _, l := range res.Libraries {
		row := libraryRow(l)
		if row.Probeable {
			probeable++
		}
		out.Libraries = append(out.Libraries, row)
	}
	out.Summary = fmt.Sprintf("%d TLS librar%s mapped, %d probeable, in %d processes read (%d unreachable)",
		len(out.Libraries), plural(len(out.Libraries), "y", "ies"), probeable, res.Scanned, res.Unreachable)
	switch {
	case !out.Supported:
		out.Summary += "; this build cannot attach uprobes"
	case !out.Privileged:
		out.Summary += "; sipnab is not privileged to attach uprobes"
	}
	return out, nil
}

// libraryRow renders one scanned library; paths are host file names, shown
// with the fence's hygiene (a container may name anything).
func libraryRow(l tlsprobe.Library) Library {
	row := Library{Flavor: l.Flavor, Path: answer.Unfenced(l.Path), Inode: l.Inode, Device: l.Dev,
		ProcessCount: l.ProcessCount, PIDs: l.PIDs, Symbol: l.WriteSymbol, ReadSymbol: l.ReadSymbol, SymbolNote: l.SymbolNote}
	if l.ProbePath != "" {
		p := answer.Unfenced(l.ProbePath)
		row.ProbePath = &p
	}
	row.Probeable = l.ProbePath != "" && l.WriteSymbol != "" && l.ReadSymbol != ""
	return row
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
