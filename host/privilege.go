package host

import (
	"fmt"
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
