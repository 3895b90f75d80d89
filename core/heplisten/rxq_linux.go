package heplisten

import (
	"encoding/binary"
	"net"

	"golang.org/x/sys/unix"
)

// The kernel drops a datagram that arrives while the socket's receive
// buffer is full; the listener never sees it. SO_RXQ_OVFL (socket(7)) makes
// the kernel attach its running count of such drops to every datagram
// received, so those losses are counted too (Stats.KernelDropped).

// rxqOOBLen is the control-message buffer a datagram read needs.
var rxqOOBLen = unix.CmsgSpace(4)

// enableDropCounter turns SO_RXQ_OVFL on; false when the kernel refuses.
func enableDropCounter(c *net.UDPConn) bool {
	rc, err := c.SyscallConn()
	if err != nil {
		return false
	}
	ok := false
	_ = rc.Control(func(fd uintptr) {
		ok = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RXQ_OVFL, 1) == nil
	})
	return ok
}

// dropCounter reads the kernel's drop count from a datagram's control
// messages.
func dropCounter(oob []byte) (uint32, bool) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_SOCKET && m.Header.Type == unix.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return binary.NativeEndian.Uint32(m.Data), true
		}
	}
	return 0, false
}
