package media

import "github.com/sipnab/sipnab/core/packet"

// LockWriter takes the store's write lock for a run of ObserveLocked calls
// by the store's single writer (a file load routes thousands of packets a
// millisecond; one lock acquisition and one revision step per run instead of
// per packet). Readers wait for the run to end. Every LockWriter must be
// followed by UnlockWriter; OnSDP and Observe must not be called in between.
func (st *Store) LockWriter() { st.mu.Lock() }

// ObserveLocked is Observe for the writer holding the lock (LockWriter).
func (st *Store) ObserveLocked(p *packet.Packet) bool {
	if p == nil || p.Transport != packet.TransportUDP || len(p.Payload) == 0 {
		return false
	}
	ok := st.observe(p)
	if ok {
		st.dirty = true
	}
	return ok
}

// UnlockWriter ends a run of ObserveLocked calls. The revision moves once
// when any packet of the run was taken.
func (st *Store) UnlockWriter() {
	dirty := st.dirty
	st.dirty = false
	st.mu.Unlock()
	if dirty {
		st.rev.Add(1)
	}
}
