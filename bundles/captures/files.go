package captures

import (
	"os"
	"strings"

	"github.com/sipnab/sipnab/core/capture"
	"github.com/sipnab/sipnab/sdk"
)

// captureExts are the file names list_captures takes for captures: pcap,
// pcapng and cap, each also gzip-compressed (core/capture reads all six;
// the format is recognized by the leading bytes, never by the name).
// Archives (.tar, .tgz, .zip) are not read by this build.
var captureExts = []string{".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz"}

// isCaptureName reports whether a file name ends in a capture extension
// (ASCII case-insensitive).
func isCaptureName(name string) bool {
	l := strings.ToLower(name)
	for _, e := range captureExts {
		if strings.HasSuffix(l, e) && len(l) > len(e) {
			return true
		}
	}
	return false
}

// openCapture opens a capture file of the root (sdk.FileRoot.Open: one
// path component, beneath the root, a regular file) and reads its file
// header. Frames carry name as their source, as the engine's file load
// names them (the file's base name). The caller closes both.
func openCapture(root sdk.FileRoot, name string) (*capture.Reader, *os.File, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, nil, err
	}
	r, err := capture.NewReader(f, capture.Options{Name: name})
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return r, f, nil
}

// clipReason bounds a reader's error shown in an answer (MAX_REASON_CHARS,
// 200 characters, as find_in_captures cuts an unreadable file's reason).
func clipReason(s string) string {
	const max = 200
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// needRoot refuses a file tool on a server started without
// --mcp-file-root, before any argument is looked at (the tool stays listed;
// mcp-surface §1.3), in the sandbox's own words: a disabled root refuses
// every method with its not_enabled error, touching no filesystem.
func (d *deps) needRoot() error {
	if d.root.Enabled() {
		return nil
	}
	_, err := d.root.List(1)
	return err
}
