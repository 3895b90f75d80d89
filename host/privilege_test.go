package host

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"
)

// TestPermissionErrorAfterTheDropNamesUser: a permission error met after
// sipnab dropped root names the user it runs as and --user; a port below
// 1024 says why; any other error, or one met without a drop, is unchanged.
func TestPermissionErrorAfterTheDropNamesUser(t *testing.T) {
	openErr := fmt.Errorf("loading capture: %w", &fs.PathError{Op: "open", Path: "/srv/c.pcap", Err: syscall.EACCES})
	bindErr := fmt.Errorf("binding 0.0.0.0:80: %w", &net.OpError{Op: "listen", Net: "tcp", Err: os.NewSyscallError("bind", syscall.EACCES)})
	missing := fmt.Errorf("loading capture: %w", &fs.PathError{Op: "open", Path: "/srv/c.pcap", Err: syscall.ENOENT})
	for _, tc := range []struct {
		name string
		err  error
		user string
		want string
	}{
		{"unreadable file", openErr, "nobody", `loading capture: open /srv/c.pcap: permission denied (after dropping root, sipnab runs as user "nobody" (--user): give that user access, or name another with --user)`},
		{"named user", openErr, "sipnab", `loading capture: open /srv/c.pcap: permission denied (after dropping root, sipnab runs as user "sipnab" (--user): give that user access, or name another with --user)`},
		{"low port", bindErr, "nobody", `binding 0.0.0.0:80: listen tcp: bind: permission denied (sipnab binds after dropping root to user "nobody" (--user), and ports below 1024 need root: bind a higher port, the default 8731, behind a proxy)`},
		{"no drop", openErr, "", openErr.Error()},
		{"not a permission error", missing, "nobody", missing.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := afterDrop(tc.err, tc.user)
			if got.Error() != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			if !errors.Is(got, tc.err) {
				t.Error("the original error is no longer wrapped")
			}
		})
	}
}
