//go:build !linux

package heplisten

import "net"

// rxqOOBLen is 0: no kernel drop counter outside Linux.
var rxqOOBLen = 0

func enableDropCounter(*net.UDPConn) bool { return false }

func dropCounter([]byte) (uint32, bool) { return 0, false }
