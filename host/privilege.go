package host

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/user"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-hclog"
)

// dropPrivileges switches to an unprivileged user before the listener binds
// when sipnab was started as root: the named user, or nobody. The default
// port 8731 is above 1024 for that reason.
//
// It is a variable so in-process tests, which must not drop the test
// binary's own privileges, can replace it.
var dropPrivileges = dropPrivilegesTo

func dropPrivilegesTo(name string, log hclog.Logger) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return usagef("dropping privileges: looking up user %q: %v", name, err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("dropping privileges: user %q has a non-numeric uid/gid", name)
	}
	if uid == 0 {
		return usagef("dropping privileges: --user %q is root; name an unprivileged user", name)
	}
	if err := syscall.Setgroups([]int{gid}); err != nil {
		return fmt.Errorf("dropping privileges: setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("dropping privileges: setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("dropping privileges: setuid: %w", err)
	}
	log.Info("dropped privileges", "user", name, "uid", uid, "gid", gid)
	return nil
}

// afterDrop names --user in a permission error met after the privilege
// drop (user is who sipnab runs as then; "" when it kept its rights): a
// capture file, the file root or a port the starting user could use is
// refused to the user sipnab became, and the operator must hear which.
func afterDrop(err error, user string) error {
	if err == nil || user == "" || !errors.Is(err, fs.ErrPermission) {
		return err
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "listen" {
		return fmt.Errorf("%w (sipnab binds after dropping root to user %q (--user), and ports below 1024 need root: bind a higher port, the default 8731, behind a proxy)", err, user)
	}
	return fmt.Errorf("%w (after dropping root, sipnab runs as user %q (--user): give that user access, or name another with --user)", err, user)
}
