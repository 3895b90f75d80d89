package host

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"mime"
	"os"
	"path/filepath"
	"unicode/utf8"

	"github.com/sipnab/sipnab/sdk"
)

// maxResourceBytes bounds one read of a file resource (MAX_RESOURCE_BYTES):
// JSON-RPC carrying base64 is not a bulk transfer channel.
const maxResourceBytes = 8 << 20

// fileTemplate is the file resource template, advertised only with a root.
const fileTemplate = "sipnab:///{filename}"

// fileRootOf builds the one file sandbox (--mcp-file-root) shared by every
// bundle and the file resources. A root that is not a directory is a
// startup error. The captures the server reads (-I inputs and the files
// found under them) are protected from writes by canonical path.
func fileRootOf(cfg *Config, eng *engineHandle) (sdk.FileRoot, error) {
	dir := cfg.MCP.FileRoot
	if dir == "" {
		return sdk.FileRoot{}, nil
	}
	st, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return sdk.FileRoot{}, usagef("--mcp-file-root %q: %v (sipnab does not create it: make the directory first, e.g. mkdir -p %s)", dir, err, dir)
	}
	if err != nil {
		return sdk.FileRoot{}, usagef("--mcp-file-root %q: %w", dir, err)
	}
	if !st.IsDir() {
		return sdk.FileRoot{}, usagef("--mcp-file-root %q is not a directory", dir)
	}
	// Listing it is what the file tools and resources do; a root the
	// running user cannot read (after the privilege drop) fails here, at
	// startup, not in every later call.
	d, err := os.Open(dir)
	if err == nil {
		_, err = d.Readdirnames(1)
		_ = d.Close()
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return sdk.FileRoot{}, usagef("--mcp-file-root %q: %w", dir, err)
	}
	protected := inputsOf(cfg)
	if eng != nil && eng.capture != nil {
		for _, f := range eng.capture.Status().Files {
			protected = append(protected, f.Path)
		}
	}
	return sdk.NewFileRoot(dir, protected), nil
}

// fileResourceTemplate serves sipnab:///<filename>: a file of the root
// through the same sandbox as the file tools, at most 8 MiB, UTF-8 as text
// and anything else as a base64 blob (a lossy conversion would hand the
// model something the file does not contain). Never subscribable: sipnab is
// not a filesystem watcher.
func fileResourceTemplate(root sdk.FileRoot) sdk.ResourceTemplate {
	return sdk.ResourceTemplate{
		URITemplate: fileTemplate,
		Name:        "file in the file root",
		Description: "A file in --mcp-file-root (one path component, symlinks resolved inside the root), at most 8 MiB: UTF-8 as text, anything else base64.",
		Read: func(_ context.Context, _ string, vars map[string]string) (sdk.ResourceContent, error) {
			name := vars["filename"]
			b, err := root.ReadFile(name, maxResourceBytes)
			if err != nil {
				return sdk.ResourceContent{}, err
			}
			if utf8.Valid(b) {
				mt := mime.TypeByExtension(filepath.Ext(name))
				if mt == "" {
					mt = "text/plain; charset=utf-8"
				}
				return sdk.ResourceContent{MIMEType: mt, Text: string(b)}, nil
			}
			return sdk.ResourceContent{MIMEType: "application/octet-stream", Blob: b}, nil
		},
	}
}
