package media

import "github.com/sipnab/sipnab/core/stun"

// SetNATEvidence attaches the capture's STUN/TURN/ICE evidence (core/stun)
// so that a reader of the stream store (core/analysis) can judge a
// dialog's media against it. The store itself never reads it.
func (st *Store) SetNATEvidence(t *stun.Tracker) {
	st.mu.Lock()
	st.nat = t
	st.mu.Unlock()
}

// NATEvidence returns the evidence SetNATEvidence attached (nil when none).
func (st *Store) NATEvidence() *stun.Tracker {
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.nat
}
